#pragma once

#include <simgrid/forward.h>

#include <vector>

#include "platform/topology.hpp"

namespace prismsim {

/// The SimGrid settings every simulation uses, as (name, value) pairs to record in results.
/// CM02 with TCP-gamma 0 and no cross-traffic: a transfer takes latency + size / fair-share rate.
const std::vector<std::pair<const char*, const char*>>& network_model_settings();

/// Creates the process's SimGrid engine with network_model_settings() applied and SimGrid's
/// informational logging silenced. Call once per process, before build_sim_platform.
simgrid::s4u::Engine* create_engine();

/// Builds the SimGrid platform for `topology` inside the current engine: one routing zone that
/// holds every GPU as a host of `gpu_speed_flops` and every topology link, and answers routes
/// from Topology::route. With a quotient (Topology::quotient) routes cross each link's canonical
/// link, whose bandwidth is divided by its copies. Returns the host of each GPU, by GPU index.
std::vector<simgrid::s4u::Host*> build_sim_platform(const Topology& topology,
                                                    double gpu_speed_flops,
                                                    const LinkQuotient& quotient = {});

}  // namespace prismsim
