#include "collectives/cost_model.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "config/scenario.hpp"

namespace prismsim {

GroupLayout layout_of(const std::vector<int>& gpus, const Topology& topology) {
  GroupLayout layout;
  for (int gpu : gpus) {
    const GpuLocation where = topology.locate(gpu);
    layout.node.push_back(where.node);
    layout.local.push_back(where.local);
  }
  return layout;
}

std::vector<PhaseCost> estimate_phases(const CollectivePlan& plan, int group_size,
                                       const std::vector<int>& gpu_of_position,
                                       const Topology& topology) {
  const auto latency_steps = plan.phase_latency_steps();
  const auto forwarding_steps = plan.phase_forwarding_steps();
  std::vector<PhaseCost> phases(latency_steps.size());
  // Loads of the links the phase touches (a small group on a large platform touches few).
  std::unordered_map<int, double> load;
  std::vector<int> path;
  CommStep step;
  for (size_t phase = 0; phase < phases.size(); ++phase) {
    PhaseCost& cost = phases[phase];
    cost.latency_steps = latency_steps[phase];
    cost.forwarding_steps = std::max(1, forwarding_steps[phase]);
    for (int pos = 0; pos < group_size; ++pos) {
      plan.phase(pos, static_cast<int>(phase), step);
      step.merge_by_peer();
      const int src = gpu_of_position[static_cast<size_t>(pos)];
      for (const Send& send : step.sends) {
        const int dst = gpu_of_position[static_cast<size_t>(send.peer)];
        path.clear();
        topology.route(src, dst, path);
        double latency = 0;
        for (int link : path) {
          load[link] += send.bytes;
          const TopologyLink& l = topology.links()[static_cast<size_t>(link)];
          latency += l.latency_s;
        }
        cost.max_hop_latency_s = std::max(cost.max_hop_latency_s, latency);
      }
    }
    for (const auto& [link, bytes] : load) {
      const double bandwidth_Bps = topology.links()[static_cast<size_t>(link)].bandwidth_Bps;
      cost.bandwidth_s = std::max(cost.bandwidth_s, bytes / bandwidth_Bps);
    }
    load.clear();
    cost.message_latency_s = cost.latency_steps * cost.max_hop_latency_s;
    // A pipelined phase, hop by hop along its slowest path (see phase_paths); the (k - 1) chunk
    // times are in bandwidth_s, and its other latency steps (one per extra chunk) keep max_hop.
    double slowest_path_s = -1;
    for (const PipelinePath& p : plan.phase_paths(static_cast<int>(phase))) {
      double latency = 0, chunk_times = 0, narrowest_Bps = 0;
      for (const auto& [from, to] : p.hops) {
        path.clear();
        topology.route(gpu_of_position[static_cast<size_t>(from)],
                       gpu_of_position[static_cast<size_t>(to)], path);
        double hop_Bps = 0;
        for (int link : path) {
          const TopologyLink& l = topology.links()[static_cast<size_t>(link)];
          latency += l.latency_s;
          if (hop_Bps == 0 || l.bandwidth_Bps < hop_Bps) hop_Bps = l.bandwidth_Bps;
        }
        if (hop_Bps <= 0) continue;
        chunk_times += p.chunk_bytes / hop_Bps;
        if (narrowest_Bps == 0 || hop_Bps < narrowest_Bps) narrowest_Bps = hop_Bps;
      }
      const double fill = narrowest_Bps > 0 ? chunk_times - p.chunk_bytes / narrowest_Bps : 0;
      if (latency + fill <= slowest_path_s) continue;
      slowest_path_s = latency + fill;
      const int extra_steps = std::max(0, cost.latency_steps - static_cast<int>(p.hops.size()));
      cost.message_latency_s = latency + extra_steps * cost.max_hop_latency_s;
      cost.pipeline_fill_s = std::max(0.0, fill);
    }
  }
  return phases;
}

double wire_bytes(double bytes, const ProtocolSpec& protocol) {
  return protocol.streamed ? bytes : bytes / protocol.bandwidth_efficiency;
}

double streaming_seconds(const PhaseCost& phase, const ProtocolSpec& protocol) {
  if (!protocol.streamed) return 0;
  return phase.bandwidth_s / phase.forwarding_steps / protocol.bandwidth_efficiency;
}

double phase_remainder_seconds(const PhaseCost& phase, const ProtocolSpec& protocol) {
  // A coarse run simulates one message latency, the largest.
  const double simulated_latency_s = phase.latency_steps > 0 ? phase.max_hop_latency_s : 0.0;
  return std::max(0.0, phase.message_latency_s - simulated_latency_s) +
         phase.latency_steps * protocol.step_latency_s +
         wire_bytes(phase.pipeline_fill_s, protocol) + streaming_seconds(phase, protocol);
}

double predicted_seconds(const std::vector<PhaseCost>& phases, double launch_latency_s,
                         const ProtocolSpec& protocol) {
  double total = launch_latency_s + protocol.base_latency_s;
  for (const auto& phase : phases) {
    const double simulated = (phase.latency_steps > 0 ? phase.max_hop_latency_s : 0.0) +
                             wire_bytes(phase.bandwidth_s, protocol);
    total += simulated + phase_remainder_seconds(phase, protocol);
  }
  return total;
}

CollectiveChoice choose_collective(const CollectivePlanner& planner,
                                   const std::vector<int>& gpu_of_position,
                                   const Topology& topology, const PlatformSpec& platform,
                                   CollectiveOp op, double bytes, Algorithm forced, int root) {
  const CollectiveTuning& tuning = platform.collectives;
  CollectiveChoice choice;
  choice.protocol = &tuning.protocols.front();
  const int n = planner.layout().size();
  if (n < 2) {
    choice.local_copy = true;
    choice.seconds = tuning.launch_latency_s +
                     2.0 * bytes / (platform.gpu.memory_bandwidth_Bps * tuning.local_copy_efficiency);
    return choice;
  }
  std::vector<Algorithm> candidates;
  if (forced != Algorithm::automatic) {
    if (!planner.supports(op, forced, platform.nvls)) {
      throw std::invalid_argument(fmt::format(
          "algorithm '{}' cannot run {} on a group of {} GPUs here (nvls needs one node and "
          "node.nvls: true; hierarchical needs several nodes with equal GPU counts)",
          to_string(forced), to_string(op), n));
    }
    candidates.push_back(forced);
  } else {
    for (Algorithm a : algorithms_for(op)) {
      if (planner.supports(op, a, platform.nvls)) candidates.push_back(a);
    }
  }
  choice.seconds = std::numeric_limits<double>::infinity();
  for (Algorithm a : candidates) {
    const auto plan = planner.plan(op, a, bytes, root);
    auto phases = estimate_phases(*plan, n, gpu_of_position, topology);
    for (const auto& protocol : tuning.protocols) {
      const double t = predicted_seconds(phases, tuning.launch_latency_s, protocol);
      if (t < choice.seconds) {
        choice.seconds = t;
        choice.algorithm = a;
        choice.protocol = &protocol;
        choice.phases = phases;
      }
    }
  }
  return choice;
}

double predicted_call_seconds(const std::vector<int>& gpus, const Topology& topology,
                              const PlatformSpec& platform, CollectiveOp op, double bytes,
                              Algorithm forced) {
  const CollectivePlanner planner(layout_of(gpus, topology), platform.collective_channels(),
                                  platform.collective_p2p_channels());
  if (!planner.supports(op, forced, platform.nvls)) forced = Algorithm::automatic;
  return choose_collective(planner, gpus, topology, platform, op, bytes, forced).seconds;
}

}  // namespace prismsim
