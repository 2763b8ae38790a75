#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/collective.hpp"

namespace prismsim {

/// One half (out-of-place or in-place) of an nccl-tests row.
struct NcclResult {
  double time_s = 0;      ///< 0 when the row has no such half
  double algbw_GBps = 0;  ///< as printed
  double busbw_GBps = 0;  ///< as printed
  std::string wrong;      ///< "#wrong" (or old "error") column as printed: "0", "N/A", "4e-07"
};

/// One measured size of an nccl-tests run, field by field.
struct NcclMeasurement {
  double bytes = 0;
  int64_t count = 0;           ///< elements
  std::string type;            ///< "float"
  std::string redop;           ///< "sum", "none"; empty when the table has no redop column
  std::string root;            ///< "-1", "0"; empty when the table has no root column
  double time_s = 0;           ///< out-of-place time
  double in_place_time_s = 0;  ///< in-place time, 0 when the row has none
  double busbw_GBps = 0;       ///< out-of-place
  NcclResult out_of_place;
  NcclResult in_place;
};

/// An nccl-tests log: the ranks it ran on and its measurements, in file order.
struct NcclLog {
  std::string path;
  int ranks = 0;                        ///< "#  Rank N ..." lines
  int nodes = 0;                        ///< distinct hosts among those lines
  std::vector<std::string> rank_hosts;  ///< host of each "# Rank" line, in order
  std::vector<NcclMeasurement> points;
  double avg_busbw_GBps = 0;  ///< the "# Avg bus bandwidth" footer; 0 when absent
  /// Timed calls per size ("iters: N" of the first line; nccl-tests' default 20 when absent):
  /// nccl-tests prints their average, and broadcast and reduce calls overlap.
  int iterations = 20;

  // What a fit needs beside the measurements (set by the caller; not read from the file).
  CollectiveOp op = CollectiveOp::all_reduce;
  Algorithm algorithm = Algorithm::automatic;  ///< forced when the run disabled the others
};

/// Reads nccl-tests output (lines optionally prefixed by MPI tags such as "[1,0]<stdout>:").
/// Columns are found from the header ("size count type redop [root] time algbw busbw #wrong ...",
/// old versions: "error" for "#wrong"). Throws InputError (file:line:col) for malformed data
/// lines or a log without measurements.
NcclLog read_nccl_log(const std::string& path);
/// The same from text; `path` names it in diagnostics.
NcclLog parse_nccl_log(const std::string& text, const std::string& path);

/// Reads vTrain's all-reduce tables: "size(B),count,type,time(ns),busbw(GB/s),..." for `ranks`
/// GPUs of one node. Throws InputError on malformed rows.
NcclLog read_vtrain_allreduce_csv(const std::string& path, int ranks);

/// Reads a table of bus bandwidths: a CSV with a header, one size per row. `filters` are
/// KEY=VALUE: a column name keeps only rows whose column holds VALUE; `size=BYTES` gives the size
/// of every row when the table has no size column (size_bytes, size_bytes_approx or
/// payload_bytes); `busbw=COLUMN` reads another column than busbw_GBps; `gpus=N` gives the GPU
/// count when the table has no gpus column. Time is size / busbw x the op's bus factor. One log
/// per GPU count, in order of first appearance. Throws InputError on malformed input.
std::vector<NcclLog> read_busbw_table(const std::string& path,
                                      const std::vector<std::string>& filters, CollectiveOp op);

/// The collective an nccl-tests log measured, from its file name ("all_reduce_16gpu.log",
/// "broadcast_perf.txt"); `fallback` when the name says nothing.
CollectiveOp op_from_file_name(const std::string& path, CollectiveOp fallback);

}  // namespace prismsim
