// prismsim-calibrate-compute: fits a platform's compute model.
//
//   prismsim-calibrate-compute --platform P.yaml --gemm TABLE --gpu NAME --precision FP8
//                              [--hbm TABLE]
// fits the GEMM model (efficiency, size dependence, latency) to measured GEMM rates and the
// memory-bound efficiency to measured HBM bandwidth, with leave-one-shape-out errors;
//
//   prismsim-calibrate-compute --scenario S.yaml [--set PATH=VALUE]... --fit CSV...
//                              [--check CSV]... [--rows]
// fits GEMM efficiency and size dependence, memory efficiency and the host's time per kernel to
// measured training iterations: each CSV row (vTrain's ground-truth layout) is the scenario with
// the row's model and parallelism set; its step is timed in closed form
// (workload/step_estimate.hpp). Prints the fitted sections, then the mean absolute percentage
// error on every file.

#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "config/scenario.hpp"
#include "config/scenario_loader.hpp"
#include "core/diagnostics.hpp"
#include "core/units.hpp"
#include "microbenchmarks.hpp"
#include "nelder_mead.hpp"
#include "stats/distribution.hpp"
#include "vtrain_runs.hpp"
#include "workload/step_estimate.hpp"
#include "workload/transformer_job.hpp"

namespace po = boost::program_options;
using namespace prismsim;

namespace {

/// A measured row with its closed-form model.
struct Case {
  MeasuredIteration measured;
  std::unique_ptr<StepEstimate> estimate;
};

std::vector<Case> load_cases(const std::string& scenario_path,
                             const std::vector<std::string>& overrides, const std::string& csv) {
  std::vector<Case> cases;
  for (const MeasuredIteration& row : read_vtrain_iterations(csv)) {
    std::vector<std::string> all = overrides;
    for (const auto& o : row.overrides()) all.push_back(o);
    const Scenario s = load_scenario(scenario_path, all);
    const Topology topology(s.platform);
    cases.push_back({row, std::make_unique<StepEstimate>(s, topology)});
  }
  return cases;
}

/// The parameters a fit may free, by name.
const std::vector<std::string> kParameters = {
    "gemm_efficiency",      "gemm_half_size", "gemm_latency",      "memory_efficiency",
    "attention_efficiency", "kernel_launch",  "collective_launch", "step"};

/// What a fit changes: the GPU's compute model and the host's costs.
struct Model {
  GpuSpec gpu;
  HostSpec host;
  Precision gemm_precision = Precision::bf16;
  AttentionBackend attention_backend = AttentionBackend::cudnn;  ///< the rows' fused attention
};

/// `value` of parameter `name` in `model`.
double& parameter(Model& m, const std::string& name) {
  ComputeModelSpec& c = m.gpu.compute;
  if (name == "gemm_efficiency") {
    return ComputeModelSpec::entry_or(c.gemm_efficiency_by_precision, m.gemm_precision,
                                      c.gemm_efficiency);
  }
  if (name == "gemm_half_size") return c.gemm_half_size;
  if (name == "gemm_latency") return c.gemm_latency_s;
  if (name == "memory_efficiency") return c.memory_efficiency;
  if (name == "attention_efficiency") {
    return ComputeModelSpec::entry_or(c.attention_efficiency_by_backend, m.attention_backend,
                                      c.attention_efficiency);
  }
  if (name == "kernel_launch") return m.host.kernel_launch_s;
  if (name == "collective_launch") return m.host.collective_launch_s;
  return m.host.step_s;
}
bool is_fraction(const std::string& name) { return name.find("efficiency") != std::string::npos; }

/// Parameters in unconstrained space: logit of fractions, log of positive values (1 us for
/// times, so that a start of 0 s is a small time).
double to_free(const std::string& name, double v) {
  if (is_fraction(name)) return std::log(std::min(v, 0.999) / (1 - std::min(v, 0.999)));
  return std::log(std::max(v, 1e-9) * (name == "gemm_half_size" ? 1 : 1e6));
}
double from_free(const std::string& name, double x) {
  if (is_fraction(name)) return 1 / (1 + std::exp(-x));
  return std::exp(x) / (name == "gemm_half_size" ? 1 : 1e6);
}

/// A group of rows left out together: one model size (hidden, layers).
using GroupKey = std::pair<int, int>;
GroupKey group_of(const MeasuredIteration& m) { return {m.hidden, m.layers}; }

/// Mean squared log error of each file's rows (those whose group is not `left_out`), averaged
/// over the files: a small file of large runs counts as much as a large file of small ones.
double loss(const std::vector<std::vector<Case>>& files, size_t fitted_files, const Model& m,
            const GroupKey* left_out) {
  double total = 0;
  size_t used = 0;
  for (size_t f = 0; f < fitted_files; ++f) {
    double sum = 0;
    size_t n = 0;
    for (const Case& c : files[f]) {
      if (left_out != nullptr && group_of(c.measured) == *left_out) continue;
      const double r = std::log(c.estimate->seconds(m.gpu, m.host) / c.measured.seconds);
      sum += r * r;
      ++n;
    }
    if (n > 0) {
      total += sum / static_cast<double>(n);
      ++used;
    }
  }
  return used > 0 ? total / static_cast<double>(used) : 0;
}

/// Fits the `free` parameters of `base` (Nelder-Mead from the base values and from two fixed
/// perturbations of them: the same measurements always give the same fit).
Model fit_model(const std::vector<std::vector<Case>>& files, size_t fitted_files, const Model& base,
                const std::vector<std::string>& free, const GroupKey* left_out) {
  auto model_at = [&](const std::vector<double>& x) {
    Model m = base;
    for (size_t i = 0; i < free.size(); ++i) parameter(m, free[i]) = from_free(free[i], x[i]);
    return m;
  };
  auto objective = [&](const std::vector<double>& x) {
    return loss(files, fitted_files, model_at(x), left_out);
  };
  std::vector<double> best;
  double best_value = INFINITY;
  for (double shift : {0.0, -1.0, 1.0}) {
    std::vector<double> start;
    Model m = base;
    for (const std::string& name : free) start.push_back(to_free(name, parameter(m, name)) + shift);
    auto x = nelder_mead(objective, start, 0.5, 2000, 1e-12);
    x = nelder_mead(objective, x, 0.1, 2000, 1e-14);
    if (const double value = objective(x); value < best_value) {
      best_value = value;
      best = x;
    }
  }
  return model_at(best);
}

/// Mean absolute percentage error of `cases` under `m` (those of `group` only, when given).
double mape(const std::vector<Case>& cases, const Model& m, const GroupKey* group = nullptr) {
  double sum = 0;
  size_t n = 0;
  for (const Case& c : cases) {
    if (group != nullptr && group_of(c.measured) != *group) continue;
    sum += std::abs(c.estimate->seconds(m.gpu, m.host) / c.measured.seconds - 1);
    ++n;
  }
  return n == 0 ? 0 : 100 * sum / static_cast<double>(n);
}

/// Spearman's correlation of measured and predicted times over the layouts of each run shape
/// (one model, GPU count and global batch) of `group` with at least three layouts: the
/// smallest and the mean.
std::pair<double, double> rank_agreement(const std::vector<Case>& cases, const Model& m,
                                         const GroupKey& group) {
  std::map<std::tuple<int, int, int>, std::pair<std::vector<double>, std::vector<double>>> shapes;
  for (const Case& c : cases) {
    if (group_of(c.measured) != group) continue;
    auto& [measured, predicted] =
        shapes[{c.measured.gpus, c.measured.global_batch, c.measured.sequence}];
    measured.push_back(c.measured.seconds);
    predicted.push_back(c.estimate->seconds(m.gpu, m.host));
  }
  double worst = 1, sum = 0;
  int n = 0;
  for (const auto& [shape, times] : shapes) {
    if (times.first.size() < 3) continue;
    const double r = spearman_correlation(times.first, times.second);
    worst = std::min(worst, r);
    sum += r;
    ++n;
  }
  return {n > 0 ? worst : NAN, n > 0 ? sum / n : NAN};
}

std::string describe(const Model& m, const std::vector<std::string>& free) {
  std::string out;
  for (const std::string& name : free) {
    Model copy = m;
    const double v = parameter(copy, name);
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name,
                       is_fraction(name) || name == "gemm_half_size"
                           ? fmt::format("{:.4g}", v)
                           : fmt::format("{:.4g}us", v * 1e6));
  }
  return out;
}

/// The microbenchmark mode: GEMM and HBM tables of one GPU against `platform`'s peaks.
int fit_microbenchmarks(const std::string& platform_path, const std::string& gemm_path,
                        const std::string& gpu_name, const std::string& precision_name,
                        const std::string& hbm_path) {
  const PlatformSpec platform = load_platform(platform_path, {});
  const GpuSpec& gpu = platform.gpu;
  std::string lower = precision_name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::vector<std::string> names = {"fp32", "tf32", "bf16", "fp16", "fp8"};
  const auto it = std::find(names.begin(), names.end(), lower);
  if (it == names.end())
    throw std::invalid_argument(fmt::format("unknown --precision '{}'", precision_name));
  const auto precision = static_cast<Precision>(it - names.begin());
  if (!gpu.peak_flops.count(precision)) {
    throw std::invalid_argument(
        fmt::format("platform '{}' gives no {} peak", platform.name, lower));
  }
  double bandwidth = gpu.memory_bandwidth_Bps;
  std::string hbm_line;
  if (!hbm_path.empty()) {
    // Triad (read two arrays, write one) stands for the element-wise kernels of training.
    for (const BandwidthSample& b : read_hbm_table(hbm_path, gpu_name)) {
      if (b.kernel == "Triad") bandwidth = b.bytes_per_s;
    }
    hbm_line = fmt::format("    memory_efficiency: {:.4g}   # Triad {:.3g} TB/s of {:.3g}\n",
                           bandwidth / gpu.memory_bandwidth_Bps, bandwidth / 1e12,
                           gpu.memory_bandwidth_Bps / 1e12);
  }
  const auto samples = read_gemm_table(gemm_path, gpu_name, precision_name);
  const int operand_bytes = bytes_per_element(precision);
  const GemmFit fit = fit_gemm(
      samples, {gpu.peak_flops.at(precision), bandwidth, static_cast<double>(operand_bytes), 2});
  std::cout << fmt::format(
      "# prismsim-calibrate-compute: {} {} GEMM shapes of {} ({}), peak {:.4g} TFLOP/s\n"
      "# GEMM rate error: in sample mean {:.1f}%, worst {:.1f}%; leaving each shape out mean "
      "{:.1f}%, worst {:.1f}%\n"
      "gpu:\n  compute:\n    gemm_efficiency: {{{}: {:.4g}}}\n    gemm_half_size: {:.4g}\n"
      "    gemm_latency: {:.4g}us\n{}",
      samples.size(), precision_name, gpu_name, gemm_path, gpu.peak_flops.at(precision) / 1e12,
      100 * fit.mean_error, 100 * fit.worst_error, 100 * fit.loo_mean_error,
      100 * fit.loo_worst_error, lower, fit.model.efficiency, fit.model.half_size,
      fit.model.latency_s * 1e6, hbm_line);
  for (const GemmSample& g : samples) {
    const double seconds = gemm_model_seconds(
        fit.model, {gpu.peak_flops.at(precision), bandwidth, static_cast<double>(operand_bytes), 2},
        g.m, g.n, g.k);
    std::cout << fmt::format("# {:>7} x {:>6} x {:>6}: measured {:7.1f} TFLOP/s, model {:7.1f}\n",
                             g.m, g.n, g.k, g.flops_per_s / 1e12,
                             2 * g.m * g.n * g.k / seconds / 1e12);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario_path;
  std::vector<std::string> overrides, fit_paths, check_paths;
  std::string platform_path, gemm_path, hbm_path, gpu_name, precision_name;
  std::vector<std::string> free;
  po::options_description named("options");
  named.add_options()("help,h", "show this help")("scenario", po::value(&scenario_path),
                                                  "scenario whose platform is fitted (required)")(
      "set", po::value(&overrides)->composing(), "override a scenario value, PATH=VALUE")(
      "fit", po::value(&fit_paths)->composing(), "measured iterations to fit (vTrain CSV)")(
      "check", po::value(&check_paths)->composing(), "measured iterations only to check")(
      "rows", "print every row: measured and predicted time")(
      "free", po::value(&free)->composing(),
      "a parameter to fit (repeatable): gemm_efficiency, gemm_half_size, gemm_latency, "
      "memory_efficiency, attention_efficiency, kernel_launch, collective_launch, step (default: "
      "kernel_launch, collective_launch and step)")(
      "logo", "also fit leaving each model size out and predict it")(
      "platform", po::value(&platform_path), "microbenchmarks: the platform of the GPU")(
      "gemm", po::value(&gemm_path), "microbenchmarks: table of measured GEMM rates")(
      "hbm", po::value(&hbm_path), "microbenchmarks: table of measured HBM bandwidths")(
      "gpu", po::value(&gpu_name), "microbenchmarks: the GPU's name in the tables")(
      "precision", po::value(&precision_name), "microbenchmarks: the GEMMs' precision (FP8, FP16)");
  po::positional_options_description positional;
  positional.add("fit", -1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(named).positional(positional).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << "usage: prismsim-calibrate-compute --scenario S.yaml [--set P=V]... CSV... "
                   "[--check CSV]... [--rows]\n\n"
                << named;
      return 0;
    }
    if (!gemm_path.empty()) {
      if (platform_path.empty() || gpu_name.empty() || precision_name.empty()) {
        std::cerr << "prismsim-calibrate-compute: error: --gemm needs --platform, --gpu and "
                     "--precision\n";
        return 2;
      }
      return fit_microbenchmarks(platform_path, gemm_path, gpu_name, precision_name, hbm_path);
    }
    if (scenario_path.empty() || fit_paths.empty()) {
      std::cerr << "prismsim-calibrate-compute: error: --scenario and at least one CSV to fit "
                   "are required\n";
      return 2;
    }
    const Scenario base = load_scenario(scenario_path, overrides);
    if (free.empty()) free = {"kernel_launch", "collective_launch", "step"};
    std::vector<Case> fit;
    std::vector<std::vector<Case>> files;
    std::vector<std::string> names;
    for (const auto& path : fit_paths) {
      files.push_back(load_cases(scenario_path, overrides, path));
      names.push_back(path + " (fitted)");
    }
    for (const auto& path : check_paths) {
      files.push_back(load_cases(scenario_path, overrides, path));
      names.push_back(path + " (checked)");
    }
    for (const std::string& name : free) {
      if (std::find(kParameters.begin(), kParameters.end(), name) == kParameters.end()) {
        throw std::invalid_argument(fmt::format("unknown --free parameter '{}'", name));
      }
    }
    const Model initial{base.platform.gpu, base.host,
                        base.workload.fp8_gemms ? Precision::fp8 : base.workload.precision,
                        layer_context(base).attention_backend};
    const Model fitted = fit_model(files, fit_paths.size(), initial, free, nullptr);
    size_t rows = 0;
    for (size_t f = 0; f < fit_paths.size(); ++f) rows += files[f].size();
    std::cout << fmt::format(
        "# Fitted by prismsim-calibrate-compute to {} measured iterations: "
        "{}\n\n",
        rows, describe(fitted, free));
    for (size_t f = 0; f < files.size(); ++f) {
      if (vm.count("rows")) {
        for (const Case& c : files[f]) {
          const double predicted = c.estimate->seconds(fitted.gpu, fitted.host);
          std::cout << fmt::format("{}:{}: measured {:.1f} ms, closed form {:.1f} ms, {:+.1f}%\n",
                                   names[f], c.measured.line, c.measured.seconds * 1e3,
                                   predicted * 1e3, 100 * (predicted / c.measured.seconds - 1));
        }
      }
      std::cout << fmt::format("{}: {} rows, closed-form MAPE {:.2f}%\n", names[f], files[f].size(),
                               mape(files[f], fitted));
    }
    if (vm.count("logo")) {
      // Leave one model size out: fit on every other, predict it.
      std::cout << "\n# leave one model size out (closed form): file, hidden, layers, rows, "
                   "in-sample MAPE, left-out MAPE, Spearman worst/mean in-sample and left out, "
                   "the left-out fit\n";
      std::set<std::pair<size_t, GroupKey>> groups;
      for (size_t f = 0; f < fit_paths.size(); ++f) {
        for (const Case& c : files[f]) groups.insert({f, group_of(c.measured)});
      }
      for (const auto& [f, group] : groups) {
        const Model out = fit_model(files, fit_paths.size(), initial, free, &group);
        const auto in_rank = rank_agreement(files[f], fitted, group);
        const auto out_rank = rank_agreement(files[f], out, group);
        size_t n = 0;
        for (const Case& c : files[f]) n += group_of(c.measured) == group;
        std::cout << fmt::format(
            "logo {} h{} L{}: {} rows, MAPE {:.2f}% -> {:.2f}%, Spearman {:.3f}/{:.3f} -> "
            "{:.3f}/{:.3f}; {}\n",
            fit_paths[f], group.first, group.second, n, mape(files[f], fitted, &group),
            mape(files[f], out, &group), in_rank.first, in_rank.second, out_rank.first,
            out_rank.second, describe(out, free));
      }
    }
    return 0;
  } catch (const InputError& e) {
    for (const auto& d : e.diagnostics()) std::cerr << d.str() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "prismsim-calibrate-compute: error: " << e.what() << "\n";
    return 2;
  } catch (const po::error& e) {
    std::cerr << "prismsim-calibrate-compute: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "prismsim-calibrate-compute: error: " << e.what() << "\n";
    return 1;
  }
}
