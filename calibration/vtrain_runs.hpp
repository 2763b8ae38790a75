#pragma once

#include <string>
#include <vector>

namespace prismsim {

/// One measured training iteration from vTrain's ground-truth tables.
struct MeasuredIteration {
  int line = 0;  ///< in its file, for messages
  int gpus = 0;
  int global_batch = 0, microbatch = 0;
  int hidden = 0, heads = 0, layers = 0, sequence = 0;
  int tp = 1, dp = 1, pp = 1;
  double seconds = 0;

  /// The scenario overrides that describe this run (model, batch, parallelism).
  std::vector<std::string> overrides() const;
};

/// Reads ground_truth_single.csv / ground_truth_multi_small.csv (columns found by their header
/// names, so both layouts work). Throws InputError ("file:line:col: error: ...") on malformed rows.
std::vector<MeasuredIteration> read_vtrain_iterations(const std::string& path);

}  // namespace prismsim
