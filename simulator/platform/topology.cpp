#include "platform/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <numeric>
#include <stdexcept>

namespace prismsim {

Topology::Topology(const PlatformSpec& spec)
    : gpus_per_node_(spec.gpus_per_node), levels_(spec.fabric.levels), kind_(spec.fabric.kind) {
  const FabricSpec& fabric = spec.fabric;
  nics_per_leaf_ = fabric.leaf_nics(gpus_per_node_);
  leaves_below_.assign(static_cast<size_t>(levels_) + 1, 1);
  for (int tier = 2; tier <= levels_; ++tier) {
    leaves_below_[tier] = leaves_below_[tier - 1] * fabric.down_ports(tier);
  }

  for (const auto& dc : spec.datacenters) {
    dc_names_.push_back(dc.name);
    dc_first_gpu_.push_back(gpu_count_);
    gpu_count_ += dc.nodes * spec.gpus_per_node;
  }
  dc_first_gpu_.push_back(gpu_count_);

  links_.reserve(static_cast<size_t>(gpu_count_) * kPortsPerGpu);
  const double hop = fabric.hop_latency_s;
  const double nvlink_Bps = spec.nvlink.effective_bandwidth_Bps();
  const double nic_Bps = spec.nic.effective_bandwidth_Bps();
  for (int gpu = 0; gpu < gpu_count_; ++gpu) {
    links_.push_back({nvlink_Bps, spec.nvlink.latency_s});
    links_.push_back({nvlink_Bps, 0.0});
    links_.push_back({nic_Bps, spec.nic.latency_s + hop});
    links_.push_back({nic_Bps, 0.0});
  }

  first_bundle_link_ = static_cast<int>(links_.size());
  bundle_base_.resize(dc_names_.size());
  for (size_t dc = 0; dc < dc_names_.size(); ++dc) {
    const int64_t leaves = leaf_of(dc_first_gpu_[dc + 1] - 1) + 1;
    bundle_base_[dc].assign(static_cast<size_t>(levels_), 0);
    for (int tier = 1; tier < levels_; ++tier) {
      bundle_base_[dc][tier] = static_cast<int>(links_.size());
      const int64_t groups = (leaves + leaves_below_[tier] - 1) / leaves_below_[tier];
      const double ratio = fabric.oversubscription.at(static_cast<size_t>(tier - 1));
      const auto nics = static_cast<double>(fabric.nics_below(tier, gpus_per_node_));
      const double uplink_Bps = nics * fabric.port_bandwidth_Bps * spec.nic.efficiency / ratio;
      // Every flow through a bundle comes from (or goes to) a NIC below it.
      const bool can_saturate = uplink_Bps < nics * nic_Bps * (1 - 1e-12);
      for (int64_t g = 0; g < groups; ++g) {
        links_.push_back({uplink_Bps, hop, can_saturate});
        links_.push_back({uplink_Bps, hop, can_saturate});
      }
    }
  }

  first_wan_link_ = static_cast<int>(links_.size());
  const size_t dcs = dc_names_.size();
  wan_link_.assign(dcs * dcs, -1);
  auto index_of = [&](const std::string& name) {
    for (size_t i = 0; i < dcs; ++i) {
      if (dc_names_[i] == name) return i;
    }
    throw std::logic_error("WAN link names an unknown datacenter: " + name);
  };
  for (const auto& wan : spec.wan) {
    const size_t a = index_of(wan.from);
    const size_t b = index_of(wan.to);
    const double wan_Bps = wan.link.effective_bandwidth_Bps();
    wan_link_[a * dcs + b] = static_cast<int>(links_.size());
    links_.push_back({wan_Bps, wan.link.latency_s + hop});
    wan_link_[b * dcs + a] = static_cast<int>(links_.size());
    links_.push_back({wan_Bps, wan.link.latency_s + hop});
  }
  wan_path_out_.assign(dcs * dcs, -1);
  wan_path_in_.assign(dcs * dcs, -1);
  for (const auto& wan : spec.wan) {
    if (wan.path_bandwidth_Bps <= 0) continue;
    const size_t a = index_of(wan.from);
    const size_t b = index_of(wan.to);
    const double path_Bps = wan.path_bandwidth_Bps * wan.link.efficiency;
    for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
      wan_path_out_[from * dcs + to] = static_cast<int>(links_.size());
      links_.insert(links_.end(),
                    static_cast<size_t>(dc_first_gpu_[from + 1] - dc_first_gpu_[from]),
                    TopologyLink{path_Bps, 0.0});
      wan_path_in_[from * dcs + to] = static_cast<int>(links_.size());
      links_.insert(links_.end(), static_cast<size_t>(dc_first_gpu_[to + 1] - dc_first_gpu_[to]),
                    TopologyLink{path_Bps, 0.0});
    }
  }
}

CommScope Topology::scope_of(const std::vector<int>& gpus) const {
  if (gpus.empty()) return CommScope::intra_node;
  const GpuLocation first = locate(gpus.front());
  CommScope scope = CommScope::intra_node;
  for (int gpu : gpus) {
    const GpuLocation at = locate(gpu);
    if (at.datacenter != first.datacenter) return CommScope::cross_datacenter;
    if (at.node != first.node) scope = CommScope::inter_node;
  }
  return scope;
}

int Topology::nodes_per_leaf() const {
  const int64_t nodes =
      kind_ == FabricKind::rail_optimized ? nics_per_leaf_ : nics_per_leaf_ / gpus_per_node_;
  return static_cast<int>(std::max<int64_t>(1, nodes));
}

bool Topology::only_gpu_links_saturate() const {
  for (size_t link = static_cast<size_t>(first_bundle_link_); link < links_.size(); ++link) {
    if (links_[link].can_saturate) return false;
  }
  return true;
}

std::optional<LinkQuotient> Topology::quotient(const std::vector<int>& gpu_image) const {
  assert(static_cast<int>(gpu_image.size()) == gpu_count_);
  // The map induced on links (and nodes), defined by each GPU's image; a second, different
  // image of a link or node means the permutation is no symmetry.
  std::vector<int> image(links_.size(), -1);
  std::vector<int> node_image(static_cast<size_t>(gpu_count_ / gpus_per_node_), -1);
  bool consistent = true;
  auto map = [&](std::vector<int>& into, int from, int to) {
    int& slot = into[static_cast<size_t>(from)];
    consistent = consistent && (slot == -1 || slot == to);
    slot = to;
  };
  const size_t dcs = dc_names_.size();
  for (int gpu = 0; gpu < gpu_count_ && consistent; ++gpu) {
    const int to = gpu_image[static_cast<size_t>(gpu)];
    const GpuLocation a = locate(gpu), b = locate(to);
    // Datacenters stay put, and with them the WAN links (whose round trips are drawn per link).
    if (a.datacenter != b.datacenter) return std::nullopt;
    const int dc = a.datacenter;
    map(node_image, a.node, b.node);
    for (int port = 0; port < kPortsPerGpu; ++port) {
      map(image, gpu * kPortsPerGpu + port, to * kPortsPerGpu + port);
    }
    for (int tier = 1; tier < levels_; ++tier) {
      for (bool up : {true, false}) {
        map(image, bundle(dc, tier, group_of(gpu, tier), up),
            bundle(dc, tier, group_of(to, tier), up));
      }
    }
    const int first = dc_first_gpu_[static_cast<size_t>(dc)];
    for (size_t other = 0; other < dcs; ++other) {
      if (const int out = wan_path_out_[dc * dcs + other]; out >= 0) {
        map(image, out + gpu - first, out + to - first);
      }
      if (const int in = wan_path_in_[other * dcs + dc]; in >= 0) {
        map(image, in + gpu - first, in + to - first);
      }
    }
  }
  if (!consistent) return std::nullopt;
  // The order of the group: the least common multiple of the GPU permutation's cycle lengths.
  int64_t order = 1;
  std::vector<char> seen(static_cast<size_t>(gpu_count_), 0);
  for (int gpu = 0; gpu < gpu_count_; ++gpu) {
    int64_t length = 0;
    for (int g = gpu; !seen[static_cast<size_t>(g)]; g = gpu_image[static_cast<size_t>(g)]) {
      seen[static_cast<size_t>(g)] = 1;
      ++length;
    }
    if (length > 0) order = std::lcm(order, length);
    // A shift of tensor-parallel positions has order tp; refusing larger orders keeps the lcm
    // from overflowing.
    if (order > gpu_count_) return std::nullopt;
  }
  LinkQuotient quotient;
  quotient.canonical.assign(links_.size(), -1);
  quotient.copies.assign(links_.size(), 1);
  for (size_t link = 0; link < links_.size(); ++link) {
    if (image[link] == -1) image[link] = static_cast<int>(link);  // WAN links: fixed
    const TopologyLink& x = links_[link];
    const TopologyLink& y = links_[static_cast<size_t>(image[link])];
    if (x.bandwidth_Bps != y.bandwidth_Bps || x.latency_s != y.latency_s ||
        x.can_saturate != y.can_saturate) {
      return std::nullopt;
    }
  }
  for (size_t link = 0; link < links_.size(); ++link) {
    if (quotient.canonical[link] >= 0) continue;
    int64_t length = 0;
    int l = static_cast<int>(link);
    for (; quotient.canonical[static_cast<size_t>(l)] < 0; l = image[static_cast<size_t>(l)]) {
      quotient.canonical[static_cast<size_t>(l)] = static_cast<int>(link);
      ++length;
    }
    // A consistent map of a permutation is a permutation: the walk closes where it began.
    if (l != static_cast<int>(link) || order % length != 0) return std::nullopt;
    do {
      quotient.copies[static_cast<size_t>(l)] = static_cast<int>(order / length);
      l = image[static_cast<size_t>(l)];
    } while (l != static_cast<int>(link));
  }
  return quotient;
}

GpuLocation Topology::locate(int gpu) const {
  assert(gpu >= 0 && gpu < gpu_count_);
  GpuLocation where;
  while (gpu >= dc_first_gpu_[where.datacenter + 1]) ++where.datacenter;
  where.node = gpu / gpus_per_node_;
  where.local = gpu % gpus_per_node_;
  return where;
}

int64_t Topology::leaf_of(int gpu) const {
  const int dc = locate(gpu).datacenter;
  const int64_t nic = gpu - dc_first_gpu_[dc];
  if (kind_ == FabricKind::fat_tree) return nic / nics_per_leaf_;
  const int64_t nodes = (dc_first_gpu_[dc + 1] - dc_first_gpu_[dc]) / gpus_per_node_;
  const int64_t leaves_per_rail = (nodes + nics_per_leaf_ - 1) / nics_per_leaf_;
  return (nic % gpus_per_node_) * leaves_per_rail + (nic / gpus_per_node_) / nics_per_leaf_;
}

int64_t Topology::group_of(int gpu, int tier) const { return leaf_of(gpu) / leaves_below_[tier]; }

int Topology::bundle(int dc, int tier, int64_t group, bool up) const {
  return bundle_base_[dc][tier] + static_cast<int>(2 * group) + (up ? 0 : 1);
}

void Topology::route(int src, int dst, std::vector<int>& out) const {
  if (src == dst) return;
  const GpuLocation a = locate(src);
  const GpuLocation b = locate(dst);
  if (a.node == b.node) {
    out.push_back(src * kPortsPerGpu + kNvlinkUp);
    out.push_back(dst * kPortsPerGpu + kNvlinkDown);
    return;
  }
  out.push_back(src * kPortsPerGpu + kNicUp);
  if (a.datacenter == b.datacenter) {
    int common = 1;
    while (common < levels_ && group_of(src, common) != group_of(dst, common)) ++common;
    for (int tier = 1; tier < common; ++tier) {
      out.push_back(bundle(a.datacenter, tier, group_of(src, tier), true));
    }
    for (int tier = common - 1; tier >= 1; --tier) {
      out.push_back(bundle(b.datacenter, tier, group_of(dst, tier), false));
    }
  } else {
    for (int tier = 1; tier < levels_; ++tier) {
      out.push_back(bundle(a.datacenter, tier, group_of(src, tier), true));
    }
    const size_t dcs = dc_names_.size();
    const int wan = wan_link_[static_cast<size_t>(a.datacenter) * dcs + b.datacenter];
    assert(wan >= 0 && "validation guarantees a WAN link between every pair of datacenters");
    const size_t pair = static_cast<size_t>(a.datacenter) * dcs + b.datacenter;
    if (wan_path_out_[pair] >= 0) {
      out.push_back(wan_path_out_[pair] + src - dc_first_gpu_[a.datacenter]);
    }
    out.push_back(wan);
    if (wan_path_in_[pair] >= 0)
      out.push_back(wan_path_in_[pair] + dst - dc_first_gpu_[b.datacenter]);
    for (int tier = levels_ - 1; tier >= 1; --tier) {
      out.push_back(bundle(b.datacenter, tier, group_of(dst, tier), false));
    }
  }
  out.push_back(dst * kPortsPerGpu + kNicDown);
}

double Topology::route_latency(int src, int dst) const {
  std::vector<int> path;
  route(src, dst, path);
  double latency = 0;
  for (int link : path) latency += links_[link].latency_s;
  return latency;
}

std::string Topology::link_name(int link) const {
  static const char* const kPortNames[] = {"nvlink-up", "nvlink-down", "nic-up", "nic-down"};
  if (link < first_bundle_link_) {
    return fmt::format("gpu{}-{}", link / kPortsPerGpu, kPortNames[link % kPortsPerGpu]);
  }
  if (link >= first_wan_link_) {
    const size_t dcs = dc_names_.size();
    for (size_t i = 0; i < wan_link_.size(); ++i) {
      const std::string name = fmt::format("wan-{}-{}", dc_names_[i / dcs], dc_names_[i % dcs]);
      if (wan_link_[i] == link) return name;
      // A per-GPU path: its GPU, when `link` is one of the paths from `base` for `dc`'s GPUs.
      auto path_gpu = [&](int base, size_t dc) {
        const int first = dc_first_gpu_[dc];
        const bool in = base >= 0 && link >= base && link < base + dc_first_gpu_[dc + 1] - first;
        return in ? link - base + first : -1;
      };
      if (const int gpu = path_gpu(wan_path_out_[i], i / dcs); gpu >= 0) {
        return fmt::format("{}-path-out-gpu{}", name, gpu);
      }
      if (const int gpu = path_gpu(wan_path_in_[i], i % dcs); gpu >= 0) {
        return fmt::format("{}-path-in-gpu{}", name, gpu);
      }
    }
  }
  for (size_t dc = dc_names_.size(); dc-- > 0;) {
    for (int tier = levels_ - 1; tier >= 1; --tier) {
      const int base = bundle_base_[dc][tier];
      if (link >= base) {
        return fmt::format("{}-tier{}-group{}-{}", dc_names_[dc], tier, (link - base) / 2,
                           (link - base) % 2 == 0 ? "up" : "down");
      }
    }
  }
  throw std::logic_error("unknown link id");
}

}  // namespace prismsim
