#pragma once

#include <string>
#include <vector>

#include "collectives/collective.hpp"

namespace prismsim {

/// One row of an nccl-tests style table.
struct NcclRow {
  double bytes = 0;
  double seconds = 0;           ///< out-of-place
  double in_place_seconds = 0;  ///< in-place; 0: the same as out-of-place
  std::string algorithm;        ///< how it ran: "ring/LL128/step"
};

/// What the table's header says about the run: nccl-tests prints its arguments and one
/// "#  Rank ... on HOST device ..." line per rank.
struct NcclTableSpec {
  CollectiveOp op = CollectiveOp::all_reduce;
  int ranks = 1;
  int gpus_per_node = 8;  ///< rank r runs on host r / gpus_per_node, device r % gpus_per_node
  std::string gpu_model;  ///< the device name of the rank lines
  std::string title;      ///< a first comment line ("prismsim collective: ..."); empty: none
  double min_bytes = 0, max_bytes = 0, step_factor = 2;
  int iterations = 1;             ///< calls per size (nccl-tests' "iters")
  bool algorithm_column = false;  ///< append how each size ran as a last column
};

/// The table nccl-tests (2.13 and later) prints, column for column, for `spec.ranks` GPUs and
/// 4-byte floats: header with rank lines; per size, size, count, type, redop, root, then time
/// (us), algbw, busbw (GB/s) and #wrong ("N/A": no data is checked) out-of-place and in-place;
/// the "Out of bounds" and "Avg bus bandwidth" footer. How each size ran follows in comment
/// lines (sizes with the same algorithm/protocol/fidelity as one range), or in a last column.
std::string nccl_table(const NcclTableSpec& spec, const std::vector<NcclRow>& rows);
/// The same as CSV: size_bytes,count,type,redop,time_us,algbw_GBps,busbw_GBps,algorithm.
std::string nccl_csv(CollectiveOp op, int ranks, const std::vector<NcclRow>& rows);

/// Algorithm bandwidth in GB/s (1e9 bytes/s), as nccl-tests computes it.
double algbw_GBps(double bytes, double seconds);
/// nccl-tests' time field: 2 decimals below 100 us, 1 below 10 ms, none above.
std::string nccl_time_text(double microseconds);
/// Host name of node `node` in simulated tables.
std::string nccl_host_name(int node);

}  // namespace prismsim
