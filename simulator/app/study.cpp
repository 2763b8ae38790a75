#include "app/study.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <utility>

#include "app/cli_errors.hpp"
#include "app/output_directory.hpp"
#include "app/training_study.hpp"
#include "core/files.hpp"
#include "core/sha256.hpp"
#include "core/units.hpp"
#include "montecarlo/replications.hpp"
#include "runtime/simulation.hpp"
#include "runtime/trace.hpp"
#include "workload/job_builder.hpp"
#include "workload/memory_estimate.hpp"

namespace prismsim {

ProgressBar::ProgressBar(const char* unit)
    : unit_(unit), enabled_(::isatty(STDERR_FILENO) != 0), start_(Clock::now()) {}

void ProgressBar::update(int done, int total) {
  if (!enabled_) return;
  const auto now = Clock::now();
  if (done < total && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? done / elapsed : 0;
  constexpr int kWidth = 30;
  const int filled = total > 0 ? kWidth * done / total : kWidth;
  const double left = rate > 0 ? (total - done) / rate : 0;
  std::fprintf(stderr, "\r[%s%s] %d/%d %s, %.2f %s/s, %.0f s left ",
               std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(kWidth - filled), ' ').c_str(), done, total, unit_,
               rate, unit_, left);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (drawn_) std::fprintf(stderr, "\n");
  drawn_ = false;
}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return fmt::format("signal {}", signal);
  }
}

void apply_deadlines(Scenario& scenario, const std::vector<std::string>& deadlines) {
  for (const std::string& text : deadlines) {
    std::string error;
    const auto deadline = units::parse_deadline(text, &error);
    if (!deadline) throw UsageError(fmt::format("--deadline '{}': {}", text, error));
    if (deadline->multiple > 0) {
      scenario.simulation.relative_deadlines.push_back(deadline->multiple);
    } else {
      scenario.simulation.deadlines_s.push_back(deadline->seconds);
    }
  }
}

void apply_run_options(const boost::program_options::variables_map& vm, int runs, long long seed,
                       int jobs, std::vector<std::string>& overrides) {
  if (vm.count("runs")) {
    if (runs < 1) throw UsageError("--runs must be at least 1");
    overrides.push_back(fmt::format("simulation.runs={}", runs));
  }
  if (vm.count("seed")) {
    if (seed < 0) throw UsageError("--seed must not be negative");
    overrides.push_back(fmt::format("simulation.seed={}", seed));
  }
  if (vm.count("jobs") && (jobs < 1 || jobs > 1024)) {
    throw UsageError("--jobs must be between 1 and 1024");
  }
}

int jobs_or_cpus(int jobs) {
  return jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::vector<std::string> provenance_command(const std::string& command, const std::string& input,
                                            const std::vector<std::string>& overrides) {
  std::vector<std::string> words = {"prismsim", command, input};
  for (const std::string& o : overrides) {
    words.push_back("--set");
    words.push_back(o);
  }
  return words;
}

namespace {

/// The trace recorder `options` ask for, or null.
std::unique_ptr<TraceRecorder> make_trace(const StudyOptions& options, const Scenario& scenario,
                                          const Job& job) {
  if (options.trace.empty()) return nullptr;
  std::vector<int> ranks;
  try {
    ranks = options.trace_ranks.empty()
                ? parse_rank_list(fmt::format("0-{}", std::min(job.rank_count(), 8) - 1),
                                  job.rank_count())
                : parse_rank_list(options.trace_ranks, job.rank_count());
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("--trace-ranks: {}", e.what()));
  }
  if (options.trace_format == TraceFormat::kineto) {
    std::error_code ec;
    std::filesystem::create_directories(options.trace, ec);
    if (ec || ::access(options.trace.c_str(), W_OK) != 0) {
      throw UsageError(fmt::format("cannot write to trace directory '{}'", options.trace));
    }
    remove_kineto_files(options.trace);  // an earlier trace may have had other ranks
  } else {
    try {
      AtomicFile probe(options.trace);  // the file itself is written once run 0 ends
    } catch (const std::runtime_error&) {
      throw UsageError(fmt::format("cannot write trace file '{}'", options.trace));
    }
  }
  return std::make_unique<TraceRecorder>(
      options.trace, std::move(ranks), options.trace_format, job, scenario.platform.gpus_per_node,
      TraceDevice{scenario.platform.gpu.model, scenario.platform.gpu.memory_bytes});
}

/// What `scenario`'s study was made from: the command, the overrides, the files read.
Provenance provenance_of(const Scenario& scenario, const StudyOptions& options) {
  Provenance p{options.command, scenario.overrides, scenario.inputs};
  if (!options.compare_to.empty()) {
    std::string reason;
    const auto text = read_file(options.compare_to, &reason);
    if (!text) {
      throw std::runtime_error(
          fmt::format("cannot read {}: {}", quoted_path(options.compare_to), reason));
    }
    p.inputs.push_back({options.compare_to, sha256_hex(*text)});
  }
  return p;
}

/// The slowest run of `results` and the median one (the lower middle of an even count).
std::vector<int> slowest_and_median(const StudyResults& results) {
  std::vector<std::pair<double, int>> by_time;
  for (const auto& run : results.runs) {
    if (run.ok) {
      by_time.emplace_back(std::accumulate(run.step_times_s.begin(), run.step_times_s.end(), 0.0),
                           run.run);
    }
  }
  std::sort(by_time.begin(), by_time.end());
  return {by_time.back().second, by_time[(by_time.size() - 1) / 2].second};
}

}  // namespace

StudyOutcome run_study(const Scenario& scenario, const StudyOptions& options,
                       const std::filesystem::path& out_dir) {
  check_memory(scenario);
  const Provenance provenance = provenance_of(scenario, options);  // reads --compare-to's file
  // Elastic sizes of a whole run each need their own engine: simulated before this one's.
  std::vector<StepTimeSet> elastic_sizes;
  if (scenario.train.active()) {
    int stopped = 0;
    elastic_sizes = simulate_elastic_sizes(scenario, std::max(1, options.jobs), &stopped);
    if (stopped != 0) {  // nothing simulated yet: empty outputs
      StudyOutcome outcome;
      outcome.stop_signal = stopped;
      outcome.results = gather_results(scenario, "", 0, {});
      outcome.results.provenance = provenance;
      outcome.written = {(out_dir / "summary.json").string(), (out_dir / "runs.csv").string()};
      write_file(out_dir / "summary.json", summary_json(outcome.results));
      write_file(out_dir / "runs.csv", runs_csv(outcome.results));
      return outcome;
    }
  }
  Topology topology(scenario.platform);
  const Job job = build_job(scenario, topology);
  Simulation simulation(scenario, job, std::move(topology));
  const std::unique_ptr<TraceRecorder> trace = make_trace(options, scenario, job);
  const int jobs = std::max(1, options.jobs);
  const SimulationSpec& sim = scenario.simulation;
  const VariationModel variation(scenario.variability, scenario, simulation.topology(), job);
  StudyOutcome outcome;
  int& stop_signal = outcome.stop_signal;
  // Each phase of the study is a list of replications, simulated in order.
  auto simulate = [&](const std::vector<Replication>& phase, int jobs_now) {
    ProgressBar progress;
    auto records = run_replications(simulation, phase, sim.seed, jobs_now, &stop_signal,
                                    [&](int done, int total) {
                                      if (options.show_progress) progress.update(done, total);
                                    });
    progress.finish();
    return records;
  };
  // The runs; the trace is of run 0.
  std::vector<Replication> runs = replications(sim.runs, &variation);
  runs.front().observer = trace.get();
  StudyResults& results = outcome.results;
  results = gather_results(scenario, simulation.collective_summary(), simulation.simulated_ranks(),
                           simulate(runs, jobs));
  results.provenance = provenance;
  if (!options.measured.empty()) compare_to_measured(results, options.compare_to, options.measured);
  // Without variation every run is the deterministic one.
  if (!variation.active() && results.job_time.count > 0) {
    add_relative_deadlines(results, results.job_time.mean);
  }
  if (variation.active()) {
    results.sources = scenario.variability.sources();
    // The same scenario without variation: deterministic, so one run says it all.
    if (stop_signal == 0) {
      const auto base = simulate(replications(1, nullptr), 1);
      if (!base.empty() && base.front().ok) {
        const auto [step, job_time] = summarize_runs(base, sim.steps);
        results.baseline = StudyResults::Baseline{step.mean, job_time.mean};
      }
    }
    if (results.baseline) add_relative_deadlines(results, results.baseline->job_time_s);
    // Attribution: the same runs without each source in turn (same seeds).
    for (const std::string& source :
         options.attribute ? results.sources : std::vector<std::string>{}) {
      if (stop_signal != 0) break;
      const VariationModel without(scenario.variability.without(source), scenario,
                                   simulation.topology(), job);
      const auto [step, job_time] =
          summarize_runs(simulate(replications(sim.runs, &without), jobs), sim.steps);
      if (stop_signal == 0) results.attribution.push_back({source, step, job_time});
    }
  }
  outcome.written = {(out_dir / "summary.json").string(), (out_dir / "runs.csv").string()};
  if (scenario.train.active() && stop_signal == 0) {
    results.training = run_training_study(scenario, results.runs, std::move(elastic_sizes), jobs);
    write_file(out_dir / "training.csv", training_csv(*results.training));
    outcome.written.push_back((out_dir / "training.csv").string());
  }
  if (options.breakdown && stop_signal == 0 && results.job_time.count > 0) {
    std::vector<Replication> chosen;
    for (int run : slowest_and_median(results)) chosen.push_back({run, &variation, true, nullptr});
    const auto records = simulate(chosen, std::min(jobs, 2));
    if (stop_signal == 0) {
      write_file(out_dir / "breakdown.csv", breakdown_csv(records, {"slowest", "median"}, scenario,
                                                          job, simulation.topology()));
      outcome.written.push_back((out_dir / "breakdown.csv").string());
    }
  }
  write_file(out_dir / "summary.json", summary_json(results));
  write_file(out_dir / "runs.csv", runs_csv(results));
  return outcome;
}

SliceOutcome run_slice(const Scenario& scenario, const std::vector<int>& runs, bool baseline,
                       int jobs, bool show_progress,
                       const std::function<void(const SliceOutcome&)>& on_built,
                       const std::function<void(const RunRecord&)>& on_record) {
  check_memory(scenario);
  Topology topology(scenario.platform);
  const Job job = build_job(scenario, topology);
  Simulation simulation(scenario, job, std::move(topology));
  const VariationModel variation(scenario.variability, scenario, simulation.topology(), job);
  SliceOutcome outcome;
  outcome.collectives = simulation.collective_summary();
  outcome.ranks_simulated = simulation.simulated_ranks();
  outcome.varied = variation.active();
  if (on_built) on_built(outcome);
  const SimulationSpec& sim = scenario.simulation;
  std::vector<Replication> phase;
  for (int run : runs) phase.push_back({run, &variation, false, nullptr});
  ProgressBar progress;
  std::vector<RunRecord> records = run_replications(
      simulation, phase, sim.seed, std::max(1, jobs), &outcome.stop_signal,
      [&](int done, int total) {
        if (show_progress) progress.update(done, total);
      },
      on_record);
  progress.finish();
  for (RunRecord& record : records) {
    // Cut short by the signal, a run is simulated again when the shard resumes.
    if (outcome.stop_signal == 0 || record.ok) outcome.runs.push_back(std::move(record));
  }
  if (baseline && outcome.varied && outcome.stop_signal == 0) {
    const auto base =
        run_replications(simulation, replications(1, nullptr), sim.seed, 1, &outcome.stop_signal);
    if (!base.empty() && base.front().ok && outcome.stop_signal == 0) {
      const auto [step, job_time] = summarize_runs(base, sim.steps);
      outcome.baseline = StudyResults::Baseline{step.mean, job_time.mean};
    }
  }
  return outcome;
}

int report_failed_runs(const StudyResults& results) {
  int status = kExitOk;
  for (const auto& run : results.runs) {
    if (!run.ok) {
      std::cerr << "prismsim: error: " << run.error << "\n";
      status = kExitRunFailed;
    }
  }
  return status;
}

StudyResults assemble_results(const Scenario& scenario, const SliceOutcome& gathered,
                              const std::string& compare_to, const std::vector<double>& measured,
                              const std::vector<std::string>& command) {
  // As run_study gathers them.
  StudyResults results =
      gather_results(scenario, gathered.collectives, gathered.ranks_simulated, gathered.runs);
  StudyOptions options;
  options.command = command;
  options.compare_to = compare_to;
  results.provenance = provenance_of(scenario, options);
  if (!measured.empty()) compare_to_measured(results, compare_to, measured);
  if (!gathered.varied && results.job_time.count > 0) {
    add_relative_deadlines(results, results.job_time.mean);
  }
  if (gathered.varied) {
    results.sources = scenario.variability.sources();
    results.baseline = gathered.baseline;
    if (results.baseline) add_relative_deadlines(results, results.baseline->job_time_s);
  }
  return results;
}

}  // namespace prismsim
