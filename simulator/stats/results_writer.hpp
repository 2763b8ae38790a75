#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "core/text.hpp"
#include "montecarlo/replications.hpp"
#include "stats/distribution.hpp"
#include "stats/training_report.hpp"

namespace prismsim {

/// What a study was made from (summary.json "provenance"): enough to run it again and to tell
/// whether an input changed. Holds no time or host name, so the same inputs give the same bytes.
struct Provenance {
  std::vector<std::string> command;    ///< the command line; argv[0] as its file name only
  std::vector<std::string> overrides;  ///< --set values (and --runs, --seed as such), in order
  std::vector<InputFile> inputs;       ///< the scenario and every file it includes, then others
};

/// Everything a study reports, gathered before writing.
struct StudyResults {
  const Scenario* scenario = nullptr;
  std::string collectives;  ///< algorithm/protocol/fidelity of the largest group's collective
  int ranks_simulated = 0;  ///< ranks with actors; the others share a representative's timeline
  std::vector<RunRecord> runs;
  DistributionSummary step_time;  ///< over every finished step of every run
  DistributionSummary job_time;   ///< sum of the steps of each run that finished them all
  /// 95% percentile-bootstrap intervals over runs of p50, p95 and p99 (steps, then jobs); empty
  /// without a finished step.
  std::vector<Interval> step_time_ci, job_time_ci;
  /// Per scenario deadline: the fraction of finished runs whose job time exceeds it; absolute
  /// deadlines first, then those relative to the deterministic job time.
  struct DeadlineMiss {
    double deadline_s = 0;
    double p_exceeds = 0;
    double multiple = 0;  ///< of the deterministic job time (0: an absolute deadline)
  };
  std::vector<DeadlineMiss> deadline_miss;
  /// Simulated step times against measured ones (--compare-to), when given.
  struct Comparison {
    std::string file;
    size_t measured = 0;
    double ks_distance = 0;
    double p50_error = 0, p95_error = 0, p99_error = 0;  ///< simulated / measured - 1
  };
  std::optional<Comparison> comparison;
  /// The sources of variation (empty: a deterministic scenario).
  std::vector<std::string> sources;
  /// The same scenario without variation, simulated once: mean step time and job time.
  struct Baseline {
    double step_time_s = 0;
    double job_time_s = 0;
  };
  std::optional<Baseline> baseline;
  /// --attribute: the study rerun with one source removed, same seeds.
  struct Attribution {
    std::string source;
    DistributionSummary step_time, job_time;
  };
  std::vector<Attribution> attribution;
  /// simulation.train: the whole run over these runs' step times (docs/training.md).
  std::optional<TrainingReport> training;
  /// Written when its command is known (the application fills it).
  Provenance provenance;
};

/// Writes `{count, mean, std, min, p50, p90, p95, p99, max[, ci: {p50, p95, p99}]}`.
void write_distribution(JsonWriter& j, const DistributionSummary& d,
                        const std::vector<Interval>& ci);

/// Summarises runs' step times and job times, as gather_results does.
std::pair<DistributionSummary, DistributionSummary> summarize_runs(
    const std::vector<RunRecord>& runs, int steps);

/// breakdown.csv: for each run of `runs` (labelled by `labels`), where each rank's compute stream
/// spent the run.
std::string breakdown_csv(const std::vector<RunRecord>& runs,
                          const std::vector<std::string>& labels, const Scenario& scenario,
                          const Job& job, const Topology& topology);

/// Compares the simulated step times of `results` with `measured` ones read from `file`.
void compare_to_measured(StudyResults& results, const std::string& file,
                         const std::vector<double>& measured);

/// Confidence level and resamples of the intervals in StudyResults.
constexpr double kConfidenceLevel = 0.95;
constexpr int kBootstrapResamples = 1000;

/// Pools every finished step of every run and summarises it.
StudyResults gather_results(const Scenario& scenario, std::string collectives, int ranks_simulated,
                            std::vector<RunRecord> runs);
/// Adds the scenario's relative deadlines, as multiples of `deterministic_job_s`.
void add_relative_deadlines(StudyResults& results, double deterministic_job_s);

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
