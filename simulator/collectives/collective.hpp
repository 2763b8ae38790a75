#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prismsim {

/// The collective operations, as NCCL names them.
enum class CollectiveOp {
  all_reduce,
  all_gather,
  reduce_scatter,
  broadcast,
  reduce,
  all_to_all,
  send_recv
};

/// How a collective moves data.
enum class Algorithm {
  automatic,     ///< chosen per call by predicted time, as NCCL's tuner does
  ring,          ///< multi-channel rings
  tree,          ///< double binary tree (all-reduce)
  hierarchical,  ///< reduce-scatter in node, all-reduce per rail across nodes, all-gather in node
  nvls,          ///< NVLink SHARP: reduction in the NVSwitch (all-reduce inside one node)
  direct,        ///< every pair exchanges directly (all-to-all, send/receive)
  nvls_tree,     ///< NVLink SHARP inside each node, a double binary tree per slot across nodes
};

/// Whether every algorithm step is simulated or each phase is one flow per rank.
enum class CollectiveFidelity { automatic, step, coarse };

const char* to_string(CollectiveOp op);
const char* to_string(Algorithm algorithm);
std::optional<CollectiveOp> parse_collective_op(std::string_view name);
std::optional<Algorithm> parse_algorithm(std::string_view name);
const std::vector<std::string>& collective_op_names();
const std::vector<std::string>& algorithm_names();

/// nccl-tests' bus bandwidth factor: busbw = algbw x factor (2(n-1)/n for all-reduce).
double bus_factor(CollectiveOp op, int ranks);

/// Algorithms that can run `op` (automatic excluded).
std::vector<Algorithm> algorithms_for(CollectiveOp op);

/// One message a rank sends in a step, to a group position.
struct Send {
  int peer = 0;
  double bytes = 0;
};

/// What one rank does in one step or phase of a collective (see CollectivePlan).
struct CommStep {
  std::vector<Send> sends;
  std::vector<int> recvs;  ///< group positions this rank receives one message from
  void clear() {
    sends.clear();
    recvs.clear();
  }
  /// Merges the sends to each peer into one of their summed size, and duplicate receives: within
  /// one coarse phase, messages to a peer take the same route and start together, so one flow
  /// finishes when they would (ring channels inside a node share a successor).
  void merge_by_peer();
};

}  // namespace prismsim
