#pragma once

#include <vector>

#include "collectives/plan.hpp"
#include "platform/topology.hpp"

namespace prismsim {

/// Contention-aware cost of one phase of a coarse plan, from link loads on the topology.
struct PhaseCost {
  double bandwidth_s = 0;        ///< busiest link: bytes it carries / its bandwidth
  double max_hop_latency_s = 0;  ///< largest route latency among the phase's messages
  int latency_steps = 0;         ///< sequential message latencies in the full algorithm
};

/// Costs each coarse phase of `plan` for a group whose position p runs on GPU gpu_of_position[p].
std::vector<PhaseCost> estimate_phases(const CollectivePlan& plan, int group_size,
                                       const std::vector<int>& gpu_of_position,
                                       const Topology& topology);

/// Predicted duration: launch + per phase (latency_steps x (hop + step_latency) + bandwidth_s /
/// efficiency). The same figure that selects algorithms and protocols and that calibration fits.
double predicted_seconds(const std::vector<PhaseCost>& phases, double launch_latency_s,
                         double bandwidth_efficiency, double step_latency_s);

}  // namespace prismsim
