#include "collectives/plan.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>

namespace prismsim {

bool GroupLayout::single_node() const {
  return std::all_of(node.begin(), node.end(), [&](int n) { return n == node.front(); });
}

int GroupLayout::uniform_members_per_node() const {
  std::map<int, std::vector<int>> slots;
  for (int pos = 0; pos < size(); ++pos) slots[node[pos]].push_back(local[pos]);
  std::vector<int> first = slots.begin()->second;
  std::sort(first.begin(), first.end());
  for (auto& [n, s] : slots) {
    std::sort(s.begin(), s.end());
    if (s != first) return 0;
  }
  return static_cast<int>(first.size());
}

int pipeline_chunks(double bytes) {
  constexpr double kChunkBytes = 128.0 * 1024;
  return static_cast<int>(std::clamp(std::ceil(bytes / kChunkBytes), 1.0, 64.0));
}

namespace {

/// A ring position's neighbours.
struct Neighbours {
  int next;
  int prev;
};

/// Ring collectives over several channels, each moving 1/channels of the data. All-reduce,
/// all-gather and reduce-scatter pass chunks around the ring; broadcast and reduce pipeline
/// chunks along a chain from (or to) the root.
class RingPlan final : public CollectivePlan {
 public:
  RingPlan(const CollectivePlanner& planner, CollectiveOp op, double bytes, int root)
      : planner_(planner), op_(op), root_(root), n_(planner.layout().size()) {
    const double per_channel = bytes / planner.channels();
    switch (op) {
      case CollectiveOp::all_reduce:
        steps_ = 2 * (n_ - 1);
        chunk_ = per_channel / n_;
        break;
      case CollectiveOp::all_gather:
      case CollectiveOp::reduce_scatter:
        steps_ = n_ - 1;
        chunk_ = per_channel / n_;
        break;
      default:
        chain_ = true;
        chunks_ = pipeline_chunks(per_channel);
        chunk_ = per_channel / chunks_;
        break;
    }
  }

  int phases() const override { return 1; }
  std::vector<int> phase_latency_steps() const override {
    return {chain_ ? n_ - 1 + chunks_ - 1 : steps_};
  }
  std::vector<int> phase_forwarding_steps() const override { return {chain_ ? 1 : steps_}; }
  int overlapping_chunks(int) const override { return chain_ ? chunks_ : 0; }
  std::vector<PipelinePath> phase_paths(int) const override {
    if (!chain_) return {};
    PipelinePath path{{}, chunk_};
    int pos = root_;
    while (!chain(pos, 0).first) pos = chain(pos, 0).upstream;
    for (Chain ch = chain(pos, 0); !ch.last; ch = chain(pos, 0)) {
      path.hops.emplace_back(pos, ch.downstream);
      pos = ch.downstream;
    }
    return {path};
  }
  void phase(int pos, int, CommStep& out) const override {
    out.clear();
    for (int c = 0; c < planner_.channels(); ++c) {
      const Neighbours nb = neighbours(pos, c);
      if (!chain_) {
        out.sends.push_back({nb.next, chunk_ * steps_});
        out.recvs.push_back(nb.prev);
        continue;
      }
      const Chain ch = chain(pos, c);
      if (!ch.last) out.sends.push_back({ch.downstream, chunk_ * chunks_});
      if (!ch.first) out.recvs.push_back(ch.upstream);
    }
  }

  int lanes() const override { return planner_.channels(); }
  int step_count(int, int) const override { return chain_ ? chunks_ : steps_ + 1; }
  void step(int pos, int lane, int index, CommStep& out) const override {
    out.clear();
    if (!chain_) {
      // Step 0 sends this rank's first chunk; each later step receives one and passes one on.
      const Neighbours nb = neighbours(pos, lane);
      if (index > 0) out.recvs.push_back(nb.prev);
      if (index < steps_) out.sends.push_back({nb.next, chunk_});
      return;
    }
    // Step j handles chunk j: receive it from upstream, then pass it downstream.
    const Chain ch = chain(pos, lane);
    if (!ch.first) out.recvs.push_back(ch.upstream);
    if (!ch.last) out.sends.push_back({ch.downstream, chunk_});
  }

 private:
  struct Chain {
    bool first, last;
    int upstream, downstream;
  };

  Neighbours neighbours(int pos, int c) const {
    const auto& order = planner_.ring(c);
    const int i = planner_.ring_index(c)[static_cast<size_t>(pos)];
    return {order[static_cast<size_t>((i + 1) % n_)],
            order[static_cast<size_t>((i + n_ - 1) % n_)]};
  }

  /// Broadcast flows from the root along the ring; reduce flows towards the root.
  Chain chain(int pos, int c) const {
    const Neighbours nb = neighbours(pos, c);
    const int i = planner_.ring_index(c)[static_cast<size_t>(pos)];
    const int r = planner_.ring_index(c)[static_cast<size_t>(root_)];
    const bool forward = op_ == CollectiveOp::broadcast;
    const int distance = forward ? (i - r + n_) % n_ : (r - i + n_) % n_;
    return {distance == 0, distance == n_ - 1, forward ? nb.prev : nb.next,
            forward ? nb.next : nb.prev};
  }

  const CollectivePlanner& planner_;
  CollectiveOp op_;
  int root_;
  int n_;
  int steps_ = 0;
  int chunks_ = 1;
  double chunk_ = 0;
  bool chain_ = false;
};

/// NCCL's double binary tree all-reduce, on every channel: each channel's two trees each reduce
/// and broadcast 1 / (2 channels) of the data in pipelined chunks. Across nodes the trees are
/// binary, tree 1 mirroring tree 0 so that a node inside one is (mostly) a leaf of the other;
/// inside a node the members form a chain below the node's head, which links to the other nodes.
/// Channel c's chain starts at the node's c-th member, so the channels' inter-node hops use
/// different NICs (NCCL's tree channels follow its ring channels' NICs). In one node a tree is
/// therefore a chain (2 (n-1) hops), as NCCL builds it. Step by step, each tree is two lanes.
class TreePlan final : public CollectivePlan {
 public:
  TreePlan(const CollectivePlanner& planner, double bytes)
      : planner_(planner), channels_(planner.channels()), depth_(planner.tree_depth()) {
    const double per_tree = bytes / 2 / channels_;
    chunks_ = pipeline_chunks(per_tree);
    chunk_ = per_tree / chunks_;
  }

  int phases() const override { return 1; }
  std::vector<int> phase_latency_steps() const override { return {2 * depth_ + chunks_ - 1}; }
  std::vector<PipelinePath> phase_paths(int) const override {
    // Each tree's deepest member: its chunk goes up to the root, the result comes back down.
    std::vector<PipelinePath> paths;
    for (int c = 0; c < channels_; ++c) {
      for (int t = 0; t < 2; ++t) {
        const std::vector<Node>& tree = planner_.tree(c, t);
        PipelinePath path{{}, chunk_};
        for (int pos = planner_.tree_deepest(c, t); tree[static_cast<size_t>(pos)].parent >= 0;
             pos = tree[static_cast<size_t>(pos)].parent) {
          path.hops.emplace_back(pos, tree[static_cast<size_t>(pos)].parent);
        }
        for (size_t i = path.hops.size(); i-- > 0;) {
          path.hops.emplace_back(path.hops[i].second, path.hops[i].first);
        }
        paths.push_back(std::move(path));
      }
    }
    return paths;
  }
  void phase(int pos, int, CommStep& out) const override {
    out.clear();
    const double half = chunk_ * chunks_;
    for (int c = 0; c < channels_; ++c) {
      for (int t = 0; t < 2; ++t) {
        const Node& node = planner_.tree(c, t)[static_cast<size_t>(pos)];
        if (node.parent >= 0) out.sends.push_back({node.parent, half});
        for (int child : node.children) out.sends.push_back({child, half});
        out.recvs.insert(out.recvs.end(), node.children.begin(), node.children.end());
        if (node.parent >= 0) out.recvs.push_back(node.parent);
      }
    }
  }

  // Each tree reduces upward and broadcasts downward at once, as NCCL's split tree kernel does:
  // lane 2k + 0 carries tree k's chunks up, lane 2k + 1 down (tree k = channel k / 2, tree k % 2);
  // the root reduces each chunk from its children and sends it straight back down.
  int lanes() const override { return 4 * channels_; }
  int lane_mailboxes(int lane) const override { return lane / 2; }
  int step_count(int pos, int lane) const override {
    const bool root = node_of(pos, lane).parent < 0;
    return lane % 2 == 0 && root ? 0 : chunks_;
  }
  void step(int pos, int lane, int, CommStep& out) const override {
    out.clear();
    const Node& node = node_of(pos, lane);
    if (lane % 2 == 0) {  // up: reduce from the children, send to the parent
      out.recvs = node.children;
      out.sends.push_back({node.parent, chunk_});
      return;
    }
    if (node.parent >= 0) {  // down: from the parent (the root: from its children) to the children
      out.recvs.push_back(node.parent);
    } else {
      out.recvs = node.children;
    }
    for (int child : node.children) out.sends.push_back({child, chunk_});
  }

 private:
  using Node = CollectivePlanner::TreeNode;

  const Node& node_of(int pos, int lane) const {
    return planner_.tree(lane / 4, (lane / 2) % 2)[static_cast<size_t>(pos)];
  }

  const CollectivePlanner& planner_;
  int channels_;
  int depth_ = 0;  ///< hops from the deepest member of any tree to its root
  int chunks_ = 1;
  double chunk_ = 0;
};

/// Hierarchical all-reduce: ring reduce-scatter among each node's members, ring all-reduce of each
/// shard among the members of one slot across nodes (one ring per rail), ring all-gather in node.
class HierarchicalPlan final : public CollectivePlan {
 public:
  HierarchicalPlan(const GroupLayout& layout, double bytes) : bytes_(bytes) {
    std::map<int, std::vector<int>> by_node, by_slot;
    for (int pos = 0; pos < layout.size(); ++pos) {
      by_node[layout.node[pos]].push_back(pos);
      by_slot[layout.local[pos]].push_back(pos);
    }
    per_node_ = static_cast<int>(by_node.begin()->second.size());
    nodes_ = static_cast<int>(by_node.size());
    in_node_.resize(static_cast<size_t>(layout.size()));
    in_slot_.resize(static_cast<size_t>(layout.size()));
    for (const auto& groups : {&by_node, &by_slot}) {
      auto& neighbours = groups == &by_node ? in_node_ : in_slot_;
      for (const auto& [key, members] : *groups) {
        const size_t k = members.size();
        for (size_t i = 0; i < k; ++i) {
          neighbours[static_cast<size_t>(members[i])] = {members[(i + 1) % k],
                                                         members[(i + k - 1) % k]};
        }
      }
    }
  }

  int phases() const override { return 3; }
  std::vector<int> phase_latency_steps() const override {
    return {per_node_ - 1, 2 * (nodes_ - 1), per_node_ - 1};
  }
  std::vector<int> phase_forwarding_steps() const override { return phase_latency_steps(); }
  void phase(int pos, int index, CommStep& out) const override {
    out.clear();
    const Neighbours nb =
        index == 1 ? in_slot_[static_cast<size_t>(pos)] : in_node_[static_cast<size_t>(pos)];
    const double shard = bytes_ / per_node_;
    const double volume =
        index == 1 ? 2.0 * (nodes_ - 1) / nodes_ * shard : shard * (per_node_ - 1);
    out.sends.push_back({nb.next, volume});
    out.recvs.push_back(nb.prev);
  }

  int lanes() const override { return 1; }
  int step_count(int, int) const override { return 2 * per_node_ + 2 * (nodes_ - 1) + 1; }
  void step(int pos, int, int index, CommStep& out) const override {
    out.clear();
    // Three rings in sequence: S steps move one chunk each, as steps 0..S of a ring plan.
    const double shard = bytes_ / per_node_;
    const int intra = per_node_ - 1;
    const int inter = 2 * (nodes_ - 1);
    int ring_steps = intra;
    int i = index;
    Neighbours nb = in_node_[static_cast<size_t>(pos)];
    double chunk = shard;
    if (i > intra) {
      i -= intra + 1;
      ring_steps = inter;
      nb = in_slot_[static_cast<size_t>(pos)];
      chunk = shard / nodes_;
      if (i > inter) {
        i -= inter + 1;
        ring_steps = intra;
        nb = in_node_[static_cast<size_t>(pos)];
        chunk = shard;
      }
    }
    if (i > 0) out.recvs.push_back(nb.prev);
    if (i < ring_steps) out.sends.push_back({nb.next, chunk});
  }

 private:
  double bytes_;
  int per_node_ = 1;
  int nodes_ = 1;
  std::vector<Neighbours> in_node_, in_slot_;
};

/// NVLink SHARP all-reduce inside one node: each GPU reads its 1/n shard of every buffer reduced
/// by the NVSwitch (multimem loads: it sends its whole buffer into the switch, shard by shard, and
/// receives its reduced shard), then multicasts that shard to all (it sends S/n, receives the S
/// of all shards). Each GPU's link carries S (n + 1) / n each way, modelled as a shift by one
/// position, times `scale` (the NVLink efficiency over the switch's: NVLS runs at its own rate).
class NvlsPlan final : public CollectivePlan {
 public:
  NvlsPlan(int n, double bytes, double scale) : n_(n), bytes_(bytes * (n + 1.0) / n * scale) {}
  int phases() const override { return 1; }
  std::vector<int> phase_latency_steps() const override { return {1}; }
  void phase(int pos, int, CommStep& out) const override {
    out.clear();
    out.sends.push_back({(pos + 1) % n_, bytes_});
    out.recvs.push_back((pos + n_ - 1) % n_);
  }
  int lanes() const override { return 1; }
  int step_count(int, int) const override { return 2; }
  void step(int pos, int, int index, CommStep& out) const override {
    out.clear();
    if (index == 0)
      out.sends.push_back({(pos + 1) % n_, bytes_});
    else
      out.recvs.push_back((pos + n_ - 1) % n_);
  }

 private:
  int n_;
  double bytes_;
};

/// NCCL's NVLS tree all-reduce across nodes: inside each node NVLink SHARP reduces every
/// buffer into the switch and multicasts the result (each GPU's link carries S (k + 1) / k each
/// way, k GPUs per node, at the switch's rate: see NvlsPlan); across nodes, the members of each
/// slot all-reduce their 1/k shard over a double binary tree of the nodes (each tree half of it,
/// in pipelined chunks), through their own NIC. NCCL pipelines the three stages, so the call
/// is one phase whose busiest link bounds it. Step by step: lane 0 is the node's NVLS exchange,
/// lanes 1-4 each tree up and down, as in TreePlan; the exchange runs beside the trees, not
/// before and after each chunk, so those lanes cost the slowest stage alone.
class NvlsTreePlan final : public CollectivePlan {
 public:
  NvlsTreePlan(const GroupLayout& layout, double bytes, double scale) {
    std::map<int, std::vector<int>> by_node, by_slot;
    std::vector<int> node_order;
    for (int pos = 0; pos < layout.size(); ++pos) {
      auto& members = by_node[layout.node[pos]];
      if (members.empty()) node_order.push_back(layout.node[pos]);
      members.push_back(pos);
    }
    per_node_ = static_cast<int>(by_node.begin()->second.size());
    const int n = layout.size();
    next_in_node_.assign(static_cast<size_t>(n), -1);
    prev_in_node_.assign(static_cast<size_t>(n), -1);
    for (const auto& [node, members] : by_node) {
      const size_t k = members.size();
      for (size_t i = 0; i < k && k > 1; ++i) {
        next_in_node_[static_cast<size_t>(members[i])] = members[(i + 1) % k];
        prev_in_node_[static_cast<size_t>(members[i])] = members[(i + k - 1) % k];
      }
    }
    nvls_bytes_ = per_node_ > 1 ? bytes * (per_node_ + 1.0) / per_node_ * scale : 0.0;
    // Per slot, the nodes' members of that slot form the two trees (heaps; tree 1 mirrored).
    const int nodes = static_cast<int>(node_order.size());
    for (int t = 0; t < 2; ++t) trees_[t].assign(static_cast<size_t>(n), Node{});
    for (int slot = 0; slot < per_node_; ++slot) {
      const auto member = [&](int heap, int t) {
        const int node = node_order[static_cast<size_t>(t == 0 ? heap : nodes - 1 - heap)];
        return by_node.at(node)[static_cast<size_t>(slot)];
      };
      for (int t = 0; t < 2; ++t) {
        for (int heap = 1; heap < nodes; ++heap) {
          const int parent = member((heap - 1) / 2, t), child = member(heap, t);
          trees_[t][static_cast<size_t>(child)].parent = parent;
          trees_[t][static_cast<size_t>(parent)].children.push_back(child);
        }
      }
    }
    for (int t = 0; t < 2; ++t) {
      for (int pos = 0; pos < n; ++pos) {
        int hops = 0;
        for (int at = pos; trees_[t][static_cast<size_t>(at)].parent >= 0;
             at = trees_[t][static_cast<size_t>(at)].parent) {
          ++hops;
        }
        if (hops > depth_) depth_ = hops;
        if (hops > deepest_hops_[t]) {
          deepest_hops_[t] = hops;
          deepest_[t] = pos;
        }
      }
    }
    const double per_tree = bytes / per_node_ / 2;
    chunks_ = pipeline_chunks(per_tree);
    chunk_ = per_tree / chunks_;
  }

  int phases() const override { return 1; }
  std::vector<int> phase_latency_steps() const override {
    return {(per_node_ > 1 ? 1 : 0) + 2 * depth_ + chunks_ - 1};
  }
  std::vector<PipelinePath> phase_paths(int) const override {
    std::vector<PipelinePath> paths;
    for (int t = 0; t < 2; ++t) {
      PipelinePath path{{}, chunk_};
      for (int pos = deepest_[t]; trees_[t][static_cast<size_t>(pos)].parent >= 0;
           pos = trees_[t][static_cast<size_t>(pos)].parent) {
        path.hops.emplace_back(pos, trees_[t][static_cast<size_t>(pos)].parent);
      }
      for (size_t i = path.hops.size(); i-- > 0;) {
        path.hops.emplace_back(path.hops[i].second, path.hops[i].first);
      }
      paths.push_back(std::move(path));
    }
    return paths;
  }
  void phase(int pos, int, CommStep& out) const override {
    out.clear();
    if (next_in_node_[static_cast<size_t>(pos)] >= 0) {
      out.sends.push_back({next_in_node_[static_cast<size_t>(pos)], nvls_bytes_});
      out.recvs.push_back(prev_in_node_[static_cast<size_t>(pos)]);
    }
    const double half = chunk_ * chunks_;
    for (int t = 0; t < 2; ++t) {
      const Node& node = trees_[t][static_cast<size_t>(pos)];
      if (node.parent >= 0) out.sends.push_back({node.parent, half});
      for (int child : node.children) out.sends.push_back({child, half});
      out.recvs.insert(out.recvs.end(), node.children.begin(), node.children.end());
      if (node.parent >= 0) out.recvs.push_back(node.parent);
    }
  }
  bool steps_follow_the_algorithm() const override { return false; }
  int lanes() const override { return 5; }
  int lane_mailboxes(int lane) const override { return lane == 0 ? 0 : 1 + (lane - 1) / 2; }
  int step_count(int pos, int lane) const override {
    if (lane == 0) return next_in_node_[static_cast<size_t>(pos)] >= 0 ? 2 : 0;
    const bool root = trees_[(lane - 1) / 2][static_cast<size_t>(pos)].parent < 0;
    return (lane - 1) % 2 == 0 && root ? 0 : chunks_;
  }
  void step(int pos, int lane, int index, CommStep& out) const override {
    out.clear();
    if (lane == 0) {
      if (index == 0)
        out.sends.push_back({next_in_node_[static_cast<size_t>(pos)], nvls_bytes_});
      else
        out.recvs.push_back(prev_in_node_[static_cast<size_t>(pos)]);
      return;
    }
    const Node& node = trees_[(lane - 1) / 2][static_cast<size_t>(pos)];
    if ((lane - 1) % 2 == 0) {  // up
      out.recvs = node.children;
      out.sends.push_back({node.parent, chunk_});
      return;
    }
    if (node.parent >= 0) {
      out.recvs.push_back(node.parent);
    } else {
      out.recvs = node.children;
    }
    for (int child : node.children) out.sends.push_back({child, chunk_});
  }

 private:
  using Node = CollectivePlanner::TreeNode;

  int per_node_ = 1;
  std::vector<int> next_in_node_, prev_in_node_;
  double nvls_bytes_ = 0;
  std::vector<Node> trees_[2];
  int depth_ = 0;
  int deepest_[2] = {0, 0};
  int deepest_hops_[2] = {0, 0};
  int chunks_ = 1;
  double chunk_ = 0;
};

/// All-to-all (pairwise exchange by shifts) and send/receive (a shift by one), scheduled as NCCL
/// schedules grouped point-to-point operations: shift s sends to position + s and receives from
/// position - s, and `p2p_channels` shifts run at once. Coarse: one phase per round of shifts.
/// Step by step: the shifts are dealt round-robin to that many lanes; in a lane, a shift starts
/// when the previous one has been received.
class DirectPlan final : public CollectivePlan {
 public:
  DirectPlan(CollectiveOp op, int n, double bytes, int p2p_channels)
      : n_(n),
        shifts_(op == CollectiveOp::all_to_all ? n - 1 : 1),
        lanes_(std::clamp(p2p_channels, 1, std::max(1, shifts_))),
        bytes_(op == CollectiveOp::all_to_all ? bytes / n : bytes) {}
  int phases() const override { return (shifts_ + lanes_ - 1) / lanes_; }
  std::vector<int> phase_latency_steps() const override {
    return std::vector<int>(static_cast<size_t>(phases()), 1);
  }
  void phase(int pos, int index, CommStep& out) const override {
    out.clear();
    const int last = std::min(shifts_, (index + 1) * lanes_);
    for (int shift = 1 + index * lanes_; shift <= last; ++shift) {
      out.sends.push_back({(pos + shift) % n_, bytes_});
      out.recvs.push_back((pos + n_ - shift) % n_);
    }
  }
  int lanes() const override { return lanes_; }
  int lane_mailboxes(int) const override { return 0; }  // every shift has its own pairs
  int step_count(int, int lane) const override { return shifts_in(lane) + 1; }
  void step(int pos, int lane, int index, CommStep& out) const override {
    // Step i receives the lane's shift i - 1 and sends its shift i.
    out.clear();
    if (index > 0) out.recvs.push_back((pos + n_ - shift(lane, index - 1)) % n_);
    if (index < shifts_in(lane)) out.sends.push_back({(pos + shift(lane, index)) % n_, bytes_});
  }

 private:
  int shifts_in(int lane) const { return (shifts_ - lane + lanes_ - 1) / lanes_; }
  int shift(int lane, int i) const { return 1 + lane + i * lanes_; }

  int n_;
  int shifts_;
  int lanes_;  ///< shifts at once
  double bytes_;
};

}  // namespace

CollectivePlanner::CollectivePlanner(GroupLayout layout, int channels, int p2p_channels,
                                     double nvls_scale)
    : layout_(std::move(layout)),
      p2p_channels_(std::max(1, p2p_channels)),
      nvls_scale_(nvls_scale) {
  const int n = layout_.size();
  // Members by node (nodes in order of first appearance), in position order.
  std::map<int, std::vector<int>> by_node;
  std::vector<int> node_order;
  for (int pos = 0; pos < n; ++pos) {
    auto& members = by_node[layout_.node[pos]];
    if (members.empty()) node_order.push_back(layout_.node[pos]);
    members.push_back(pos);
  }
  channels = std::max(1, channels);
  // Rings order each node's members by slot.
  for (auto& [node, members] : by_node) {
    std::stable_sort(members.begin(), members.end(),
                     [&](int a, int b) { return layout_.local[a] < layout_.local[b]; });
  }
  for (int c = 0; c < channels; ++c) {
    std::vector<int> order;
    order.reserve(static_cast<size_t>(n));
    for (int node : node_order) {
      const auto& members = by_node[node];
      const size_t k = members.size();
      for (size_t i = 0; i < k; ++i) order.push_back(members[(i + static_cast<size_t>(c)) % k]);
    }
    std::vector<int> index(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) index[static_cast<size_t>(order[static_cast<size_t>(i)])] = i;
    ring_order_.push_back(std::move(order));
    ring_index_.push_back(std::move(index));
  }
}

const std::vector<CollectivePlanner::DoubleTree>& CollectivePlanner::trees() const {
  if (!trees_.empty()) return trees_;
  std::map<int, std::vector<int>> by_node;
  std::vector<int> node_order;
  for (int pos = 0; pos < layout_.size(); ++pos) {
    auto& members = by_node[layout_.node[pos]];
    if (members.empty()) node_order.push_back(layout_.node[pos]);
    members.push_back(pos);
  }
  for (int c = 0; c < channels(); ++c) trees_.push_back(build_trees(by_node, node_order, c));
  return trees_;
}

CollectivePlanner::DoubleTree CollectivePlanner::build_trees(
    const std::map<int, std::vector<int>>& by_node, const std::vector<int>& node_order,
    int c) const {
  // NCCL's double binary tree: inside a node its members (in position order, starting at the
  // channel's) form a chain below the first; the nodes' first members form a binary tree (a heap;
  // tree 1 numbers the nodes backwards, so that a node inside one tree is mostly a leaf of the
  // other).
  DoubleTree result;
  const int nodes = static_cast<int>(node_order.size());
  const auto member = [&](int node, size_t i) {
    const auto& members = by_node.at(node);
    return members[(i + static_cast<size_t>(c)) % members.size()];
  };
  for (int t = 0; t < 2; ++t) {
    std::vector<TreeNode>& tree = result.tree[t];
    tree.assign(static_cast<size_t>(layout_.size()), TreeNode{});
    const auto link = [&](int parent, int child) {
      tree[static_cast<size_t>(child)].parent = parent;
      tree[static_cast<size_t>(parent)].children.push_back(child);
    };
    for (int node : node_order) {
      for (size_t i = 1; i < by_node.at(node).size(); ++i)
        link(member(node, i - 1), member(node, i));
    }
    const auto head = [&](int heap) {
      return member(node_order[static_cast<size_t>(t == 0 ? heap : nodes - 1 - heap)], 0);
    };
    for (int heap = 1; heap < nodes; ++heap) link(head((heap - 1) / 2), head(heap));
    int deepest_hops = 0;
    for (int pos = 0; pos < layout_.size(); ++pos) {
      int hops = 0;
      for (int at = pos; tree[static_cast<size_t>(at)].parent >= 0;
           at = tree[static_cast<size_t>(at)].parent) {
        ++hops;
      }
      if (hops > deepest_hops) {
        deepest_hops = hops;
        result.deepest[t] = pos;
      }
    }
    tree_depth_ = std::max(tree_depth_, deepest_hops);
  }
  return result;
}

bool CollectivePlanner::supports(CollectiveOp op, Algorithm algorithm, bool sharp) const {
  const auto candidates = algorithms_for(op);
  if (std::find(candidates.begin(), candidates.end(), algorithm) == candidates.end()) return false;
  switch (algorithm) {
    case Algorithm::nvls:
      return sharp && layout_.single_node() && layout_.size() > 1;
    case Algorithm::nvls_tree:
      return sharp && !layout_.single_node() && layout_.uniform_members_per_node() > 0;
    case Algorithm::hierarchical:
      return !layout_.single_node() && layout_.uniform_members_per_node() > 1;
    default:
      return true;
  }
}

std::unique_ptr<CollectivePlan> CollectivePlanner::plan(CollectiveOp op, Algorithm algorithm,
                                                        double bytes, int root) const {
  const int n = layout_.size();
  switch (algorithm) {
    case Algorithm::ring:
      return std::make_unique<RingPlan>(*this, op, bytes, root);
    case Algorithm::tree:
      return std::make_unique<TreePlan>(*this, bytes);
    case Algorithm::hierarchical:
      return std::make_unique<HierarchicalPlan>(layout_, bytes);
    case Algorithm::nvls:
      return std::make_unique<NvlsPlan>(n, bytes, nvls_scale_);
    case Algorithm::direct:
      return std::make_unique<DirectPlan>(op, n, bytes, p2p_channels_);
    case Algorithm::nvls_tree:
      return std::make_unique<NvlsTreePlan>(layout_, bytes, nvls_scale_);
    case Algorithm::automatic:
      break;
  }
  assert(false && "plan() needs a concrete algorithm");
  return nullptr;
}

}  // namespace prismsim
