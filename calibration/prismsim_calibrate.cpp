// prismsim-calibrate: fits a platform's collective parameters to nccl-tests measurements.
//
//   prismsim-calibrate --platform P.yaml [--set PATH=VALUE]... [--op OP] [--fix PARAM]...
//                      LOG[@GPUS[/NODES]]... [--vtrain CSV:GPUS]... [--busbw CSV[@KEY=VALUE]...]...
//                      [--predict LOG[@GPUS[/NODES]]]... [--groups gpus|nodes|file]
//                      [--no-cross-validation]
//
// Prints the fitted parameters as a YAML fragment to put in the platform file (with its
// calibration.collectives provenance line), then, per log and size, the measured and modelled
// time and bus bandwidth, then each log's worst errors: in sample, left out of the fit (its group
// of logs left out, the others fitted: leave-one-group-out) and, for --predict logs, never fitted.

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "config/scenario_loader.hpp"
#include "core/diagnostics.hpp"
#include "core/text.hpp"
#include "nccl_fit.hpp"
#include "nccl_log.hpp"

namespace po = boost::program_options;
using namespace prismsim;

namespace {

struct UsageProblem {
  std::string message;
};

std::string duration(double s) {
  if (s >= 1e-3) return fmt::format("{:.4g}ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.4g}us", s * 1e6);
  return fmt::format("{:.4g}ns", s * 1e9);
}

std::string percent(double fraction) { return fmt::format("{:.1f}%", fraction * 100); }

/// "12.3% / 4.5%" (from 1 MiB / below), "-" for a side without sizes.
std::string worst_pair(const BusbwErrors& e) {
  return fmt::format("{} / {}", e.large_count ? percent(e.large) : "-",
                     e.small_count ? percent(e.small) : "-");
}

/// Worst errors over several logs.
BusbwErrors combine(BusbwErrors a, const BusbwErrors& b) {
  a.large = std::max(a.large, b.large);
  a.small = std::max(a.small, b.small);
  a.large_count += b.large_count;
  a.small_count += b.small_count;
  return a;
}

/// A log given as PATH[@GPUS[/NODES]]: the shape for logs without "# Rank" lines.
NcclLog read_log_spec(const std::string& spec, CollectiveOp fallback_op, bool op_given) {
  const size_t at = spec.rfind('@');
  const std::string path = at == std::string::npos ? spec : spec.substr(0, at);
  NcclLog log = read_nccl_log(path);
  log.op = op_given ? fallback_op : op_from_file_name(path, fallback_op);
  if (at == std::string::npos) return log;
  const std::string shape = spec.substr(at + 1);
  const size_t slash = shape.find('/');
  const auto gpus = parse_number(shape.substr(0, slash));
  const auto nodes = slash == std::string::npos ? std::optional<double>(1.0)
                                                : parse_number(shape.substr(slash + 1));
  if (!gpus || !nodes || !is_whole_in(*gpus, 1, 1e7) || !is_whole_in(*nodes, 1, *gpus)) {
    throw UsageProblem{
        fmt::format("'{}': expected LOG@GPUS or LOG@GPUS/NODES with whole positive "
                    "counts",
                    spec)};
  }
  const bool has_rank_lines = !log.rank_hosts.empty();
  if (has_rank_lines && (log.ranks != *gpus || log.nodes != *nodes)) {
    throw UsageProblem{fmt::format("'{}': the log's Rank lines say {} GPUs on {} nodes", spec,
                                   log.ranks, log.nodes)};
  }
  log.ranks = static_cast<int>(*gpus);
  log.nodes = static_cast<int>(*nodes);
  return log;
}

std::string fragment(const PlatformSpec& p, const std::vector<FitKnob>& knobs,
                     const std::string& provenance) {
  std::string fitted;
  for (const auto& knob : knobs) fitted += (fitted.empty() ? "" : ", ") + knob.name;
  std::string out = fmt::format(
      "# Fitted by prismsim-calibrate: {}\n"
      "node:\n"
      "  nvlink: {{efficiency: {:.4g}, latency: {}}}\n"
      "  nic: {{efficiency: {:.4g}, latency: {}}}\n"
      "collectives:\n"
      "  launch_latency: {}\n"
      "  local_copy_efficiency: {:.4g}\n",
      fitted, p.nvlink.efficiency, duration(p.nvlink.latency_s), p.nic.efficiency,
      duration(p.nic.latency_s), duration(p.collectives.launch_latency_s),
      p.collectives.local_copy_efficiency);
  if (p.nvls) {
    out += fmt::format(
        "  nvls: {{efficiency: {:.4g}, latency: {}}}\n",
        p.collectives.nvls_efficiency > 0 ? p.collectives.nvls_efficiency : p.nvlink.efficiency,
        duration(p.collectives.nvls.base_latency_s));
  }
  out += "  protocols:\n";
  for (const auto& protocol : p.collectives.protocols) {
    out += fmt::format(
        "    - {{name: {}, bandwidth_efficiency: {:.4g}, base_latency: {}, "
        "step_latency: {}{}}}\n",
        protocol.name, protocol.bandwidth_efficiency, duration(protocol.base_latency_s),
        duration(protocol.step_latency_s), protocol.streamed ? ", streamed: true" : "");
  }
  out += fmt::format("calibration:\n  collectives: \"{}\"\n", provenance);
  return out;
}

/// Prints a log's sizes: measured and modelled time and bus bandwidth, and the busbw error.
void print_rows(const NcclLog& log, const std::vector<double>& predicted, const char* what) {
  const double factor = log.ranks > 1 ? bus_factor(log.op, log.ranks) : 1.0;
  std::cout << fmt::format(
      "# {} ({} {} on {} GPUs, {} nodes; {})\n#{:>14} {:>12} {:>12} {:>10} "
      "{:>10} {:>8}\n",
      log.path, to_string(log.op),
      log.algorithm == Algorithm::automatic ? "auto" : to_string(log.algorithm), log.ranks,
      log.nodes, what, "size", "measured_us", "model_us", "busbw", "model_bw", "error");
  for (size_t i = 0; i < predicted.size(); ++i) {
    const auto& point = log.points[i];
    std::cout << fmt::format(" {:>14} {:>12.2f} {:>12.2f} {:>10.2f} {:>10.2f} {:>+7.1f}%\n",
                             static_cast<long long>(point.bytes), point.time_s * 1e6,
                             predicted[i] * 1e6, point.bytes / point.time_s / 1e9 * factor,
                             point.bytes / predicted[i] / 1e9 * factor,
                             (point.time_s / predicted[i] - 1.0) * 100);
  }
  std::cout << "\n";
}

/// A log's name for the provenance line: its folder and file ("nccl-tests-azure-a100/x.log"),
/// with a table's filters.
std::string short_name(const std::string& path) {
  const size_t at = path.find('@');
  const std::string file = path.substr(0, at);
  const size_t slash = file.rfind('/');
  const size_t folder =
      slash == std::string::npos || slash == 0 ? std::string::npos : file.rfind('/', slash - 1);
  return path.substr(folder == std::string::npos ? 0 : folder + 1);
}

/// Short names of `logs`, a table's logs of several GPU counts as one: "t.csv@k=v (4, 8 GPUs)".
std::string names_of(const std::vector<NcclLog>& logs) {
  std::vector<std::pair<std::string, std::string>> names;  // base, GPU counts
  for (const auto& log : logs) {
    std::string name = short_name(log.path);
    const std::string suffix = fmt::format(" ({} GPUs)", log.ranks);
    const bool table = name.size() > suffix.size() &&
                       name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    if (!table) {
      names.emplace_back(name, "");
      continue;
    }
    name.erase(name.size() - suffix.size());
    auto it =
        std::find_if(names.begin(), names.end(), [&](const auto& n) { return n.first == name; });
    if (it == names.end()) {
      names.emplace_back(name, std::to_string(log.ranks));
    } else {
      it->second += ", " + std::to_string(log.ranks);
    }
  }
  std::string out;
  for (const auto& [name, counts] : names) {
    out += (out.empty() ? "" : ", ") + name + (counts.empty() ? "" : " (" + counts + " GPUs)");
  }
  return out;
}

std::string group_of(const NcclLog& log, const std::string& by) {
  if (by == "nodes") return fmt::format("{} nodes", log.nodes);
  if (by == "file") return log.path;
  if (by == "source") return log.path.substr(0, log.path.find('@'));
  return fmt::format("{} GPUs", log.ranks);
}

}  // namespace

int main(int argc, char** argv) {
  std::string platform_path, op_name, groups_by = "gpus";
  std::vector<std::string> overrides, logs_paths, vtrain, busbw, predict_paths, predict_busbw,
      fixed;
  bool no_cross_validation = false;
  po::options_description named("options");
  named.add_options()("help,h", "show this help")("platform", po::value(&platform_path),
                                                  "platform file")(
      "set", po::value(&overrides)->composing(), "override a platform value")(
      "op", po::value(&op_name),
      "collective the logs measure (default: from each file name, "
      "else all_reduce)")("vtrain", po::value(&vtrain)->composing(),
                          "vTrain all-reduce CSV as FILE:GPUS")(
      "busbw", po::value(&busbw)->composing(),
      "bus-bandwidth table as CSV[@KEY=VALUE]... (KEY: a column to match, size, busbw, gpus, "
      "algo)")("predict", po::value(&predict_paths)->composing(),
               "nccl-tests log to predict only, never fitted (LOG[@GPUS[/NODES]])")(
      "predict-busbw", po::value(&predict_busbw)->composing(),
      "bus-bandwidth table to predict only, never fitted (as --busbw)")(
      "fix", po::value(&fixed)->composing(), "keep this parameter at the platform's value")(
      "groups", po::value(&groups_by),
      "leave-one-group-out by gpus (default), nodes, file or source (a table's file)")(
      "no-cross-validation", po::bool_switch(&no_cross_validation),
      "skip the leave-one-group-out fits")(
      "log", po::value(&logs_paths)->composing(),
      "nccl-tests log, LOG[@GPUS[/NODES]] for logs without Rank lines (also positional)");
  po::positional_options_description positional;
  positional.add("log", -1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(named).positional(positional).run(), vm);
    po::notify(vm);
    if (vm.count("help") || platform_path.empty() ||
        (logs_paths.empty() && vtrain.empty() && busbw.empty())) {
      std::cout << "usage: prismsim-calibrate --platform P.yaml [--op OP] [--fix PARAM]... "
                   "LOG[@GPUS[/NODES]]... [--vtrain CSV:GPUS]... [--busbw CSV[@KEY=VALUE]...]... "
                   "[--predict LOG]... [--groups gpus|nodes|file]\n"
                << named;
      return vm.count("help") ? 0 : 2;
    }
    const bool op_given = !op_name.empty();
    const auto op = parse_collective_op(op_given ? op_name : "all_reduce");
    if (!op) throw UsageProblem{fmt::format("unknown collective '{}'", op_name)};
    if (groups_by != "gpus" && groups_by != "nodes" && groups_by != "file" &&
        groups_by != "source") {
      throw UsageProblem{
          fmt::format("--groups expects gpus, nodes, file or source, got '{}'", groups_by)};
    }
    const auto names = collective_knob_names();
    for (const std::string& name : fixed) {
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        const std::string near = closest_match(name, names);
        throw UsageProblem{
            fmt::format("--fix: unknown parameter '{}'{}", name,
                        near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near))};
      }
    }
    const PlatformSpec platform = load_platform(platform_path, overrides);
    std::vector<NcclLog> logs, held_out;
    for (const auto& spec : logs_paths) logs.push_back(read_log_spec(spec, *op, op_given));
    for (const auto& spec : predict_paths) held_out.push_back(read_log_spec(spec, *op, op_given));
    for (const auto& spec : vtrain) {
      const size_t colon = spec.rfind(':');
      const auto gpus =
          colon == std::string::npos ? std::nullopt : parse_number(spec.substr(colon + 1));
      if (!gpus || !is_whole_in(*gpus, 1, 1e7)) {
        throw UsageProblem{
            fmt::format("--vtrain expects FILE:GPUS with a whole GPU count, got "
                        "'{}'",
                        spec)};
      }
      logs.push_back(read_vtrain_allreduce_csv(spec.substr(0, colon), static_cast<int>(*gpus)));
    }
    const auto read_tables = [&](const std::vector<std::string>& specs,
                                 std::vector<NcclLog>& into) {
      for (const auto& spec : specs) {
        std::vector<std::string> parts = split_fields(spec, '@');
        const std::string path = parts.front();
        parts.erase(parts.begin());
        Algorithm forced = Algorithm::automatic;
        std::vector<std::string> filters;
        for (const std::string& part : parts) {
          if (part.rfind("algo=", 0) == 0) {
            const auto a = parse_algorithm(part.substr(5));
            if (!a) {
              throw UsageProblem{fmt::format("'{}': unknown algorithm '{}'", spec, part.substr(5))};
            }
            forced = *a;
          }
          filters.push_back(part);
        }
        std::vector<std::string> table_filters;
        for (const auto& f : filters) {
          if (f.rfind("algo=", 0) != 0) table_filters.push_back(f);
        }
        for (NcclLog& log : read_busbw_table(path, table_filters, *op)) {
          log.algorithm = forced;
          if (forced != Algorithm::automatic) {
            log.path = log.path.substr(0, log.path.rfind(" (")) + "@algo=" + to_string(forced) +
                       log.path.substr(log.path.rfind(" ("));
          }
          into.push_back(std::move(log));
        }
      }
    };
    read_tables(busbw, logs);
    read_tables(predict_busbw, held_out);
    for (const auto* set : {&logs, &held_out}) {
      for (const auto& log : *set) {
        if (log.ranks > platform.total_gpus()) {
          throw UsageProblem{fmt::format("{} ran on {} GPUs; platform '{}' has {}", log.path,
                                         log.ranks, platform.name, platform.total_gpus())};
        }
      }
    }

    const PlatformSpec fitted = fit_collectives(platform, logs, fixed);
    const auto knobs = collective_knobs(with_fit_protocols(platform), logs, fixed);
    std::vector<std::vector<double>> in_sample;
    BusbwErrors in_all;
    for (const auto& log : logs) {
      in_sample.push_back(predict_log(fitted, log));
      in_all = combine(in_all, busbw_errors(log, in_sample.back()));
    }
    std::vector<std::string> groups;
    for (const auto& log : logs) groups.push_back(group_of(log, groups_by));
    std::vector<HeldOutGroup> folds;
    if (!no_cross_validation) folds = leave_one_group_out(platform, logs, groups, fixed);
    std::vector<BusbwErrors> logo(logs.size());
    BusbwErrors logo_all;
    for (const auto& fold : folds) {
      for (size_t k = 0; k < fold.logs.size(); ++k) {
        logo[fold.logs[k]] = busbw_errors(logs[fold.logs[k]], fold.predicted[k]);
        logo_all = combine(logo_all, logo[fold.logs[k]]);
      }
    }
    std::vector<std::vector<double>> predicted_out;
    BusbwErrors out_all;
    for (const auto& log : held_out) {
      predicted_out.push_back(predict_log(fitted, log));
      out_all = combine(out_all, busbw_errors(log, predicted_out.back()));
    }

    const std::string sources = names_of(logs);
    std::string fixed_text;
    for (const auto& name : fixed) fixed_text += (fixed_text.empty() ? "" : ", ") + name;
    std::string unfitted;  // neither fitted nor fixed: the logs do not determine them
    for (const auto& name : names) {
      const bool fitted_knob =
          std::any_of(knobs.begin(), knobs.end(), [&](const FitKnob& k) { return k.name == name; });
      const bool fixed_knob = std::find(fixed.begin(), fixed.end(), name) != fixed.end();
      if (fitted_knob || fixed_knob ||
          (!platform.nvls && name.find(".nvls.") != std::string::npos)) {
        continue;
      }
      unfitted += (unfitted.empty() ? "" : ", ") + name;
    }
    std::string provenance = fmt::format(
        "prismsim-calibrate on {}{}{}; worst busbw error from 1 MiB / below: in sample {}", sources,
        fixed_text.empty() ? "" : fmt::format(" (kept from the platform file: {})", fixed_text),
        unfitted.empty() ? ""
                         : fmt::format(" (not determined by these logs, as in the platform "
                                       "file: {})",
                                       unfitted),
        worst_pair(in_all));
    if (!folds.empty()) {
      provenance += fmt::format(", leave-one-{}-out {}",
                                groups_by == "gpus"    ? "GPU-count"
                                : groups_by == "nodes" ? "node-count"
                                                       : groups_by,
                                worst_pair(logo_all));
    }
    if (!held_out.empty()) {
      const std::string predicted_names = names_of(held_out);
      provenance +=
          fmt::format(", predicted (not fitted) {}: {}", predicted_names, worst_pair(out_all));
    }
    std::cout << fragment(fitted, knobs, provenance) << "\n";

    for (size_t i = 0; i < logs.size(); ++i) print_rows(logs[i], in_sample[i], "fitted");
    for (size_t i = 0; i < held_out.size(); ++i) {
      print_rows(held_out[i], predicted_out[i], "predicted, not fitted");
    }
    std::cout << "# worst busbw error, from 1 MiB / below 1 MiB (targets 10% / 25%)\n";
    std::cout << fmt::format("#{:<64} {:>8} {:>17} {:>17}\n", " log", "group", "in sample",
                             folds.empty() ? "(no LOGO)" : "left out");
    for (size_t i = 0; i < logs.size(); ++i) {
      std::cout << fmt::format(" {:<64} {:>8} {:>17} {:>17}\n", logs[i].path, groups[i],
                               worst_pair(busbw_errors(logs[i], in_sample[i])),
                               folds.empty() ? "-" : worst_pair(logo[i]));
    }
    for (size_t i = 0; i < held_out.size(); ++i) {
      std::cout << fmt::format(" {:<64} {:>8} {:>17} {:>17}\n", held_out[i].path, "predict", "-",
                               worst_pair(busbw_errors(held_out[i], predicted_out[i])));
    }
    if (folds.empty() && !no_cross_validation) {
      std::cout << "# no leave-one-group-out: the fitted logs form one group\n";
    }
    return 0;
  } catch (const InputError& e) {
    for (const auto& d : e.diagnostics()) std::cerr << d.str() << "\n";
    return 2;
  } catch (const UsageProblem& e) {
    std::cerr << "prismsim-calibrate: error: " << e.message << "\n";
    return 2;
  } catch (const po::error& e) {
    std::cerr << "prismsim-calibrate: error: " << e.what() << "\n";
    return 2;
  }
}
