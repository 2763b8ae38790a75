#pragma once

#include <functional>
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "config/scenario.hpp"
#include "nccl_log.hpp"

namespace prismsim {

/// A platform parameter the collective calibration fits.
struct FitKnob {
  bool fraction;  ///< in (0, 1]; otherwise a latency in seconds
  std::function<double*(PlatformSpec&)> field;
};

/// The knobs: NVLink and NIC efficiency and latency, launch latency, local copy efficiency, and
/// per protocol (LL, LL128, Simple) its bandwidth efficiency (Simple's is 1), base and step
/// latency. Replaces the platform's protocols by those three and sets every knob to a fixed
/// starting value.
std::vector<FitKnob> collective_knobs(PlatformSpec& platform);

/// Messages of this size and above are held to the 10% accuracy target, smaller ones to 25%.
constexpr double kLargeMessageBytes = 1024.0 * 1024.0;
/// The accuracy target of a message of `bytes`: 0.10 or 0.25.
inline double nccl_tolerance(double bytes) { return bytes >= kLargeMessageBytes ? 0.10 : 0.25; }

/// The model's predicted time for each point of `log`, with `platform` as it is.
std::vector<double> predict_log(const PlatformSpec& platform, CollectiveOp op, const NcclLog& log);

/// Fits the knobs to the logs by minimising the mean sixth power of the log error of predicted
/// time in units of the size's tolerance (each log weighing the same); returns the fitted
/// platform. Deterministic.
PlatformSpec fit_collectives(PlatformSpec platform, CollectiveOp op,
                             const std::vector<NcclLog>& logs);

}  // namespace prismsim
