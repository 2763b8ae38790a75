// prismsim-calibrate: fits a platform's collective parameters to nccl-tests measurements.
//
//   prismsim-calibrate --platform P.yaml [--set platform.PATH=VALUE]... [--op all_reduce]
//                      LOG... [--vtrain CSV:GPUS]...
//
// Prints the fitted parameters as a YAML fragment to put in the platform file, then, per log and
// size, the measured time, the fitted model's time and the error.

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "config/scenario_loader.hpp"
#include "core/diagnostics.hpp"
#include "nccl_fit.hpp"
#include "nccl_log.hpp"

namespace po = boost::program_options;
using namespace prismsim;

namespace {

std::string duration(double s) {
  if (s >= 1e-3) return fmt::format("{:.4g}ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.4g}us", s * 1e6);
  return fmt::format("{:.4g}ns", s * 1e9);
}

std::string fragment(const PlatformSpec& p, const std::vector<NcclLog>& logs) {
  std::string sources;
  for (const auto& log : logs) sources += fmt::format("\n#   {} ({} GPUs, {} sizes)", log.path, log.ranks, log.points.size());
  std::string out = fmt::format(
      "# Fitted by prismsim-calibrate from:{}\n"
      "node:\n"
      "  nvlink: {{efficiency: {:.4g}, latency: {}}}\n"
      "  nic: {{efficiency: {:.4g}, latency: {}}}\n"
      "collectives:\n"
      "  launch_latency: {}\n"
      "  local_copy_efficiency: {:.4g}\n"
      "  protocols:\n",
      sources, p.nvlink.efficiency, duration(p.nvlink.latency_s), p.nic.efficiency,
      duration(p.nic.latency_s), duration(p.collectives.launch_latency_s),
      p.collectives.local_copy_efficiency);
  for (const auto& protocol : p.collectives.protocols) {
    out += fmt::format("    - {{name: {}, bandwidth_efficiency: {:.4g}, base_latency: {}, "
                       "step_latency: {}{}}}\n", protocol.name, protocol.bandwidth_efficiency,
                       duration(protocol.base_latency_s), duration(protocol.step_latency_s),
                       protocol.streamed ? ", streamed: true" : "");
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string platform_path, op_name = "all_reduce";
  std::vector<std::string> overrides, logs_paths, vtrain;
  po::options_description named("options");
  named.add_options()("help,h", "show this help")("platform", po::value(&platform_path), "platform file")(
      "set", po::value(&overrides)->composing(), "override a platform value")(
      "op", po::value(&op_name), "collective the logs measure (default all_reduce)")(
      "vtrain", po::value(&vtrain)->composing(), "vTrain all-reduce CSV as FILE:GPUS")(
      "log", po::value(&logs_paths)->composing(), "nccl-tests log (also positional)");
  po::positional_options_description positional;
  positional.add("log", -1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(named).positional(positional).run(), vm);
    po::notify(vm);
    if (vm.count("help") || platform_path.empty() || (logs_paths.empty() && vtrain.empty())) {
      std::cout << "usage: prismsim-calibrate --platform P.yaml [--op OP] LOG... [--vtrain CSV:GPUS]...\n"
                << named;
      return vm.count("help") ? 0 : 2;
    }
    const auto op = parse_collective_op(op_name);
    if (!op) {
      std::cerr << "prismsim-calibrate: error: unknown collective '" << op_name << "'\n";
      return 2;
    }
    const PlatformSpec platform = load_platform(platform_path, overrides);
    std::vector<NcclLog> logs;
    for (const auto& path : logs_paths) logs.push_back(read_nccl_log(path));
    for (const auto& spec : vtrain) {
      const size_t colon = spec.rfind(':');
      if (colon == std::string::npos) {
        std::cerr << "prismsim-calibrate: error: --vtrain expects FILE:GPUS, got '" << spec << "'\n";
        return 2;
      }
      logs.push_back(read_vtrain_allreduce_csv(spec.substr(0, colon), std::stoi(spec.substr(colon + 1))));
    }
    for (const auto& log : logs) {
      if (log.ranks > platform.total_gpus()) {
        std::cerr << fmt::format("prismsim-calibrate: error: {} ran on {} GPUs; platform '{}' has {}\n",
                                 log.path, log.ranks, platform.name, platform.total_gpus());
        return 2;
      }
    }

    const PlatformSpec fitted = fit_collectives(platform, *op, logs);
    std::cout << fragment(fitted, logs) << "\n";
    for (const auto& log : logs) {
      const auto predicted = predict_log(fitted, *op, log);
      double worst_large = 0, worst_small = 0;
      std::cout << fmt::format("# {} ({} GPUs)\n#{:>14} {:>12} {:>12} {:>8}\n", log.path, log.ranks,
                               "size", "measured_us", "model_us", "error");
      for (size_t i = 0; i < predicted.size(); ++i) {
        const double error = predicted[i] / log.points[i].time_s - 1.0;
        double& worst = log.points[i].bytes >= kLargeMessageBytes ? worst_large : worst_small;
        worst = std::max(worst, std::fabs(error));
        std::cout << fmt::format(" {:>14} {:>12.2f} {:>12.2f} {:>+7.1f}%\n",
                                 static_cast<long long>(log.points[i].bytes),
                                 log.points[i].time_s * 1e6, predicted[i] * 1e6, error * 100);
      }
      std::cout << fmt::format("# worst error: {:.1f}% at 1 MiB and above, {:.1f}% below\n\n",
                               worst_large * 100, worst_small * 100);
    }
    return 0;
  } catch (const InputError& e) {
    for (const auto& d : e.diagnostics()) std::cerr << d.str() << "\n";
    return 2;
  } catch (const po::error& e) {
    std::cerr << "prismsim-calibrate: error: " << e.what() << "\n";
    return 2;
  }
}
