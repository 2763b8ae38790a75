#pragma once

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "collectives/collective.hpp"

namespace prismsim {

/// Where the members of a collective group sit: for each group position, its node (numbered
/// across the platform) and its slot in the node.
struct GroupLayout {
  std::vector<int> node;
  std::vector<int> local;

  int size() const { return static_cast<int>(node.size()); }
  /// True when every member shares one node.
  bool single_node() const;
  /// Members per node when every node present holds the same number of members with the same
  /// local slots; 0 otherwise.
  int uniform_members_per_node() const;
};

/// The hops, in order, that each chunk of a pipelined phase takes: (sender, receiver) positions.
struct PipelinePath {
  std::vector<std::pair<int, int>> hops;
  double chunk_bytes = 0;
};

/// The schedule of one collective call, in two forms that move the same data:
/// - coarse: a few phases; in each, every rank posts all its sends and receives at once, and the
///   group waits for its slowest member before the next phase;
/// - step by step: independent lanes (ring channels; each tree of a double binary tree, upward
///   and downward; an all-to-all's point-to-point channels); in each lane a rank runs its steps
///   in order, and a step first receives, then sends.
/// Plans are pure; the runtime executes them (see runtime/collective_runtime).
class CollectivePlan {
 public:
  virtual ~CollectivePlan() = default;

  virtual int phases() const = 0;
  /// Fills `out` with phase `index` of position `pos`.
  virtual void phase(int pos, int index, CommStep& out) const = 0;
  /// Per phase: the message latencies in sequence on the critical path of the step-by-step
  /// algorithm; a coarse run simulates one and adds the others.
  virtual std::vector<int> phase_latency_steps() const = 0;
  /// Per phase: the store-and-forward steps its data passes one after the other (a ring's steps,
  /// each forwarding the chunk it received); 1 where the data is already pipelined or not
  /// forwarded. A streamed protocol pays its rate for 1/steps of the phase's bytes.
  virtual std::vector<int> phase_forwarding_steps() const {
    return std::vector<int>(static_cast<size_t>(phases()), 1);
  }
  /// The paths a pipelined phase's chunks take (a tree's deepest member up to the root and back,
  /// one per tree; a chain from its head): the slowest gives the phase's message latencies and
  /// fill hop by hop (k chunks through hops h take sum_h chunk / bandwidth_h + (k - 1) chunk /
  /// slowest). Empty where every step costs the phase's largest route latency (rings).
  virtual std::vector<PipelinePath> phase_paths(int /*phase*/) const { return {}; }
  /// Chunks phase `phase` streams along a chain that no member waits on once it has forwarded
  /// them (broadcast, reduce): consecutive calls overlap by all but one chunk time per member.
  /// 0 where a call's members wait for the whole group (rings, trees).
  virtual int overlapping_chunks(int /*phase*/) const { return 0; }

  virtual int lanes() const = 0;
  /// The mailboxes lane `lane` talks through: lanes that share them never use one edge (a tree's
  /// upward and downward lanes, an all-to-all's channels); by default every lane has its own.
  virtual int lane_mailboxes(int lane) const { return lane; }
  virtual int step_count(int pos, int lane) const = 0;
  /// Fills `out` with step `index` of lane `lane` of position `pos`.
  virtual void step(int pos, int lane, int index, CommStep& out) const = 0;
  /// Whether the lanes above run the algorithm as its cost model does; where they leave part of
  /// it out, automatic fidelity runs the coarse form.
  virtual bool steps_follow_the_algorithm() const { return true; }
};

/// Builds plans for one group. Holds the ring orders and trees (one per channel), which depend only
/// on the group, so that plans for many sizes are cheap.
class CollectivePlanner {
 public:
  /// `channels` rings and as many double binary trees; channel c enters each node at its c-th
  /// member (NCCL-style, so that the channels' inter-node hops spread over the nodes' NICs).
  /// `p2p_channels`: the point-to-point exchanges of an all-to-all that run at once.
  /// `nvls_scale`: bytes an NVLS all-reduce puts on each link per byte it moves (see NvlsPlan).
  CollectivePlanner(GroupLayout layout, int channels, int p2p_channels, double nvls_scale = 1.0);

  const GroupLayout& layout() const { return layout_; }
  int channels() const { return static_cast<int>(ring_order_.size()); }
  /// Whether `algorithm` can run `op` on this group (nvls also needs NVLink SHARP: `sharp`).
  bool supports(CollectiveOp op, Algorithm algorithm, bool sharp) const;
  /// The plan of `op` on `bytes` (nccl-tests' size convention) with `algorithm` (not automatic).
  /// `root`: group position of broadcast and reduce roots.
  std::unique_ptr<CollectivePlan> plan(CollectiveOp op, Algorithm algorithm, double bytes,
                                       int root = 0) const;

  /// Ring channel c: positions in ring order, and each position's index in it.
  const std::vector<int>& ring(int c) const { return ring_order_[static_cast<size_t>(c)]; }
  const std::vector<int>& ring_index(int c) const { return ring_index_[static_cast<size_t>(c)]; }

  /// A position in one tree of the double binary tree.
  struct TreeNode {
    int parent = -1;
    std::vector<int> children;
  };
  /// Tree t (0 or 1) of channel c's double binary tree, per position.
  const std::vector<TreeNode>& tree(int c, int t) const {
    return trees()[static_cast<size_t>(c)].tree[t];
  }
  /// Hops from the deepest member of any tree to its root.
  int tree_depth() const {
    trees();
    return tree_depth_;
  }
  /// The deepest member of tree t of channel c (the first of them).
  int tree_deepest(int c, int t) const { return trees()[static_cast<size_t>(c)].deepest[t]; }

 private:
  struct DoubleTree {
    std::vector<TreeNode> tree[2];
    int deepest[2] = {0, 0};
  };
  /// Channel `c`'s two trees, from the members of each node in position order (rotated by c) and
  /// the nodes in order of first appearance.
  DoubleTree build_trees(const std::map<int, std::vector<int>>& by_node,
                         const std::vector<int>& node_order, int c) const;
  /// The trees, built on first use (most groups never run a tree).
  const std::vector<DoubleTree>& trees() const;

  GroupLayout layout_;
  int p2p_channels_;
  double nvls_scale_;
  std::vector<std::vector<int>> ring_order_;
  std::vector<std::vector<int>> ring_index_;
  mutable std::vector<DoubleTree> trees_;
  mutable int tree_depth_ = 0;
};

/// Chunks a pipelined chain or tree splits `bytes` into (about 128 KiB each, at most 64).
int pipeline_chunks(double bytes);

}  // namespace prismsim
