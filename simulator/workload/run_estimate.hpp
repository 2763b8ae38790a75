#pragma once

#include <string>

#include "workload/job_shape.hpp"

namespace prismsim {

/// What a `prismsim run` of a job is expected to cost on the machines prismsim was measured on
/// (the cost model and how it was fitted: docs/design.md, "Cost of a run").
struct RunEstimate {
  double peak_bytes = 0;  ///< peak resident memory of the whole command
  double seconds = 0;     ///< CPU time of the whole command, one core per job
  double events = 0;      ///< executions, sends and collective calls simulated, all runs

  /// "2.10 GiB peak memory, 35 s on one core, 1.2e+06 events".
  std::string str() const;
};

/// What `run` assumes at most of the peak memory, as a multiple of the estimate: the largest
/// under-estimate of the cost model's fit (0.71 of the measured peak) rounded up.
inline constexpr double kPeakMemoryMargin = 1.4;

/// `bytes` for people: "41 MiB" below a GiB, else "2.10 GiB".
std::string memory_text(double bytes);

/// The estimate for `steps` steps of `runs` runs of a job of `shape`, `jobs` runs at once.
RunEstimate estimate_run(const RunShape& shape, int steps, int runs, int jobs);

}  // namespace prismsim
