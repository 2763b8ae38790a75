#pragma once

#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "montecarlo/replications.hpp"
#include "stats/distribution.hpp"

namespace prismsim {

/// Everything a study reports, gathered before writing.
struct StudyResults {
  const Scenario* scenario = nullptr;
  std::string collectives;  ///< algorithm/protocol/fidelity of the largest group's collective
  int ranks_simulated = 0;  ///< ranks with actors; the others share a representative's timeline
  std::vector<RunRecord> runs;
  DistributionSummary step_time;  ///< over every finished step of every run
};

/// Pools every finished step of every run and summarises it.
StudyResults gather_results(const Scenario& scenario, std::string collectives,
                            int ranks_simulated, std::vector<RunRecord> runs);

/// summary.json: identity of the study, SimGrid settings, step-time distribution.
std::string summary_json(const StudyResults& results);
/// runs.csv: one row per finished step of each run.
std::string runs_csv(const StudyResults& results);
/// Model flops of a transformer step (6 N tokens + attention, no recomputation) over the GPUs'
/// peak in the workload precision, for a step of `step_s` seconds.
double model_flops_utilization(const Scenario& scenario, double step_s);
/// A short human-readable summary for the terminal.
std::string summary_text(const StudyResults& results);

}  // namespace prismsim
