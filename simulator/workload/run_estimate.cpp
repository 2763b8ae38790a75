#include "workload/run_estimate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace prismsim {

namespace {

// Fitted to the whole commands of scripts/bench-estimate.sh (9 cases; docs/design.md, "Cost of a
// run"), least squares on relative error.
constexpr double kBaseBytes = 30.5e6;       ///< the process, SimGrid, the scenario
constexpr double kBytesPerRank = 4.10e3;    ///< per GPU: hosts, links, groups, per-rank tables
constexpr double kBytesPerActor = 17.6e3;   ///< per actor: stack pages, context, its state
constexpr double kBytesPerOp = sizeof(Op);  ///< not fitted: an op of a program held in memory
constexpr double kBaseSeconds = 0.158;
constexpr double kSecondsPerRank = 28.4e-6;  ///< building platform, groups and programs
/// Per event and per square root of the actors: SimGrid's cost per event grows with the actors
/// alive (docs/design.md, "Engine cost at scale": 8x the actors, 2.8x the cost per event).
constexpr double kSecondsPerEventPerRootActor = 0.181e-6;

}  // namespace

std::string memory_text(double bytes) {
  constexpr double kMiB = 1024.0 * 1024;
  if (bytes < 1024 * kMiB) return fmt::format("{:.0f} MiB", bytes / kMiB);
  return fmt::format("{:.2f} GiB", bytes / (1024 * kMiB));
}

std::string RunEstimate::str() const {
  return fmt::format("{} peak memory, {:.3g} s on one core, {:.3g} events", memory_text(peak_bytes),
                     seconds, events);
}

RunEstimate estimate_run(const RunShape& shape, int steps, int runs, int jobs) {
  const double at_once = std::max(1, std::min(runs, jobs));
  const double rounds = std::ceil(runs / at_once);  // runs one after the other per job
  const double per_step =
      static_cast<double>(shape.executions + shape.sends + shape.collective_calls);
  RunEstimate e;
  e.events = per_step * steps * runs;
  e.peak_bytes = kBaseBytes + kBytesPerRank * static_cast<double>(shape.ranks) +
                 kBytesPerOp * static_cast<double>(shape.ops) +
                 at_once * kBytesPerActor * static_cast<double>(shape.streams);
  e.seconds = kBaseSeconds + kSecondsPerRank * static_cast<double>(shape.ranks) +
              kSecondsPerEventPerRootActor * std::sqrt(static_cast<double>(shape.streams)) *
                  per_step * steps * rounds;
  return e;
}

}  // namespace prismsim
