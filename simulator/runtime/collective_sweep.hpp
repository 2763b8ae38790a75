#pragma once

#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "config/scenario.hpp"
#include "runtime/collective_runtime.hpp"

namespace prismsim {

/// One size of a collective sweep.
struct SweepRow {
  double bytes = 0;
  double seconds = 0;  ///< simulated: from a common start to the last member's finish
  Algorithm algorithm = Algorithm::ring;
  std::string protocol;
  bool coarse = false;
};

/// Simulates `op` over GPUs 0..gpus-1 of `platform` once per size, one size after the other, in
/// this process's SimGrid engine (call once per process), as nccl-tests does on real hardware.
std::vector<SweepRow> sweep_collective(const PlatformSpec& platform, const EngineSpec& engine,
                                       CollectiveOp op, int gpus, const std::vector<double>& sizes,
                                       Algorithm algorithm, EventCounters* counters = nullptr);

}  // namespace prismsim
