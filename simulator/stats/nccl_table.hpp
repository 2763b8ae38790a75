#pragma once

#include <string>
#include <vector>

#include "collectives/collective.hpp"

namespace prismsim {

/// One row of an nccl-tests style table.
struct NcclRow {
  double bytes = 0;
  double seconds = 0;
  std::string algorithm;  ///< how it ran: "ring/LL128/step"
};

/// The table nccl-tests prints (size, count, type, redop, time us, algbw, busbw), for `ranks`
/// GPUs and 4-byte floats, with how each size ran in a last column.
std::string nccl_table(CollectiveOp op, int ranks, const std::vector<NcclRow>& rows);
/// The same as CSV: size_bytes,count,type,redop,time_us,algbw_GBps,busbw_GBps,algorithm.
std::string nccl_csv(CollectiveOp op, int ranks, const std::vector<NcclRow>& rows);

/// Algorithm bandwidth in GB/s (1e9 bytes/s), as nccl-tests computes it.
double algbw_GBps(double bytes, double seconds);

}  // namespace prismsim
