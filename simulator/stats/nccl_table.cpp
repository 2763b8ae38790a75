#include "stats/nccl_table.hpp"

#include <fmt/format.h>

namespace prismsim {
namespace {

const char* redop_of(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::reduce: return "sum";
    default: return "none";
  }
}

}  // namespace

double algbw_GBps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0; }

std::string nccl_table(CollectiveOp op, int ranks, const std::vector<NcclRow>& rows) {
  std::string out = fmt::format(
      "#\n#{:>12}  {:>12}  {:>8}  {:>6}  {:>9}  {:>7}  {:>7}  {}\n"
      "#{:>12}  {:>12}  {:>8}  {:>6}  {:>9}  {:>7}  {:>7}\n",
      "size", "count", "type", "redop", "time", "algbw", "busbw", "algorithm", "(B)",
      "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)");
  for (const auto& row : rows) {
    const double algbw = algbw_GBps(row.bytes, row.seconds);
    out += fmt::format(" {:>12}  {:>12}  {:>8}  {:>6}  {:>9.2f}  {:>7.2f}  {:>7.2f}  {}\n",
                       static_cast<long long>(row.bytes), static_cast<long long>(row.bytes / 4),
                       "float", redop_of(op), row.seconds * 1e6, algbw,
                       algbw * bus_factor(op, ranks), row.algorithm);
  }
  return out;
}

std::string nccl_csv(CollectiveOp op, int ranks, const std::vector<NcclRow>& rows) {
  std::string out = "size_bytes,count,type,redop,time_us,algbw_GBps,busbw_GBps,algorithm\n";
  for (const auto& row : rows) {
    const double algbw = algbw_GBps(row.bytes, row.seconds);
    out += fmt::format("{},{},float,{},{},{},{},{}\n", static_cast<long long>(row.bytes),
                       static_cast<long long>(row.bytes / 4), redop_of(op), row.seconds * 1e6,
                       algbw, algbw * bus_factor(op, ranks), row.algorithm);
  }
  return out;
}

}  // namespace prismsim
