#pragma once

#include <boost/program_options/variables_map.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "runtime/trace.hpp"
#include "stats/results_writer.hpp"

namespace prismsim {

/// Exit codes of the commands.
constexpr int kExitOk = 0;
constexpr int kExitRunFailed = 1;  ///< a simulation failed
constexpr int kExitBadInput = 2;   ///< bad input or usage
// A stop signal (SIGINT, SIGTERM, SIGHUP) exits with 128 + its number: exit_status_for_signal.

/// "SIGTERM" for the stop signals, else "signal N".
std::string signal_name(int signal);

/// Items done, rate and time left on one stderr line, redrawn at most every 0.2 s; silent when
/// stderr is not a terminal (logs and pipes get no control characters).
class ProgressBar {
 public:
  /// `unit` names what is counted, in the plural ("runs", "points").
  explicit ProgressBar(const char* unit = "runs");

  void update(int done, int total);
  /// Ends the line, if one was drawn.
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  const char* unit_;
  bool enabled_;
  bool drawn_ = false;
  Clock::time_point start_, last_{};
};

/// How to run a study, beyond what its scenario says.
struct StudyOptions {
  int jobs = 1;                  ///< replications simulated at once, each in its own process
  bool show_progress = true;     ///< a progress line on stderr when stderr is a terminal
  std::string compare_to;        ///< file of measured step times (named in the summary), or empty
  std::vector<double> measured;  ///< its step times in seconds, read before the study
  std::string trace;             ///< Chrome trace of run 0 (a directory for Kineto), or empty
  TraceFormat trace_format = TraceFormat::chrome;
  std::string trace_ranks;  ///< ranks in the trace (e.g. "0-7,64"); default: the first 8
  bool attribute = false;   ///< rerun the runs without each source of variation
  bool breakdown = false;   ///< per-rank breakdown of the slowest and the median run
  /// The command line, for summary.json's provenance (argv[0] as its file name); empty: none.
  std::vector<std::string> command;
};

/// Runs at once for `--jobs J`: J when given (> 0), else the number of CPUs.
int jobs_or_cpus(int jobs);

/// The command line as provenance records it, in a canonical form that says what decides the
/// results and nothing else: `prismsim COMMAND INPUT --set O...` (--runs and --seed as their
/// simulation.* overrides); the caller appends the options that change results (--deadline,
/// --compare-to, ...). --out, --jobs and --shard are left out, so a study sharded by
/// `prismsim slurm` and merged records what the same study run on one machine does.
std::vector<std::string> provenance_command(const std::string& command, const std::string& input,
                                            const std::vector<std::string>& overrides);

/// What a study produced.
struct StudyOutcome {
  StudyResults results;              ///< refers to the scenario given to run_study
  std::vector<std::string> written;  ///< the files written, in order
  int stop_signal = 0;  ///< a stop signal ended the runs early (results hold what finished), or 0
};

/// Simulates `scenario`'s runs (then, with variation, the no-variation baseline, and what
/// `options` ask: attribution, breakdown, trace) and writes summary.json and runs.csv (and
/// breakdown.csv) into `out_dir`, which must exist. Builds the SimGrid engine: call it at most
/// once per process. Throws InputError when the scenario does not fit in memory, UsageError for
/// bad --trace-ranks or an unwritable trace file, std::runtime_error when a file cannot be
/// written.
StudyOutcome run_study(const Scenario& scenario, const StudyOptions& options,
                       const std::filesystem::path& out_dir);

/// What a slice of a study's runs produced (a shard's part, app/shard.hpp).
struct SliceOutcome {
  std::string collectives;  ///< as StudyResults::collectives
  int ranks_simulated = 0;
  bool varied = false;          ///< the scenario has variation (the study reports a baseline)
  std::vector<RunRecord> runs;  ///< in the order asked; when stopped, only the finished ones
  std::optional<StudyResults::Baseline> baseline;  ///< when asked for and `varied`
  int stop_signal = 0;                             ///< a stop signal ended the slice early, or 0
};

/// Simulates runs `runs` of `scenario` (same seeds as in the whole study) and, with `baseline`,
/// the no-variation run that run_study reports; writes nothing. Builds the SimGrid engine: at
/// most once per process. Throws InputError when the scenario does not fit in memory.
/// `on_built` gets the outcome's description (collectives, ranks, variation) before any run,
/// `on_record` each finished run as it comes (a sweep point's process streams them).
SliceOutcome run_slice(const Scenario& scenario, const std::vector<int>& runs, bool baseline,
                       int jobs, bool show_progress,
                       const std::function<void(const SliceOutcome&)>& on_built = {},
                       const std::function<void(const RunRecord&)>& on_record = {});

/// Prints why each failed run of `results` failed (stderr); kExitRunFailed if any did, else 0.
int report_failed_runs(const StudyResults& results);

/// The results run_study reports for the runs of a whole study gathered from slices: `runs` in
/// run order, with the collectives, simulated ranks, variation and baseline of the slices;
/// `command` is the shards' command line as provenance records it.
StudyResults assemble_results(const Scenario& scenario, const SliceOutcome& gathered,
                              const std::string& compare_to, const std::vector<double>& measured,
                              const std::vector<std::string>& command);

/// Adds `run --deadline` values (durations, or multiples of the deterministic job time: "1.1x")
/// to the scenario's deadlines; throws UsageError naming a bad one.
void apply_deadlines(Scenario& scenario, const std::vector<std::string>& deadlines);

/// Checks the --runs, --seed and --jobs that `vm` holds (parsed into `runs`, `seed`, `jobs`, as
/// `run` and `sweep` take them) and appends --runs and --seed to `overrides` as
/// simulation.runs / simulation.seed. Throws UsageError.
void apply_run_options(const boost::program_options::variables_map& vm, int runs, long long seed,
                       int jobs, std::vector<std::string>& overrides);

}  // namespace prismsim
