#include "app/calibrate_command.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "app/cli_errors.hpp"
#include "app/study.hpp"
#include "calibration_output.hpp"
#include "config/scenario_loader.hpp"
#include "core/files.hpp"
#include "sample_readers.hpp"
#include "timeline_calibration.hpp"
#include "variability_calibration.hpp"
#include "workload/job_builder.hpp"

namespace po = boost::program_options;

namespace prismsim {
namespace {

const char* const kUsage =
    "usage: prismsim calibrate INPUT... [--out FILE.yaml] [--plots DIR] [--report FILE.json]\n"
    "                          [--scenario SCENARIO.yaml [--set PATH=VALUE]...]\n"
    "                          [--class PATTERN=CLASS]... [--by-shape] [--by-stream]\n"
    "                          [--strip-templates]\n"
    "                          [--gpus-per-node N] [--min-samples N] [--max-ks D]\n"
    "  INPUT: a PyTorch profiler (Kineto) trace .json, a samples .csv\n"
    "         (name,duration_us[,gpu][,node][,step]), an op timeline .csv\n"
    "         (rank,step,optype,start_ts,duration[,stage][,dp_rank][,mb_id]) or an nccl-tests log\n"
    "         (any other name)\n";

const std::set<std::string> kClasses = {"gemm", "attention", "elementwise", "optimizer"};

struct CalibrateOptions {
  std::vector<std::string> inputs;
  std::string out = "variability.yaml";
  std::string plots;   ///< directory, or empty
  std::string report;  ///< JSON report file, or empty
  std::string scenario;
  std::vector<std::string> overrides;
  std::vector<std::string> classes;  ///< PATTERN=CLASS
  SignatureOptions signature;
  CalibrationOptions calibration;
};

CalibrateOptions parse_options(int argc, char** argv, bool* help, po::variables_map& vm) {
  CalibrateOptions o;
  int min_samples = static_cast<int>(o.calibration.min_samples);
  po::options_description named("options");
  named.add_options()("help,h", "show this help")(
      "out,o", po::value(&o.out), "the fitted variability section (default variability.yaml)")(
      "plots", po::value(&o.plots), "write CDF and QQ plots of every fit to this directory")(
      "report", po::value(&o.report), "write the report as JSON to this file")(
      "scenario", po::value(&o.scenario),
      "take kernel classes (and GPUs per node) from this scenario's own kernels")(
      "set", po::value(&o.overrides)->composing(), "override a value of --scenario")(
      "class", po::value(&o.classes)->composing(),
      "kernel name (or prefix ending in *) and its class: gemm, attention, elementwise, "
      "optimizer; tried before the scenario's and the built-in rules")(
      "by-shape", po::bool_switch(&o.signature.by_shape),
      "group kernels by name and input shapes (from the launching operator)")(
      "by-stream", po::bool_switch(&o.signature.by_stream), "group kernels by name and stream")(
      "strip-templates", po::bool_switch(&o.signature.strip_templates),
      "group kernels by name without template arguments (merges instantiations)")(
      "gpus-per-node", po::value(&o.signature.gpus_per_node),
      "GPUs per node, to place ranks on nodes (default 8, or the scenario's)")(
      "min-samples", po::value(&min_samples),
      "signatures with fewer samples are reported and skipped (default 30)")(
      "max-ks", po::value(&o.calibration.max_ks),
      "KS distance within which a family is accepted even when the test rejects it (default "
      "0.02); otherwise the empirical pool is kept");
  po::options_description hidden;
  hidden.add_options()("input", po::value(&o.inputs)->composing());
  po::options_description all;
  all.add(named).add(hidden);
  po::positional_options_description positional;
  positional.add("input", -1);
  po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << kUsage << "\n" << named;
    *help = true;
    return o;
  }
  if (o.inputs.empty()) throw UsageError("no input files");
  if (o.signature.gpus_per_node < 1) throw UsageError("--gpus-per-node must be at least 1");
  if (min_samples < 2) throw UsageError("--min-samples must be at least 2");
  o.calibration.min_samples = static_cast<size_t>(min_samples);
  if (!(o.calibration.max_ks >= 0 && o.calibration.max_ks <= 1)) {
    throw UsageError("--max-ks must be between 0 and 1");
  }
  if (!o.overrides.empty() && o.scenario.empty()) throw UsageError("--set needs --scenario");
  for (const std::string& file : {o.out, o.report}) {
    const std::filesystem::path dir = std::filesystem::path(file).parent_path();
    if (!file.empty() && ::access(dir.empty() ? "." : dir.c_str(), W_OK) != 0) {
      throw UsageError(
          fmt::format("cannot write '{}': no writable directory '{}'", file, dir.string()));
    }
  }
  for (const std::string& rule : o.classes) {
    const size_t equals = rule.find('=');
    if (equals == std::string::npos || equals == 0 || !kClasses.contains(rule.substr(equals + 1))) {
      throw UsageError(
          fmt::format("invalid --class '{}': expected PATTERN=CLASS with CLASS one of "
                      "gemm, attention, elementwise, optimizer",
                      rule));
    }
    o.signature.classes.emplace_back(rule.substr(0, equals), rule.substr(equals + 1));
  }
  return o;
}

/// The scenario's kernel names and their classes, as exact-name rules.
void add_scenario_classes(const std::string& path, const std::vector<std::string>& overrides,
                          bool gpus_per_node_given, SignatureOptions& options) {
  const Scenario scenario = load_scenario(path, overrides);
  if (!gpus_per_node_given) options.gpus_per_node = scenario.platform.gpus_per_node;
  const Topology topology(scenario.platform);
  const Job job = build_job(scenario, topology);
  std::set<std::string> seen;
  for (const Segment& segment : job.segments) {
    for (const Kernel& k : segment.kernels) {
      if (k.kernel_class == KernelClass::communication || !seen.insert(k.name).second) continue;
      options.classes.emplace_back(k.name, to_string(k.kernel_class));
    }
  }
}

std::string command_line(int argc, char** argv) {
  std::string out = "prismsim";
  for (int i = 0; i < argc; ++i) out += std::string(" ") + argv[i];
  return out;
}

/// Runs the plotting script on DIR/calibration.json; false when it fails.
bool draw_plots(const std::string& dir) {
  const char* script_env = std::getenv("PRISMSIM_PLOT_SCRIPT");
  const std::string script = script_env != nullptr ? script_env : PRISMSIM_PLOT_SCRIPT;
  const char* python_env = std::getenv("PRISMSIM_PYTHON");
  const std::string python = python_env != nullptr                     ? python_env
                             : ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3"
                                                                       : "python3";
  const std::string json = (std::filesystem::path(dir) / "calibration.json").string();
  std::cout.flush();
  const pid_t child = ::fork();
  if (child == 0) {
    ::execlp(python.c_str(), python.c_str(), script.c_str(), "calibration", json.c_str(), "--out",
             dir.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) < 0) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/// `prismsim calibrate` on op timelines (docs/calibration.md, "Timelines").
int calibrate_timelines_command(const CalibrateOptions& o, const std::string& command) {
  std::vector<Timeline> timelines;
  std::vector<Diagnostic> problems;
  for (const std::string& path : o.inputs) {
    try {
      timelines.push_back(read_timeline_csv(path));
    } catch (const InputError& e) {
      problems.insert(problems.end(), e.diagnostics().begin(), e.diagnostics().end());
    }
  }
  if (!problems.empty()) throw InputError(problems);
  TimelineOptions options;
  options.fit = o.calibration;
  options.gpus_per_node = static_cast<size_t>(o.signature.gpus_per_node);
  const TimelineCalibration c = calibrate_timelines(timelines, options);
  write_timeline_section(c, o.out, command);
  std::cout << timeline_report(c) << fmt::format("\nwrote {}\n", o.out);
  if (!o.report.empty()) {
    write_file(o.report, timeline_json(c));
    std::cout << fmt::format("wrote {}\n", o.report);
  }
  return kExitOk;
}

}  // namespace

int calibrate_command(int argc, char** argv) {
  bool help = false;
  po::variables_map vm;
  CalibrateOptions o = parse_options(argc, argv, &help, vm);
  if (help) return kExitOk;
  if (!o.scenario.empty()) {
    add_scenario_classes(o.scenario, o.overrides, vm.count("gpus-per-node") > 0, o.signature);
  }
  const size_t timelines =
      static_cast<size_t>(std::count_if(o.inputs.begin(), o.inputs.end(), [](const std::string& p) {
        return std::filesystem::path(p).extension() == ".csv" && is_timeline_csv(p);
      }));
  if (timelines > 0) {
    if (timelines != o.inputs.size()) {
      throw UsageError("op timelines cannot be mixed with other inputs: calibrate them apart");
    }
    if (!o.plots.empty() || !o.scenario.empty()) {
      throw UsageError("--plots and --scenario are not used with op timelines: use --report");
    }
    return calibrate_timelines_command(o, command_line(argc, argv));
  }
  const SampleSet set = read_calibration_inputs(o.inputs, o.signature);
  const Calibration calibration = calibrate(set, o.calibration);
  write_variability_section(calibration, set, o.out, command_line(argc, argv));
  std::cout << calibration_report(calibration, set);
  std::cout << fmt::format("\nwrote {}\n", o.out);
  const std::string json =
      o.report.empty() && o.plots.empty() ? "" : calibration_json(calibration, set);
  if (!o.report.empty()) {
    write_file(o.report, json);
    std::cout << fmt::format("wrote {}\n", o.report);
  }
  if (!o.plots.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.plots, ec);
    if (ec) throw UsageError(fmt::format("cannot create plot directory '{}'", o.plots));
    write_file(std::filesystem::path(o.plots) / "calibration.json", json);
    if (!draw_plots(o.plots)) {
      std::cerr << fmt::format(
          "prismsim: error: the plotting script failed; {}/calibration.json "
          "is kept (python3 scripts/plot.py calibration {}/calibration.json)\n",
          o.plots, o.plots);
      return kExitRunFailed;
    }
  }
  return kExitOk;
}

}  // namespace prismsim
