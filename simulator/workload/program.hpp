#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/collective.hpp"

namespace prismsim {

/// One thing a rank does, in order.
struct Op {
  enum class Kind { compute, collective };

  Kind kind = Kind::compute;
  double seconds = 0;  ///< compute: nominal duration on this rank's GPU
  CollectiveOp collective = CollectiveOp::all_reduce;
  double bytes = 0;    ///< collective: size in nccl-tests' convention
  int group = -1;      ///< collective: index into Job::groups
  int root = 0;        ///< broadcast/reduce: group position of the root

  static Op compute_for(double seconds) { return Op{Kind::compute, seconds}; }
  static Op collective_on(CollectiveOp op, double bytes, int group) {
    return Op{Kind::collective, 0, op, bytes, group};
  }
};

/// The ops one rank runs in every training step.
struct Program {
  std::vector<Op> ops;
};

/// Ranks taking part in one collective, in ring order.
struct CollectiveGroup {
  std::vector<int> ranks;
};

/// Everything the runtime executes: per rank, a program (shared between identical ranks) and the
/// GPU it runs on; the collective groups the programs refer to.
struct Job {
  std::vector<std::shared_ptr<const Program>> program_of_rank;
  std::vector<int> gpu_of_rank;
  std::vector<CollectiveGroup> groups;

  int rank_count() const { return static_cast<int>(gpu_of_rank.size()); }
};

}  // namespace prismsim
