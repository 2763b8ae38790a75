#include "stats/nccl_table.hpp"

#include <fmt/format.h>

namespace prismsim {
namespace {

const char* redop_of(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::reduce:
      return "sum";
    default:
      return "none";
  }
}

/// nccl-tests' root column: the root of rooted operations, -1 for the others.
int root_of(CollectiveOp op) {
  return op == CollectiveOp::broadcast || op == CollectiveOp::reduce ? 0 : -1;
}

/// nccl-tests' count column: elements per rank's buffer parameter (a shard for gathers,
/// scatters and all-to-all).
long long count_of(CollectiveOp op, double bytes, int ranks) {
  const double elements = bytes / 4;
  switch (op) {
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all:
      return static_cast<long long>(elements / ranks);
    default:
      return static_cast<long long>(elements);
  }
}

double bus_bandwidth(CollectiveOp op, int ranks, double bytes, double seconds) {
  return algbw_GBps(bytes, seconds) * bus_factor(op, ranks);
}

}  // namespace

double algbw_GBps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0; }

std::string nccl_time_text(double us) {
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

std::string nccl_host_name(int node) { return fmt::format("node{:04}", node); }

std::string nccl_table(const NcclTableSpec& spec, const std::vector<NcclRow>& rows) {
  std::string out;
  if (!spec.title.empty()) out += "# " + spec.title + "\n";
  out += fmt::format(
      "# nThread 1 nGpus 1 minBytes {} maxBytes {} step: {}(factor) warmup iters: 0 iters: {} "
      "agg iters: 1 validation: 0 graph: 0\n#\n# Using devices\n",
      static_cast<long long>(spec.min_bytes), static_cast<long long>(spec.max_bytes),
      fmt::format("{}", spec.step_factor), spec.iterations);
  const int per_node = spec.gpus_per_node > 0 ? spec.gpus_per_node : 1;
  for (int r = 0; r < spec.ranks; ++r) {
    out += fmt::format("#  Rank {:2} Group {:2} Pid {:6} on {:>10} device {:2} [0x{:02x}] {}\n", r,
                       0, 0, nccl_host_name(r / per_node), r % per_node, 0, spec.gpu_model);
  }
  out += fmt::format(
      "#\n# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place            "
      "           in-place          \n",
      "", "", "", "", "");
  out += fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6} {:>6}  {:>7}  "
      "{:>6}  {:>6} {:>6}{}\n",
      "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
      "busbw", "#wrong", spec.algorithm_column ? "  algorithm" : "");
  out += fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>5}  {:>7}  "
      "{:>6}  {:>6}  {:>5}\n",
      "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
      "");
  double busbw_sum = 0;
  int busbw_count = 0;
  for (const auto& row : rows) {
    out += fmt::format("{:12}  {:12}  {:>8}  {:>6}  {:6}", static_cast<long long>(row.bytes),
                       count_of(spec.op, row.bytes, spec.ranks), "float", redop_of(spec.op),
                       root_of(spec.op));
    for (double seconds :
         {row.seconds, row.in_place_seconds > 0 ? row.in_place_seconds : row.seconds}) {
      const double busbw = bus_bandwidth(spec.op, spec.ranks, row.bytes, seconds);
      out += fmt::format("  {:>7}  {:6.2f}  {:6.2f}  {:>5}", nccl_time_text(seconds * 1e6),
                         algbw_GBps(row.bytes, seconds), busbw, "N/A");
      busbw_sum += busbw;
      ++busbw_count;
    }
    if (spec.algorithm_column) out += "  " + row.algorithm;
    out += "\n";
  }
  out += fmt::format("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : {} \n#\n",
                     fmt::format("{:g}", busbw_count ? busbw_sum / busbw_count : 0.0));
  if (!spec.algorithm_column && !rows.empty()) {
    out += "# prismsim: how each size ran (algorithm/protocol/fidelity):\n";
    size_t first = 0;
    for (size_t i = 1; i <= rows.size(); ++i) {
      if (i < rows.size() && rows[i].algorithm == rows[first].algorithm) continue;
      const auto from = static_cast<long long>(rows[first].bytes);
      const auto to = static_cast<long long>(rows[i - 1].bytes);
      out += from == to ? fmt::format("#   {}: {}\n", from, rows[first].algorithm)
                        : fmt::format("#   {}-{}: {}\n", from, to, rows[first].algorithm);
      first = i;
    }
  }
  return out;
}

std::string nccl_csv(CollectiveOp op, int ranks, const std::vector<NcclRow>& rows) {
  std::string out = "size_bytes,count,type,redop,time_us,algbw_GBps,busbw_GBps,algorithm\n";
  for (const auto& row : rows) {
    const double algbw = algbw_GBps(row.bytes, row.seconds);
    out += fmt::format("{},{},float,{},{},{},{},{}\n", static_cast<long long>(row.bytes),
                       count_of(op, row.bytes, ranks), redop_of(op), row.seconds * 1e6, algbw,
                       algbw * bus_factor(op, ranks), row.algorithm);
  }
  return out;
}

}  // namespace prismsim
