#include "app/collective_command.hpp"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "app/cli_errors.hpp"
#include "collectives/cost_model.hpp"
#include "config/scenario_loader.hpp"
#include "core/files.hpp"
#include "runtime/collective_sweep.hpp"
#include "stats/nccl_table.hpp"

namespace po = boost::program_options;

namespace prismsim {
namespace {

/// nccl-tests' size syntax: a byte count with an optional K, M, G or T suffix (powers of 1024).
double parse_size(const std::string& option, const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string suffix = text.substr(used);
  double factor = 0;
  if (suffix.empty() || suffix == "B")
    factor = 1;
  else if (suffix == "K" || suffix == "KiB")
    factor = 1024.0;
  else if (suffix == "M" || suffix == "MiB")
    factor = 1048576.0;
  else if (suffix == "G" || suffix == "GiB")
    factor = 1073741824.0;
  else if (suffix == "T" || suffix == "TiB")
    factor = 1099511627776.0;
  if (used == 0 || factor == 0 || !(value > 0) || !std::isfinite(value)) {
    throw UsageError(
        fmt::format("{} expects a positive size such as 8, 64K or 8G, got '{}'", option, text));
  }
  return std::floor(value * factor);
}

const char* const kUsage =
    "usage: prismsim collective --platform PLATFORM.yaml --op OP --gpus N\n"
    "           [--min-bytes 8] [--max-bytes 8G] [--step-factor 2] [--algo auto]\n"
    "           [--fidelity auto] [--csv FILE] [--algorithm-column]\n"
    "           [--set platform.PATH=VALUE]...\n";

}  // namespace

int collective_command(int argc, char** argv) {
  std::string platform_path, op_name, algo_name = "auto", fidelity_name = "auto", csv_path;
  std::string min_text = "8", max_text = "8G";
  double step_factor = 2;
  int gpus = 0;
  int iterations = 1;
  bool algorithm_column = false;
  std::vector<std::string> overrides;
  po::options_description named("collective options");
  named.add_options()("help,h", "show this help")("platform", po::value(&platform_path),
                                                  "platform file")(
      "op", po::value(&op_name),
      "all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
      "all_to_all or send_recv")("gpus", po::value(&gpus),
                                 "GPUs taking part (the first N of the platform)")(
      "min-bytes,b", po::value(&min_text), "smallest size (default 8)")(
      "max-bytes,e", po::value(&max_text), "largest size (default 8G)")(
      "step-factor,f", po::value(&step_factor), "size multiplier between rows (default 2)")(
      "algo", po::value(&algo_name), "auto, ring, tree, hierarchical, nvls, nvls_tree or direct")(
      "fidelity", po::value(&fidelity_name), "auto, step or coarse")(
      "iters,n", po::value(&iterations),
      "calls per size back to back, as nccl-tests times them (default 1: one call; broadcast "
      "and reduce calls overlap: the loop's time per call is reported)")(
      "csv", po::value(&csv_path), "also write the table as CSV to this file")(
      "algorithm-column", po::bool_switch(&algorithm_column),
      "how each size ran (algorithm/protocol/fidelity) as a last column of the table, instead "
      "of comment lines after it")("set", po::value(&overrides)->composing(),
                                   "override a platform value, e.g. "
                                   "--set platform.node.nic.bandwidth=200Gbps");
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(named).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << kUsage << "\n" << named;
    return 0;
  }
  if (platform_path.empty()) throw UsageError("collective needs --platform");
  if (op_name.empty()) throw UsageError("collective needs --op");
  if (gpus < 1) throw UsageError("collective needs --gpus N with N at least 1");
  const auto op = parse_collective_op(op_name);
  if (!op) throw UsageError(fmt::format("unknown collective '{}'", op_name));
  const auto algorithm = parse_algorithm(algo_name);
  if (!algorithm) throw UsageError(fmt::format("unknown algorithm '{}'", algo_name));
  EngineSpec engine;
  // One call at a time: automatic fidelity depends on the group size only.
  engine.step_fidelity_max_transfers = std::numeric_limits<int64_t>::max();
  if (fidelity_name == "step")
    engine.collective_fidelity = CollectiveFidelity::step;
  else if (fidelity_name == "coarse")
    engine.collective_fidelity = CollectiveFidelity::coarse;
  else if (fidelity_name != "auto")
    throw UsageError(fmt::format("unknown fidelity '{}'", fidelity_name));
  const double min_bytes = parse_size("--min-bytes", min_text);
  const double max_bytes = parse_size("--max-bytes", max_text);
  if (max_bytes < min_bytes) throw UsageError("--max-bytes is smaller than --min-bytes");
  if (iterations < 1) throw UsageError("--iters must be at least 1");
  if (!(step_factor > 1) || step_factor > 1024) {
    throw UsageError("--step-factor must be greater than 1 and at most 1024");
  }

  const PlatformSpec platform = load_platform(platform_path, overrides);
  for (const std::string& line : calibration_warnings(platform, false, true)) {
    std::cerr << line << "\n";
  }
  if (gpus > platform.total_gpus()) {
    throw UsageError(fmt::format("--gpus {} exceeds the {} GPUs of platform '{}'", gpus,
                                 platform.total_gpus(), platform.name));
  }
  if (*algorithm != Algorithm::automatic) {
    const auto usable = algorithms_for(*op);
    if (std::find(usable.begin(), usable.end(), *algorithm) == usable.end()) {
      throw UsageError(fmt::format("algorithm '{}' cannot run {}", algo_name, op_name));
    }
    if (*algorithm == Algorithm::nvls && (!platform.nvls || gpus > platform.gpus_per_node)) {
      throw UsageError("algorithm 'nvls' needs node.nvls: true and at most one node's GPUs");
    }
    if (*algorithm == Algorithm::nvls_tree &&
        (!platform.nvls || gpus <= platform.gpus_per_node || gpus % platform.gpus_per_node != 0)) {
      throw UsageError("algorithm 'nvls_tree' needs node.nvls: true and several whole nodes");
    }
    if (*algorithm == Algorithm::hierarchical &&
        (gpus <= platform.gpus_per_node || gpus % platform.gpus_per_node != 0)) {
      throw UsageError("algorithm 'hierarchical' needs several whole nodes");
    }
  }
  std::vector<double> sizes;
  for (double size = min_bytes; size <= max_bytes && sizes.size() < 4096;
       size = std::floor(size * step_factor)) {
    sizes.push_back(size);
  }

  const auto swept = sweep_collective(platform, engine, *op, gpus, sizes, *algorithm);
  // The loop nccl-tests times: the simulated first call, then the overlap's period per call.
  const Topology topology(platform);
  std::vector<int> members(static_cast<size_t>(gpus));
  std::iota(members.begin(), members.end(), 0);
  const CollectivePlanner planner = planner_for(layout_of(members, topology), platform);
  const Algorithm forced =
      planner.supports(*op, *algorithm, platform.nvls) ? *algorithm : Algorithm::automatic;
  std::vector<NcclRow> rows;
  for (const auto& r : swept) {
    double seconds = r.seconds;
    if (iterations > 1) {
      const CollectiveChoice choice =
          choose_collective(planner, members, topology, platform, *op, r.bytes, forced);
      seconds = back_to_back_seconds(r.seconds, back_to_back_period_seconds(choice, platform),
                                     iterations);
    }
    rows.push_back({r.bytes, seconds, 0.0,
                    fmt::format("{}/{}/{}", to_string(r.algorithm), r.protocol,
                                r.coarse ? "coarse" : "step")});
  }
  NcclTableSpec table;
  table.op = *op;
  table.ranks = gpus;
  table.gpus_per_node = platform.gpus_per_node;
  table.gpu_model = platform.gpu.model;
  table.title = fmt::format("prismsim collective: {} on {} GPUs of {} ({} per node)", op_name, gpus,
                            platform.name, platform.gpus_per_node);
  table.min_bytes = sizes.empty() ? min_bytes : sizes.front();
  table.max_bytes = sizes.empty() ? max_bytes : sizes.back();
  table.step_factor = step_factor;
  table.iterations = iterations;
  table.algorithm_column = algorithm_column;
  std::cout << nccl_table(table, rows);
  if (!csv_path.empty()) {
    try {
      write_file(csv_path, nccl_csv(*op, gpus, rows));
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
  }
  return 0;
}

}  // namespace prismsim
