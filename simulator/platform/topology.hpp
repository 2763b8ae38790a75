#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/scenario.hpp"

namespace prismsim {

/// Where a GPU sits: datacenter, node (numbered across the whole platform) and slot in the node.
struct GpuLocation {
  int datacenter = 0;
  int node = 0;
  int local = 0;
};

/// One simulated network resource (one direction of a physical link or bundle).
struct TopologyLink {
  double bandwidth_Bps = 0;
  double latency_s = 0;
  /// False for a bundle that the NICs below it can never fill (a non-blocking tier): it never
  /// limits a flow, so the simulated network leaves it out of routes (keeping its latency).
  bool can_saturate = true;
};

/// The network seen by one representative of each orbit of a symmetry (see Topology::quotient).
/// Empty vectors: every link is its own.
struct LinkQuotient {
  std::vector<int> canonical;  ///< per link: the link of its orbit that carries its flows
  std::vector<int> copies;     ///< per link: symmetric copies of each flow that cross it
};

/// The platform's network as plain links and routes, without SimGrid.
///
/// Every GPU has an NVLink port to its node's NVSwitch and one NIC, each one link per direction.
/// Each datacenter's fabric is a fat-tree whose switches of one tier are modelled as one
/// non-blocking switch per group of NICs, joined to the tier above by one "bundle" link per
/// direction carrying the group's aggregate uplink bandwidth (ideal ECMP). NICs attach to leaves
/// by node (fat_tree) or by rail (rail_optimized: NIC i of every node on rail i's leaves).
/// Link bandwidths are effective ones (nominal x efficiency). Datacenters are joined
/// by direct WAN links, optionally with per-GPU paths (WanLinkSpec::path_bandwidth_Bps) that
/// every cross-datacenter flow also crosses at either end. Latencies add along a route: NVLink
/// latency inside a node; NIC latency plus one hop latency per switch crossed across nodes; WAN
/// latency between datacenters.
class Topology {
 public:
  explicit Topology(const PlatformSpec& spec);

  int gpu_count() const { return gpu_count_; }
  int gpus_per_node() const { return gpus_per_node_; }
  GpuLocation locate(int gpu) const;
  const std::vector<TopologyLink>& links() const { return links_; }
  /// A readable, unique name for a link ("gpu12-nvlink-up", "dc0-t1-g3-up", "wan-dc0-dc1").
  std::string link_name(int link) const;

  /// Appends the links crossed from `src` to `dst` (GPU indices), in order.
  void route(int src, int dst, std::vector<int>& out) const;
  /// The link from `gpu` to its node's NVSwitch.
  int nvlink_up_link(int gpu) const { return gpu * kPortsPerGpu + kNvlinkUp; }
  /// Sum of the latencies along route(src, dst), in seconds.
  double route_latency(int src, int dst) const;
  int datacenter_count() const { return static_cast<int>(dc_names_.size()); }
  /// True for links that carry traffic between nodes: NICs, fabric bundles and WAN links.
  bool is_inter_node(int link) const {
    return link >= first_bundle_link_ || link % kPortsPerGpu >= kNicUp;
  }
  /// The WAN link from datacenter `from` to `to`, or -1 when there is none.
  int wan_link(int from, int to) const {
    return wan_link_[static_cast<size_t>(from * datacenter_count() + to)];
  }
  /// Replaces a link's latency (a per-run draw of a WAN round-trip time).
  void set_latency(int link, double latency_s) {
    links_[static_cast<size_t>(link)].latency_s = latency_s;
  }
  /// Within one node, across nodes of one datacenter, or across datacenters.
  CommScope scope_of(const std::vector<int>& gpus) const;
  /// Nodes whose NICs share one leaf switch (of one rail, when rail-optimised).
  int nodes_per_leaf() const;
  /// True when no link outside the GPUs' own NVLink and NIC links can limit a flow (non-blocking
  /// fabric, one datacenter): flows of different GPUs then never share a constraint.
  bool only_gpu_links_saturate() const;
  /// The quotient of the network by the permutation `gpu_image` of GPUs (applied repeatedly: the
  /// cyclic group it generates), or nothing when it is not a symmetry of the network: it must
  /// map nodes to nodes, leaves and every tier's switch groups to their like, keep every GPU in
  /// its datacenter, and each link to a link of equal bandwidth and latency; then it maps routes
  /// to routes. A link's copies is the group's order over its orbit's length (how many elements
  /// fix it): flows that are images of each other get equal max-min rates, so the flows of one
  /// representative per orbit, on links of bandwidth / copies, get the full network's rates
  /// (docs/design.md, "Symmetry on shared links").
  std::optional<LinkQuotient> quotient(const std::vector<int>& gpu_image) const;

 private:
  enum Port { kNvlinkUp = 0, kNvlinkDown = 1, kNicUp = 2, kNicDown = 3, kPortsPerGpu = 4 };

  int bundle(int dc, int tier, int64_t group, bool up) const;
  /// Index of the leaf switch of `gpu`'s NIC within its datacenter.
  int64_t leaf_of(int gpu) const;
  int64_t group_of(int gpu, int tier) const;

  std::vector<std::string> dc_names_;
  int gpu_count_ = 0;
  int gpus_per_node_ = 1;
  int levels_ = 1;
  FabricKind kind_ = FabricKind::fat_tree;
  int64_t nics_per_leaf_ = 1;
  std::vector<int64_t> leaves_below_;          ///< per tier: leaves under one switch of that tier
  std::vector<int> dc_first_gpu_;              ///< per datacenter, plus the total at the end
  std::vector<std::vector<int>> bundle_base_;  ///< [dc][tier] first link id of that tier's bundles
  std::vector<int> wan_link_;                  ///< [from * dcs + to] link id, or -1
  /// [from * dcs + to]: first of the per-GPU WAN paths out of `from` (one per GPU of `from`, in
  /// GPU order), then into `to` (one per GPU of `to`); -1 without paths
  std::vector<int> wan_path_out_, wan_path_in_;
  int first_bundle_link_ = 0;
  int first_wan_link_ = 0;
  std::vector<TopologyLink> links_;
};

}  // namespace prismsim
