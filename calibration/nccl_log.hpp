#pragma once

#include <string>
#include <vector>

namespace prismsim {

/// One measured size of an nccl-tests run.
struct NcclMeasurement {
  double bytes = 0;
  double time_s = 0;  ///< out-of-place time
  double in_place_time_s = 0;  ///< in-place time, 0 when the row has none
  double busbw_GBps = 0;
};

/// An nccl-tests log: the ranks it ran on and its measurements, in file order.
struct NcclLog {
  std::string path;
  int ranks = 0;  ///< "#  Rank N ..." lines
  int nodes = 0;  ///< distinct hosts among those lines
  std::vector<NcclMeasurement> points;
};

/// Reads nccl-tests output (lines optionally prefixed by MPI tags such as "[1,0]<stdout>:").
/// Columns are found from the header ("size count type redop [root] time algbw busbw ...").
/// Throws InputError (file:line:col) for malformed data lines or a log without measurements.
NcclLog read_nccl_log(const std::string& path);

/// Reads vTrain's all-reduce tables: "size(B),count,type,time(ns),busbw(GB/s),..." for `ranks`
/// GPUs of one node. Throws InputError on malformed rows.
NcclLog read_vtrain_allreduce_csv(const std::string& path, int ranks);

}  // namespace prismsim
