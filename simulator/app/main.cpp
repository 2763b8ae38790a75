#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "app/calibrate_command.hpp"
#include "app/cli_errors.hpp"
#include "app/collective_command.hpp"
#include "app/output_directory.hpp"
#include "app/run_guard.hpp"
#include "app/shard.hpp"
#include "app/study.hpp"
#include "app/sweep_command.hpp"
#include "config/scenario_loader.hpp"
#include "core/diagnostics.hpp"
#include "core/units.hpp"
#include "montecarlo/process_pool.hpp"
#include "stats/measured_samples.hpp"
#include "stats/results_writer.hpp"
#include "workload/memory_estimate.hpp"
#include "workload/transformer_job.hpp"

namespace po = boost::program_options;
using namespace prismsim;

namespace {

const char* const kUsage =
    "usage: prismsim run SCENARIO.yaml [--out DIR] [--runs N] [--seed S] [--jobs J]\n"
    "                    [--set PATH=VALUE]... [--deadline DEADLINE]... [--compare-to FILE]\n"
    "                    [--trace PATH [--trace-ranks 0-7,64] [--trace-format chrome|kineto]]\n"
    "                    [--attribute] [--breakdown] [--shard K/N]\n"
    "                    [--max-memory SIZE] [--force]\n"
    "       prismsim check SCENARIO.yaml [--set PATH=VALUE]...\n"
    "       prismsim sweep SWEEP.yaml [--out DIR] [--jobs J] [--runs N] [--seed S]\n"
    "                    [--set PATH=VALUE]... [--shard K/N] [--max-memory SIZE] [--force]\n"
    "                    (one scenario over a grid)\n"
    "       prismsim merge DIR... [--out OUT]  (the shards of a study into its outputs)\n"
    "       prismsim slurm SCENARIO|SWEEP --shards N [options]  (a Slurm job array and merge;\n"
    "                    prismsim slurm --help)\n"
    "       prismsim calibrate INPUT... [--out FILE.yaml] [options]\n"
    "                    (fit a variability section to traces; prismsim calibrate --help)\n"
    "       prismsim collective --platform PLATFORM.yaml --op OP --gpus N [options]\n"
    "                    (nccl-tests style sweep; prismsim collective --help)\n"
    "       prismsim --help | --version\n";

struct Options {
  std::string command;
  std::string scenario;
  std::string out = "out";
  std::vector<std::string> overrides;
  int jobs = 0;
  std::vector<std::string> deadlines;  ///< --deadline values, added to simulation.deadlines
  std::string compare_to;              ///< measured step times to compare with, or empty
  std::string trace;                   ///< Chrome trace of run 0, or empty
  std::string trace_ranks;             ///< ranks in the trace; default: the first 8
  std::string trace_format = "chrome";
  bool attribute = false;                 ///< rerun without each source of variation
  bool breakdown = false;                 ///< per-rank breakdown of the slowest and median runs
  std::vector<std::string> command_line;  ///< the whole command line, for provenance
  std::string shard;                      ///< --shard K/N, or empty
  std::string max_memory;  ///< refuse runs expected to need more; empty: available memory
  bool force = false;      ///< run even when the estimate exceeds the memory
};

/// What the scenario's predictions rest on, on stderr: a line per uncalibrated part.
void warn_uncalibrated(const Scenario& s) {
  for (const std::string& line : calibration_warnings(s.platform)) std::cerr << line << "\n";
}

int run_check(const Options& options) {
  const Scenario s = load_scenario(options.scenario, options.overrides);
  if (s.workload.kind == WorkloadKind::transformer) {
    const LayerContext c = layer_context(s);
    // Under LoRA, what is trained: the adapters of every layer (whole, before tensor parallelism).
    const std::string trained =
        s.workload.lora ? fmt::format(" ({:.4g}M trained: LoRA adapters of rank {})",
                                      adapter_parameters(c) * c.tp * c.model.layers / 1e6,
                                      s.workload.lora->rank)
                        : "";
    std::cout << fmt::format(
        "model: {:.4g}B parameters{}, {} microbatches of {} per replica "
        "per step\n",
        model_parameters(c) / 1e9, trained, microbatches_per_replica(s), s.workload.microbatch);
    for (const MemoryEstimate& m : estimate_memory(s)) {
      std::cout << fmt::format("memory per GPU, pipeline stage {}: {} of {:.1f} GiB\n", m.stage,
                               m.str(), s.platform.gpu.memory_bytes / (1024.0 * 1024 * 1024));
    }
    std::cout.flush();
    check_memory(s);
  }
  warn_uncalibrated(s);
  const RunShape shape = job_shape(s, Topology(s.platform));
  std::cout << fmt::format(
      "expected run (estimate, --jobs 1): {}; {} of {} ranks simulated, "
      "{} actors, {} ops\n",
      estimate_run(shape, s.simulation.steps, s.simulation.runs, 1).str(), shape.simulated_ranks,
      shape.ranks, shape.streams, shape.ops);
  std::cout << fmt::format("{}: ok: scenario {} on {} ({} GPUs of {}), workload {}\n",
                           options.scenario, s.name, s.platform.name, s.parallelism.ranks(),
                           s.platform.total_gpus(), s.workload.name);
  return kExitOk;
}

/// Whether the run is refused for its expected memory (the message is printed); never with
/// --force. Checked before the output directory is touched: its previous outputs stay.
bool refused_for_memory(const Scenario& scenario, const Options& options) {
  if (options.force) return false;
  const auto refusal =
      run_refusal(estimate_scenario_run(scenario, jobs_or_cpus(options.jobs)), options.max_memory);
  if (refusal) std::cerr << "prismsim: error: " << *refusal << "\n";
  return refusal.has_value();
}

/// `prismsim run --shard K/N`: the shard's runs into DIR/partial-result.txt, resuming from the
/// finished runs of an earlier, interrupted try.
int run_shard(const Options& options) {
  const ShardSpec shard = parse_shard(options.shard);
  if (!options.trace.empty() || options.breakdown || options.attribute) {
    throw UsageError(
        "--shard does not take --trace, --breakdown or --attribute (they need every "
        "run of the study in one process): run them unsharded");
  }
  const RunStudyInputs in =
      load_run_inputs(options.scenario, options.overrides, options.deadlines, options.compare_to);
  const Scenario& scenario = in.scenario;
  warn_uncalibrated(scenario);
  if (scenario.train.active()) {
    throw UsageError(
        "--shard does not take a scenario with simulation.train (the whole run needs "
        "every run's step times in one process): run it unsharded");
  }
  if (refused_for_memory(scenario, options)) return kExitBadInput;
  const SimulationSpec& sim = scenario.simulation;
  PartialResult partial = partial_identity("run", options.scenario, options.overrides, sim.seed,
                                           sim.runs, 1, shard, in.fingerprint);
  partial.deadlines = options.deadlines;
  partial.compare_to = options.compare_to;
  partial.command = options.command_line;
  const ShardStart start = start_shard(options.out, partial);
  if (start.complete) return kExitOk;
  const std::optional<PartialResult>& earlier = start.earlier;
  const std::filesystem::path out_dir(options.out);
  const std::string path = (out_dir / kPartialResultFile).string();
  PartialPoint done;
  if (earlier && earlier->point_results.count(0)) done = earlier->point_results.at(0);
  std::set<int> finished;
  for (const RunRecord& run : done.runs) finished.insert(run.run);
  std::vector<int> todo;
  for (int64_t run = partial.first; run < partial.end; ++run) {
    if (!finished.count(static_cast<int>(run))) todo.push_back(static_cast<int>(run));
  }
  const bool baseline = partial.first == 0 && partial.end > 0 && !done.baseline;
  int stop_signal = 0;
  if (!todo.empty() || (baseline && (done.varied || done.runs.empty()))) {
    SliceOutcome slice = run_slice(scenario, todo, baseline, jobs_or_cpus(options.jobs), true);
    stop_signal = slice.stop_signal;
    done.collectives = slice.collectives;
    done.ranks_simulated = slice.ranks_simulated;
    done.varied = slice.varied;
    if (slice.baseline) done.baseline = slice.baseline;
    for (RunRecord& run : slice.runs) done.runs.push_back(std::move(run));
    std::sort(done.runs.begin(), done.runs.end(),
              [](const RunRecord& x, const RunRecord& y) { return x.run < y.run; });
  }
  const int recorded = static_cast<int>(done.runs.size());
  if (partial.end > partial.first) partial.point_results[0] = std::move(done);
  partial.complete = stop_signal == 0;
  write_partial(out_dir, partial);
  std::cout << fmt::format(
      "shard {}: runs {}-{} of {}: {} finished{}; wrote {}\n", shard.str(), partial.first,
      partial.end - 1, sim.runs, recorded,
      earlier ? fmt::format(" ({} from the earlier try)", finished.size()) : "", path);
  if (stop_signal != 0) {
    std::cerr << fmt::format(
        "prismsim: interrupted by {}: shard {} kept its {} finished runs; "
        "run it again to finish it\n",
        signal_name(stop_signal), shard.str(), recorded);
    return exit_status_for_signal(stop_signal);
  }
  int status = kExitOk;
  if (partial.point_results.count(0)) {
    for (const auto& run : partial.point_results.at(0).runs) {
      if (!run.ok) {
        std::cerr << "prismsim: error: " << run.error << "\n";
        status = kExitRunFailed;
      }
    }
  }
  return status;
}

int run_command(const Options& options) {
  if (!options.shard.empty()) return run_shard(options);
  Scenario scenario = load_scenario(options.scenario, options.overrides);
  warn_uncalibrated(scenario);
  apply_deadlines(scenario, options.deadlines);
  if (options.attribute && scenario.variability.empty()) {
    throw UsageError("--attribute needs a scenario with a 'variability' section");
  }
  StudyOptions study;
  // Read before simulating: a bad file is bad input, found at once.
  if (!options.compare_to.empty()) {
    study.compare_to = options.compare_to;
    study.measured = read_measured_samples(options.compare_to);
  }
  study.jobs = jobs_or_cpus(options.jobs);
  if (refused_for_memory(scenario, options)) return kExitBadInput;
  const std::filesystem::path out_dir(options.out);
  make_writable_directory(out_dir, options.out);
  clear_previous_outputs(out_dir);  // never a mix of two studies (app/output_directory.hpp)
  study.trace = options.trace;
  study.trace_ranks = options.trace_ranks;
  study.trace_format = options.trace_format == "kineto" ? TraceFormat::kineto : TraceFormat::chrome;
  study.attribute = options.attribute;
  study.breakdown = options.breakdown;
  study.command = options.command_line;

  const StudyOutcome outcome = run_study(scenario, study, out_dir);
  const StudyResults& results = outcome.results;
  std::vector<std::string> written = outcome.written;
  if (!options.trace.empty()) written.push_back(options.trace);
  record_outputs(out_dir, written);
  std::cout << summary_text(results) << fmt::format("wrote {}\n", fmt::join(outcome.written, ", "));
  if (outcome.stop_signal != 0) {
    int finished = 0;
    for (const auto& run : results.runs) finished += run.ok;
    std::cerr << fmt::format(
        "prismsim: interrupted by {}: {} of {} runs finished; the outputs "
        "hold them and the steps of the runs cut short\n",
        signal_name(outcome.stop_signal), finished, scenario.simulation.runs);
    return exit_status_for_signal(outcome.stop_signal);
  }
  return report_failed_runs(results);
}

Options parse_command_line(int argc, char** argv, bool* handled) {
  Options options;
  int runs = 0;
  long long seed = -1;
  po::options_description named("options");
  named.add_options()("help,h", "show this help")("version", "show the version")(
      "out,o", po::value(&options.out), "output directory (default: out)")(
      "runs", po::value(&runs), "number of runs (overrides simulation.runs)")(
      "seed", po::value(&seed), "base seed (overrides simulation.seed)")(
      "jobs,j", po::value(&options.jobs), "runs simulated at once (default: CPU count)")(
      "set", po::value(&options.overrides)->composing(),
      "override a scenario value by its dotted path, e.g. --set parallelism.dp=64")(
      "compare-to", po::value(&options.compare_to),
      "measured step times (one per line, or a CSV step_time_s column): KS distance and "
      "percentile errors")(
      "deadline", po::value(&options.deadlines)->composing(),
      "report P(job time > DEADLINE): a duration (12h) or a multiple of the deterministic job "
      "time (1.1x); repeatable")(
      "trace", po::value(&options.trace),
      "write a Chrome/Perfetto timeline of run 0 to this JSON file (see --trace-format)")(
      "trace-ranks", po::value(&options.trace_ranks),
      "ranks in the timeline, e.g. 0-7,64 (default: 0-7)")(
      "trace-format", po::value(&options.trace_format),
      "chrome (default): one file; kineto: --trace is a directory of PyTorch-profiler-style "
      "files rankR.pt.trace.json, one per rank, for prismsim calibrate")(
      "attribute", po::bool_switch(&options.attribute),
      "rerun the runs without each source of variation (same seeds) and report what each adds "
      "to p50, p95 and p99")(
      "breakdown", po::bool_switch(&options.breakdown),
      "write breakdown.csv: where each rank's time went in the slowest and the median run")(
      "shard", po::value(&options.shard),
      "K/N: simulate only the K-th of N slices of the runs and write DIR/partial-result.txt "
      "for prismsim merge (README: Running a study on Slurm)")(
      "max-memory", po::value(&options.max_memory),
      "refuse a run whose estimated peak memory exceeds SIZE (e.g. 8GiB; default: the "
      "machine's available memory)")("force", po::bool_switch(&options.force),
                                     "run even when the estimate exceeds it");
  po::options_description hidden;
  hidden.add_options()("command", po::value(&options.command))("scenario",
                                                               po::value(&options.scenario));
  po::options_description all;
  all.add(named).add(hidden);
  po::positional_options_description positional;
  positional.add("command", 1).add("scenario", 1);

  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
  po::notify(vm);
  *handled = true;
  if (vm.count("help")) {
    std::cout << kUsage << "\n" << named;
    return options;
  }
  if (vm.count("version")) {
    std::cout << "prismsim " << PRISMSIM_VERSION << "\n";
    return options;
  }
  *handled = false;
  if (options.command != "run" && options.command != "check") {
    throw UsageError(options.command.empty()
                         ? std::string("missing command")
                         : fmt::format("unknown command '{}'", options.command));
  }
  if (options.scenario.empty()) throw UsageError("missing scenario file");
  apply_run_options(vm, runs, seed, options.jobs, options.overrides);
  if ((vm.count("trace-ranks") || vm.count("trace-format")) && options.trace.empty()) {
    throw UsageError("--trace-ranks and --trace-format need --trace PATH");
  }
  if (options.trace_format != "chrome" && options.trace_format != "kineto") {
    throw UsageError(fmt::format("unknown --trace-format '{}': expected chrome or kineto",
                                 options.trace_format));
  }
  return options;
}

}  // namespace

/// What provenance records of a run's or check's command line (see provenance_command).
std::vector<std::string> canonical_command_line(const Options& o) {
  std::vector<std::string> words = provenance_command(o.command, o.scenario, o.overrides);
  auto add = [&](const char* option, const std::string& value) {
    words.push_back(option);
    if (!value.empty()) words.push_back(value);
  };
  for (const std::string& d : o.deadlines) add("--deadline", d);
  if (!o.compare_to.empty()) add("--compare-to", o.compare_to);
  if (o.attribute) add("--attribute", "");
  if (o.breakdown) add("--breakdown", "");
  if (!o.trace.empty()) {
    add("--trace", o.trace);
    add("--trace-format", o.trace_format);
    if (!o.trace_ranks.empty()) add("--trace-ranks", o.trace_ranks);
  }
  return words;
}

namespace {

int dispatch(int argc, char** argv) {
  try {
    if (argc >= 2 && std::string(argv[1]) == "collective")
      return collective_command(argc - 1, argv + 1);
    if (argc >= 2 && std::string(argv[1]) == "sweep") return sweep_command(argc - 1, argv + 1);
    if (argc >= 2 && std::string(argv[1]) == "merge") return merge_command(argc - 1, argv + 1);
    if (argc >= 2 && std::string(argv[1]) == "slurm") return slurm_command(argc - 1, argv + 1);
    if (argc >= 2 && std::string(argv[1]) == "calibrate") {
      return calibrate_command(argc - 1, argv + 1);
    }
    bool handled = false;
    Options options = parse_command_line(argc, argv, &handled);
    if (handled) return kExitOk;
    options.command_line = canonical_command_line(options);
    return options.command == "check" ? run_check(options) : run_command(options);
  } catch (const InputError& e) {
    for (const auto& d : e.diagnostics()) std::cerr << d.str() << "\n";
    return kExitBadInput;
  } catch (const UsageError& e) {
    std::cerr << "prismsim: error: " << e.what() << "\n" << kUsage;
    return kExitBadInput;
  } catch (const po::error& e) {
    std::cerr << "prismsim: error: " << e.what() << "\n" << kUsage;
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "prismsim: error: " << e.what() << "\n";
    return kExitRunFailed;
  }
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
constexpr bool kSanitized = __has_feature(address_sanitizer);
#else
constexpr bool kSanitized = false;
#endif

}  // namespace

int main(int argc, char** argv) {
  const int status = dispatch(argc, argv);
  // Every output is written and closed by now. SimGrid destroys its engine (every host, link and
  // netpoint) in an exit handler: 1.0-1.1 s of a 131,072-GPU run's 7.7-8.5 s. Sanitized builds
  // exit normally, for the leak check.
  if (kSanitized) return status;
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(status);
}
