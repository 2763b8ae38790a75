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
  constexpr double kChunkBytes = 512.0 * 1024;
  return static_cast<int>(std::clamp(std::ceil(bytes / kChunkBytes), 1.0, 64.0));
}

namespace {

/// Ring collectives over several channels, each moving 1/channels of the data.
class RingPlan final : public CollectivePlan {
 public:
  RingPlan(const CollectivePlanner& planner, CollectiveOp op, double bytes, bool coarse, int root)
      : planner_(planner), op_(op), coarse_(coarse), root_(root) {
    const int n = planner.layout().size();
    const double per_channel = bytes / planner.channels();
    switch (op) {
      case CollectiveOp::all_reduce:
        steps_ = 2 * (n - 1);
        chunk_ = per_channel / n;
        break;
      case CollectiveOp::all_gather:
      case CollectiveOp::reduce_scatter:
        steps_ = n - 1;
        chunk_ = per_channel / n;
        break;
      default:  // broadcast and reduce: a pipelined chain along the ring
        chunks_ = pipeline_chunks(per_channel);
        steps_ = chunks_ + 1;
        chunk_ = per_channel / chunks_;
        chain_ = true;
        break;
    }
  }

  int step_count(int) const override { return coarse_ ? 1 : steps_; }

  std::vector<int> phase_latency_steps() const override {
    const int n = planner_.layout().size();
    return {chain_ ? n - 1 + chunks_ - 1 : steps_};
  }

  void step(int pos, int index, CommStep& out) const override {
    out.clear();
    const int n = planner_.layout().size();
    for (int c = 0; c < planner_.channels(); ++c) {
      const auto& order = planner_.ring(c);
      const int i = planner_.ring_index(c)[static_cast<size_t>(pos)];
      const int next = order[static_cast<size_t>((i + 1) % n)];
      const int prev = order[static_cast<size_t>((i + n - 1) % n)];
      if (!chain_) {
        out.sends.push_back({next, coarse_ ? chunk_ * steps_ : chunk_});
        out.recvs.push_back(prev);
        continue;
      }
      // Chain: broadcast flows from the root along the ring; reduce flows towards the root.
      const int root_index = planner_.ring_index(c)[static_cast<size_t>(root_)];
      const bool forward = op_ == CollectiveOp::broadcast;
      const int distance = forward ? (i - root_index + n) % n : (root_index - i + n) % n;
      const int downstream = forward ? next : prev;
      const int upstream = forward ? prev : next;
      const bool first = distance == 0;
      const bool last = distance == n - 1;
      if (coarse_) {
        if (!last) out.sends.push_back({downstream, chunk_ * chunks_});
        if (!first) out.recvs.push_back(upstream);
        continue;
      }
      // Step j: receive chunk j, pass on chunk j-1 (the first member sends chunk j at step j).
      if (first) {
        if (index < chunks_) out.sends.push_back({downstream, chunk_});
        continue;
      }
      if (index < chunks_) out.recvs.push_back(upstream);
      if (!last && index >= 1) out.sends.push_back({downstream, chunk_});
    }
  }

 private:
  const CollectivePlanner& planner_;
  CollectiveOp op_;
  bool coarse_;
  int root_;
  int steps_ = 0;
  int chunks_ = 1;
  double chunk_ = 0;
  bool chain_ = false;
};

/// Double binary tree all-reduce: two trees each reduce then broadcast half of the data, in
/// pipelined chunks; a rank inside one tree is a leaf of the other.
class TreePlan final : public CollectivePlan {
 public:
  TreePlan(int n, double bytes, bool coarse) : n_(n), coarse_(coarse) {
    chunks_ = pipeline_chunks(bytes / 2);
    chunk_ = bytes / 2 / chunks_;
    for (int d = 1; d < n; d *= 2) ++depth_;
  }

  int step_count(int) const override { return coarse_ ? 1 : 2 * (chunks_ + 1); }
  std::vector<int> phase_latency_steps() const override { return {2 * depth_ + chunks_ - 1}; }

  void step(int pos, int index, CommStep& out) const override {
    out.clear();
    for (int tree = 0; tree < 2; ++tree) {
      // Tree 0 is the heap-ordered binary tree; tree 1 mirrors the positions.
      auto to_tree = [&](int p) { return tree == 0 ? p : n_ - 1 - p; };
      const int me = to_tree(pos);
      const int parent = me == 0 ? -1 : to_tree((me - 1) / 2);
      std::vector<int> children;
      for (int child = 2 * me + 1; child <= 2 * me + 2 && child < n_; ++child) {
        children.push_back(to_tree(child));
      }
      if (coarse_) {
        const double half = chunk_ * chunks_;
        if (parent >= 0) out.sends.push_back({parent, half});
        for (int child : children) out.sends.push_back({child, half});
        for (int child : children) out.recvs.push_back(child);
        if (parent >= 0) out.recvs.push_back(parent);
        continue;
      }
      const bool reducing = index <= chunks_;
      const int j = reducing ? index : index - (chunks_ + 1);
      if (reducing) {
        // Reduce: receive chunk j from the children, send chunk j-1 up (leaves send chunk j).
        if (children.empty()) {
          if (j < chunks_ && parent >= 0) out.sends.push_back({parent, chunk_});
        } else {
          if (j < chunks_) out.recvs.insert(out.recvs.end(), children.begin(), children.end());
          if (parent >= 0 && j >= 1) out.sends.push_back({parent, chunk_});
        }
      } else {
        // Broadcast: receive chunk j from the parent, send chunk j-1 down (the root sends j).
        if (parent < 0) {
          if (j < chunks_) {
            for (int child : children) out.sends.push_back({child, chunk_});
          }
        } else {
          if (j < chunks_) out.recvs.push_back(parent);
          if (j >= 1) {
            for (int child : children) out.sends.push_back({child, chunk_});
          }
        }
      }
    }
  }

 private:
  int n_;
  bool coarse_;
  int chunks_ = 1;
  int depth_ = 0;
  double chunk_ = 0;
};

/// Hierarchical all-reduce: ring reduce-scatter among each node's members, ring all-reduce of each
/// shard among the members of one slot across nodes (one ring per rail), ring all-gather in node.
class HierarchicalPlan final : public CollectivePlan {
 public:
  HierarchicalPlan(const GroupLayout& layout, double bytes, bool coarse)
      : coarse_(coarse), bytes_(bytes) {
    const int n = layout.size();
    for (int pos = 0; pos < n; ++pos) {
      by_node_[layout.node[pos]].push_back(pos);
      by_slot_[layout.local[pos]].push_back(pos);
    }
    per_node_ = static_cast<int>(by_node_.begin()->second.size());
    nodes_ = static_cast<int>(by_node_.size());
    index_in_node_.assign(static_cast<size_t>(n), 0);
    index_in_slot_.assign(static_cast<size_t>(n), 0);
    node_of_.assign(static_cast<size_t>(n), 0);
    slot_of_.assign(static_cast<size_t>(n), 0);
    for (auto& [node, members] : by_node_) {
      for (size_t i = 0; i < members.size(); ++i) {
        index_in_node_[members[i]] = static_cast<int>(i);
        node_of_[members[i]] = node;
      }
    }
    for (auto& [slot, members] : by_slot_) {
      for (size_t i = 0; i < members.size(); ++i) {
        index_in_slot_[members[i]] = static_cast<int>(i);
        slot_of_[members[i]] = slot;
      }
    }
  }

  int intra_steps() const { return per_node_ - 1; }
  int inter_steps() const { return 2 * (nodes_ - 1); }

  int step_count(int) const override {
    return coarse_ ? 3 : 2 * intra_steps() + inter_steps();
  }
  std::vector<int> phase_latency_steps() const override {
    return {intra_steps(), inter_steps(), intra_steps()};
  }

  void step(int pos, int index, CommStep& out) const override {
    out.clear();
    const auto& node_ring = by_node_.at(node_of_[pos]);
    const auto& slot_ring = by_slot_.at(slot_of_[pos]);
    int phase = 0;
    if (coarse_) {
      phase = index;
    } else if (index >= intra_steps() + inter_steps()) {
      phase = 2;
    } else if (index >= intra_steps()) {
      phase = 1;
    }
    const double shard = bytes_ / per_node_;
    if (phase == 1) {
      if (nodes_ < 2) return;
      const int i = index_in_slot_[pos];
      const double chunk = shard / nodes_;
      out.sends.push_back({slot_ring[static_cast<size_t>((i + 1) % nodes_)],
                           coarse_ ? chunk * inter_steps() : chunk});
      out.recvs.push_back(slot_ring[static_cast<size_t>((i + nodes_ - 1) % nodes_)]);
      return;
    }
    if (per_node_ < 2) return;
    const int i = index_in_node_[pos];
    out.sends.push_back({node_ring[static_cast<size_t>((i + 1) % per_node_)],
                         coarse_ ? shard * intra_steps() : shard});
    out.recvs.push_back(node_ring[static_cast<size_t>((i + per_node_ - 1) % per_node_)]);
  }

 private:
  bool coarse_;
  double bytes_;
  int per_node_ = 1;
  int nodes_ = 1;
  std::map<int, std::vector<int>> by_node_;
  std::map<int, std::vector<int>> by_slot_;
  std::vector<int> index_in_node_, index_in_slot_, node_of_, slot_of_;
};

/// NVLink SHARP all-reduce inside one node: every GPU sends its buffer into the NVSwitch, which
/// reduces and multicasts the result back; each GPU's link carries the buffer once each way.
class NvlsPlan final : public CollectivePlan {
 public:
  NvlsPlan(int n, double bytes) : n_(n), bytes_(bytes) {}
  int step_count(int) const override { return 1; }
  std::vector<int> phase_latency_steps() const override { return {1}; }
  void step(int pos, int, CommStep& out) const override {
    out.clear();
    // A shift by one position loads each GPU's up and down NVLink with the buffer exactly once.
    out.sends.push_back({(pos + 1) % n_, bytes_});
    out.recvs.push_back((pos + n_ - 1) % n_);
  }

 private:
  int n_;
  double bytes_;
};

/// All-to-all (pairwise exchange by shifts) and send/receive (a shift by one).
class DirectPlan final : public CollectivePlan {
 public:
  DirectPlan(CollectiveOp op, int n, double bytes, bool coarse)
      : n_(n), coarse_(coarse), shifts_(op == CollectiveOp::all_to_all ? n - 1 : 1),
        bytes_(op == CollectiveOp::all_to_all ? bytes / n : bytes) {}
  int step_count(int) const override { return coarse_ ? 1 : shifts_; }
  std::vector<int> phase_latency_steps() const override { return {shifts_}; }
  void step(int pos, int index, CommStep& out) const override {
    out.clear();
    const int first = coarse_ ? 1 : index + 1;
    const int last = coarse_ ? shifts_ : index + 1;
    for (int shift = first; shift <= last; ++shift) {
      out.sends.push_back({(pos + shift) % n_, bytes_});
      out.recvs.push_back((pos + n_ - shift) % n_);
    }
  }

 private:
  int n_;
  bool coarse_;
  int shifts_;
  double bytes_;
};

}  // namespace

CollectivePlanner::CollectivePlanner(GroupLayout layout, int channels)
    : layout_(std::move(layout)) {
  const int n = layout_.size();
  // Members by node (nodes in order of first appearance), ordered by slot within a node.
  std::map<int, std::vector<int>> by_node;
  std::vector<int> node_order;
  for (int pos = 0; pos < n; ++pos) {
    auto& members = by_node[layout_.node[pos]];
    if (members.empty()) node_order.push_back(layout_.node[pos]);
    members.push_back(pos);
  }
  for (auto& [node, members] : by_node) {
    std::stable_sort(members.begin(), members.end(),
                     [&](int a, int b) { return layout_.local[a] < layout_.local[b]; });
  }
  channels = std::max(1, channels);
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

bool CollectivePlanner::supports(CollectiveOp op, Algorithm algorithm, bool sharp) const {
  const auto candidates = algorithms_for(op);
  if (std::find(candidates.begin(), candidates.end(), algorithm) == candidates.end()) return false;
  switch (algorithm) {
    case Algorithm::nvls: return sharp && layout_.single_node() && layout_.size() > 1;
    case Algorithm::hierarchical:
      return !layout_.single_node() && layout_.uniform_members_per_node() > 1;
    default: return true;
  }
}

std::unique_ptr<CollectivePlan> CollectivePlanner::plan(CollectiveOp op, Algorithm algorithm,
                                                        double bytes, bool coarse,
                                                        int root) const {
  const int n = layout_.size();
  switch (algorithm) {
    case Algorithm::ring: return std::make_unique<RingPlan>(*this, op, bytes, coarse, root);
    case Algorithm::tree: return std::make_unique<TreePlan>(n, bytes, coarse);
    case Algorithm::hierarchical: return std::make_unique<HierarchicalPlan>(layout_, bytes, coarse);
    case Algorithm::nvls: return std::make_unique<NvlsPlan>(n, bytes);
    case Algorithm::direct: return std::make_unique<DirectPlan>(op, n, bytes, coarse);
    case Algorithm::automatic: break;
  }
  assert(false && "plan() needs a concrete algorithm");
  return nullptr;
}

}  // namespace prismsim
