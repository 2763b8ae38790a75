#include "platform/sim_platform.hpp"

#include <malloc.h>
#include <xbt/log.h>

#include <memory>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <string>

namespace prismsim {
namespace {

namespace routing = simgrid::kernel::routing;

/// A routing zone whose routes come from a Topology. Hosts are added in GPU order, so a host's
/// netpoint id is its GPU index.
class TopologyZone final : public routing::NetZoneImpl {
 public:
  TopologyZone(const std::string& name, const Topology& topology, const LinkQuotient& quotient)
      : NetZoneImpl(name), topology_(topology), canonical_(quotient.canonical) {}

  /// The SimGrid link of the next topology link, or nullptr when it is left out.
  void add_link(simgrid::s4u::Link* link) {
    links_.push_back(link == nullptr ? nullptr : link->get_impl());
  }

  void get_local_route(const routing::NetPoint* src, const routing::NetPoint* dst,
                       routing::Route* into, double* latency) override {
    path_.clear();
    topology_.route(static_cast<int>(src->id()), static_cast<int>(dst->id()), path_);
    for (int link : path_) {
      // Links that cannot saturate have no SimGrid resource: fewer flows share constraints,
      // which makes each event cheaper, and rates are the same.
      const int simulated = canonical_.empty() ? link : canonical_[static_cast<size_t>(link)];
      if (auto* resource = links_[static_cast<size_t>(simulated)]) {
        into->link_list_.push_back(resource);
      }
      if (latency != nullptr) *latency += topology_.links()[static_cast<size_t>(link)].latency_s;
    }
  }

 private:
  const Topology& topology_;
  const std::vector<int> canonical_;  // per topology link, the link simulated for it (quotient)
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> links_;
  std::vector<int> path_;  // scratch, reused across routes
};

}  // namespace

const std::vector<std::pair<const char*, const char*>>& network_model_settings() {
  static const std::vector<std::pair<const char*, const char*>> settings = {
      {"network/model", "CM02"}, {"network/TCP-gamma", "0"}, {"network/crosstraffic", "0"}};
  return settings;
}

simgrid::s4u::Engine* create_engine() {
  // SimGrid allocates each actor's stack (8 MiB) with calloc. glibc raises its mmap threshold
  // to the size of any mmap-ed block freed (up to 32 MiB); stacks then come from the heap, and
  // calloc clears the reused top of the heap for each one (about 128 KiB, its top pad): 1.2 GB
  // for 8,192 actors. A fixed threshold keeps stacks in fresh, untouched mappings, and no cap
  // on their number (glibc's default, 65,536, sends later stacks to the heap again; adjacent
  // mappings merge, so the kernel's map count is not the limit).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_MMAP_MAX, 1 << 30);
  static int argc = 1;
  static char name[] = "prismsim";
  static char* argv[] = {name, nullptr};
  auto* engine = new simgrid::s4u::Engine(&argc, argv);
  xbt_log_control_set("root.thresh:warning");
  // The engine lives until the process exits; its exit-time notice is not for users.
  xbt_log_control_set("ker_engine.thresh:error");
  for (const auto& [key, value] : network_model_settings()) {
    simgrid::s4u::Engine::set_config(std::string(key) + ":" + value);
  }
  // No guard page below each actor's stack: one mprotect per actor dominated building large
  // simulations, and tens of thousands of them exceed Linux's vm.max_map_count. Rank actors
  // run shallow, non-recursive code.
  simgrid::s4u::Engine::set_config("contexts/guard-size:0");
  return engine;
}

std::vector<simgrid::s4u::Host*> build_sim_platform(const Topology& topology,
                                                    double gpu_speed_flops,
                                                    const LinkQuotient& quotient) {
  auto* zone = new TopologyZone("platform", topology, quotient);
  zone->set_parent(nullptr);
  simgrid::s4u::NetZone* iface = zone->get_iface();

  std::vector<simgrid::s4u::Host*> hosts;
  hosts.reserve(static_cast<size_t>(topology.gpu_count()));
  for (int gpu = 0; gpu < topology.gpu_count(); ++gpu) {
    hosts.push_back(iface->create_host("gpu" + std::to_string(gpu), gpu_speed_flops)->seal());
    xbt_assert(hosts.back()->get_netpoint()->id() == static_cast<unsigned long>(gpu),
               "TopologyZone routes by netpoint id, which must equal the GPU index");
  }
  const auto& links = topology.links();
  for (size_t i = 0; i < links.size(); ++i) {
    if (!links[i].can_saturate) {
      zone->add_link(nullptr);
      continue;
    }
    const double copies = quotient.copies.empty() ? 1.0 : quotient.copies[i];
    auto* link =
        iface->create_link(topology.link_name(static_cast<int>(i)), links[i].bandwidth_Bps / copies)
            ->set_latency(links[i].latency_s)
            ->seal();
    zone->add_link(link);
  }
  iface->seal();
  return hosts;
}

}  // namespace prismsim
