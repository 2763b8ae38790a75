#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "collectives/collective.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/plan.hpp"
#include "config/scenario.hpp"
#include "nccl_log.hpp"

namespace prismsim {

/// A platform parameter the collective calibration fits.
struct FitKnob {
  std::string name;  ///< its path in the platform file, e.g. "node.nvlink.efficiency"
  bool fraction;     ///< in (0, 1]; otherwise a latency in seconds
  double start;      ///< fixed starting value of the fit
  std::function<double*(PlatformSpec&)> field;
};

/// Every parameter the collective calibration can fit, by name: NVLink and NIC efficiency and
/// latency, launch latency, local copy efficiency, NVLS efficiency and latency, and per protocol
/// (LL, LL128, Simple) its bandwidth efficiency (Simple's is 1), base and step latency.
std::vector<std::string> collective_knob_names();

/// The platform as the fit sees it: its protocols replaced by LL, LL128 and Simple (streamed,
/// streamed, store-and-forward), keeping the platform's values of protocols of those names.
PlatformSpec with_fit_protocols(PlatformSpec platform);

/// The knobs `logs` determine on `platform` (from with_fit_protocols): NVLink and the protocols
/// with any multi-GPU log, the NIC with a multi-node one, local copy with a one-GPU one, NVLS
/// with an all-reduce (NVLS in a node, NVLS tree across nodes) on a platform with node.nvls;
/// the launch latency always. Knobs named in `fixed` are left out (they keep the platform's
/// values).
std::vector<FitKnob> collective_knobs(const PlatformSpec& platform,
                                      const std::vector<NcclLog>& logs,
                                      const std::vector<std::string>& fixed);

/// Messages of this size and above are held to the 10% accuracy target, smaller ones to 25%.
constexpr double kLargeMessageBytes = 1024.0 * 1024.0;
/// The accuracy target of a message of `bytes`: 0.10 or 0.25.
inline double nccl_tolerance(double bytes) { return bytes >= kLargeMessageBytes ? 0.10 : 0.25; }

/// Predicts one log for many parameter values: the plans' link loads, which depend on the group
/// and sizes only, are routed once and costed again for each platform's link parameters.
class LogPredictor {
 public:
  /// `platform` gives the structure (GPUs per node, fabric, channels); `log` must outlive this.
  LogPredictor(const PlatformSpec& platform, const NcclLog& log);
  /// As predict_log(platform, log), for `platform` of the same structure.
  std::vector<double> predict(const PlatformSpec& platform);

 private:
  const NcclLog* log_;
  PlatformSpec sized_;
  std::vector<int> gpus_;
  GroupLayout layout_;
  CollectivePlanner planner_;
  Algorithm algorithm_ = Algorithm::automatic;
  std::map<std::pair<size_t, Algorithm>, std::vector<PhaseLoads>> loads_;
};

/// The model's predicted time for each point of `log` (its op, and its algorithm where forced),
/// with `platform` as it is, on GPUs 0..ranks-1: nccl-tests' average of log.iterations calls
/// back to back (back_to_back_seconds).
std::vector<double> predict_log(const PlatformSpec& platform, const NcclLog& log);

/// Fits the knobs to the logs by minimising the mean sixth power of the log error of predicted
/// time in units of the size's tolerance (each log weighing the same); returns the fitted
/// platform (with_fit_protocols applied). Deterministic: the fit starts from fixed values.
PlatformSpec fit_collectives(const PlatformSpec& platform, const std::vector<NcclLog>& logs,
                             const std::vector<std::string>& fixed = {});

/// Worst bus-bandwidth errors of a prediction (measured time / predicted time - 1, in absolute
/// value) at 1 MiB and above and below; a side without sizes has count 0.
struct BusbwErrors {
  double large = 0, small = 0;
  int large_count = 0, small_count = 0;
};
BusbwErrors busbw_errors(const NcclLog& log, const std::vector<double>& predicted);

/// One fold of leave-one-group-out cross-validation: the fit on every other group, and its
/// predictions of the group left out.
struct HeldOutGroup {
  std::string group;
  std::vector<size_t> logs;                    ///< indices into the logs given
  std::vector<std::vector<double>> predicted;  ///< per held-out log
  PlatformSpec fitted;
};

/// Leave-one-group-out: `groups[i]` names log i's group (a GPU count, a node count, a system);
/// for each group, fits on the logs of the others and predicts its logs. Empty with fewer than
/// two groups.
std::vector<HeldOutGroup> leave_one_group_out(const PlatformSpec& platform,
                                              const std::vector<NcclLog>& logs,
                                              const std::vector<std::string>& groups,
                                              const std::vector<std::string>& fixed = {});

}  // namespace prismsim
