#pragma once

#include <optional>
#include <string>

#include "config/scenario.hpp"
#include "workload/run_estimate.hpp"

namespace prismsim {

/// The cost estimate of running `scenario` with `jobs` runs at once (workload/run_estimate).
RunEstimate estimate_scenario_run(const Scenario& scenario, int jobs);

/// MemAvailable of /proc/meminfo in bytes, or nothing when it cannot be read.
std::optional<double> available_memory_bytes();

/// Why `prismsim run` should not start: the estimate times kPeakMemoryMargin exceeds
/// `max_memory` (a size such as "8GiB"; empty: the machine's available memory); nothing when it
/// fits or cannot be judged.
/// Throws UsageError for a malformed `max_memory`.
std::optional<std::string> run_refusal(const RunEstimate& estimate, const std::string& max_memory);

}  // namespace prismsim
