#include "collectives/collective.hpp"

#include <algorithm>

namespace prismsim {

namespace {
const std::vector<std::string> kOpNames = {
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv"};
const std::vector<std::string> kAlgorithmNames = {"auto", "ring",   "tree",     "hierarchical",
                                                  "nvls", "direct", "nvls_tree"};
}  // namespace

const std::vector<std::string>& collective_op_names() { return kOpNames; }
const std::vector<std::string>& algorithm_names() { return kAlgorithmNames; }

const char* to_string(CollectiveOp op) { return kOpNames[static_cast<size_t>(op)].c_str(); }
const char* to_string(Algorithm a) { return kAlgorithmNames[static_cast<size_t>(a)].c_str(); }

std::optional<CollectiveOp> parse_collective_op(std::string_view name) {
  for (size_t i = 0; i < kOpNames.size(); ++i) {
    if (kOpNames[i] == name) return static_cast<CollectiveOp>(i);
  }
  return std::nullopt;
}

std::optional<Algorithm> parse_algorithm(std::string_view name) {
  for (size_t i = 0; i < kAlgorithmNames.size(); ++i) {
    if (kAlgorithmNames[i] == name) return static_cast<Algorithm>(i);
  }
  return std::nullopt;
}

double bus_factor(CollectiveOp op, int ranks) {
  const double n = ranks;
  switch (op) {
    case CollectiveOp::all_reduce:
      return ranks > 1 ? 2.0 * (n - 1) / n : 0.0;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all:
      return ranks > 1 ? (n - 1) / n : 0.0;
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
    case CollectiveOp::send_recv:
      return 1.0;
  }
  return 1.0;
}

std::vector<Algorithm> algorithms_for(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce:
      return {Algorithm::ring, Algorithm::tree, Algorithm::hierarchical, Algorithm::nvls,
              Algorithm::nvls_tree};
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
      return {Algorithm::ring};
    case CollectiveOp::all_to_all:
    case CollectiveOp::send_recv:
      return {Algorithm::direct};
  }
  return {};
}

void CommStep::merge_by_peer() {
  std::sort(sends.begin(), sends.end(),
            [](const Send& a, const Send& b) { return a.peer < b.peer; });
  size_t kept = 0;
  for (size_t i = 0; i < sends.size(); ++i) {
    if (kept > 0 && sends[kept - 1].peer == sends[i].peer) {
      sends[kept - 1].bytes += sends[i].bytes;
    } else {
      sends[kept++] = sends[i];
    }
  }
  sends.resize(kept);
  std::sort(recvs.begin(), recvs.end());
  recvs.erase(std::unique(recvs.begin(), recvs.end()), recvs.end());
}

}  // namespace prismsim
