#pragma once

#include <memory>
#include <string>
#include <vector>

namespace prismsim {

/// One thing a rank does, in order.
struct Op {
  enum class Kind { compute, all_reduce };

  Kind kind = Kind::compute;
  double seconds = 0;  ///< compute: nominal duration on this rank's GPU
  double bytes = 0;    ///< collective: message size per rank
  int group = -1;      ///< collective: index into Job::groups
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
