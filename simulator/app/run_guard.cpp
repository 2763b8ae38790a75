#include "app/run_guard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "app/cli_errors.hpp"
#include "core/units.hpp"
#include "platform/topology.hpp"
#include "workload/job_shape.hpp"

namespace prismsim {

RunEstimate estimate_scenario_run(const Scenario& scenario, int jobs) {
  const Topology topology(scenario.platform);
  return estimate_run(job_shape(scenario, topology), scenario.simulation.steps,
                      scenario.simulation.runs, jobs);
}

std::optional<double> available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    double kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

std::optional<std::string> run_refusal(const RunEstimate& estimate, const std::string& max_memory) {
  double limit_bytes = 0;
  std::string limit;
  if (!max_memory.empty()) {
    std::string error;
    const auto bytes = units::parse_bytes(max_memory, &error);
    if (!bytes || *bytes <= 0) {
      throw UsageError(
          fmt::format("--max-memory '{}': {}", max_memory, bytes ? "must be positive" : error));
    }
    limit_bytes = *bytes;
    limit = fmt::format("--max-memory is {}", memory_text(limit_bytes));
  } else if (const auto available = available_memory_bytes()) {
    limit_bytes = *available;
    limit = fmt::format("this machine has {} available (MemAvailable, /proc/meminfo)",
                        memory_text(limit_bytes));
  } else {
    return std::nullopt;
  }
  if (estimate.peak_bytes * kPeakMemoryMargin <= limit_bytes) return std::nullopt;
  return fmt::format(
      "refusing to run: expected {}; up to {} peak, but {}; simulate fewer GPUs "
      "(parallelism.gpus), fewer runs "
      "at once (--jobs) or a fabric where tensor-parallel symmetry applies, raise --max-memory, "
      "or pass --force to run anyway",
      estimate.str(), memory_text(estimate.peak_bytes * kPeakMemoryMargin), limit);
}

}  // namespace prismsim
