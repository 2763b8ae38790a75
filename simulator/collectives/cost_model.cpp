#include "collectives/cost_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

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

std::optional<NcclProtocol> nccl_protocol(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "ll") return NcclProtocol::ll;
  if (lower == "ll128") return NcclProtocol::ll128;
  if (lower == "simple" || lower == "nvls") return NcclProtocol::simple;
  return std::nullopt;
}

TunerInputs tuner_inputs(const GroupLayout& layout, const PlatformSpec& platform, CollectiveOp op) {
  TunerInputs in;
  in.op = op;
  in.ranks = layout.size();
  std::vector<int> nodes = layout.node;
  std::sort(nodes.begin(), nodes.end());
  in.nodes = static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
  in.channels = platform.collectives.tuner_channels > 0 ? platform.collectives.tuner_channels
                                                        : platform.collective_channels();
  in.generation = gpu_generation(platform.gpu.model);
  in.amd_cpu = platform.amd_cpu;
  in.intra_channel_GBps = platform.nvlink.bandwidth_Bps / 1e9 / in.channels;
  in.inter_channel_GBps = platform.nic.bandwidth_Bps / 1e9;
  in.nvls = platform.nvls;
  return in;
}

CollectivePlanner planner_for(GroupLayout layout, const PlatformSpec& platform) {
  const double nvls_efficiency = platform.collectives.nvls_efficiency;
  const double nvls_scale =
      nvls_efficiency > 0 ? platform.nvlink.efficiency / nvls_efficiency : 1.0;
  return CollectivePlanner(std::move(layout), platform.collective_channels(),
                           platform.collective_p2p_channels(), nvls_scale);
}

std::vector<PhaseLoads> phase_loads(const CollectivePlan& plan, int group_size,
                                    const std::vector<int>& gpu_of_position,
                                    const Topology& topology) {
  const auto latency_steps = plan.phase_latency_steps();
  const auto forwarding_steps = plan.phase_forwarding_steps();
  std::vector<PhaseLoads> phases(latency_steps.size());
  // Loads of the links the phase touches (a small group on a large platform touches few).
  std::unordered_map<int, double> load;
  std::vector<int> order;  // links in order of first load, for sums in a fixed order
  std::vector<int> path;
  CommStep step;
  for (size_t phase = 0; phase < phases.size(); ++phase) {
    PhaseLoads& out = phases[phase];
    out.latency_steps = latency_steps[phase];
    out.overlapping_chunks = plan.overlapping_chunks(static_cast<int>(phase));
    out.forwarding_steps = std::max(1, forwarding_steps[phase]);
    for (int pos = 0; pos < group_size; ++pos) {
      plan.phase(pos, static_cast<int>(phase), step);
      step.merge_by_peer();
      const int src = gpu_of_position[static_cast<size_t>(pos)];
      double sent = 0;
      for (const Send& send : step.sends) {
        const int dst = gpu_of_position[static_cast<size_t>(send.peer)];
        path.clear();
        topology.route(src, dst, path);
        for (int link : path) {
          auto [it, added] = load.emplace(link, 0.0);
          if (added) order.push_back(link);
          it->second += send.bytes;
        }
        out.routes.push_back(path);
        sent += send.bytes;
      }
      if (sent > out.busiest_sender_bytes) {
        out.busiest_sender_bytes = sent;
        out.busiest_sender_link = topology.nvlink_up_link(src);
      }
    }
    for (int link : order) out.link_bytes.emplace_back(link, load[link]);
    load.clear();
    order.clear();
    std::sort(out.routes.begin(), out.routes.end());
    out.routes.erase(std::unique(out.routes.begin(), out.routes.end()), out.routes.end());
    for (const PipelinePath& p : plan.phase_paths(static_cast<int>(phase))) {
      PhaseLoads::Path hops{{}, p.chunk_bytes};
      for (const auto& [from, to] : p.hops) {
        path.clear();
        topology.route(gpu_of_position[static_cast<size_t>(from)],
                       gpu_of_position[static_cast<size_t>(to)], path);
        hops.hops.push_back(path);
      }
      out.paths.push_back(std::move(hops));
    }
  }
  return phases;
}

std::vector<PhaseCost> cost_phases(const std::vector<PhaseLoads>& loads, const Topology& topology) {
  const auto& links = topology.links();
  std::vector<PhaseCost> phases(loads.size());
  for (size_t phase = 0; phase < loads.size(); ++phase) {
    const PhaseLoads& in = loads[phase];
    PhaseCost& cost = phases[phase];
    cost.latency_steps = in.latency_steps;
    cost.overlapping_chunks = in.overlapping_chunks;
    cost.forwarding_steps = in.forwarding_steps;
    for (const auto& route : in.routes) {
      double latency = 0;
      for (int link : route) latency += links[static_cast<size_t>(link)].latency_s;
      cost.max_hop_latency_s = std::max(cost.max_hop_latency_s, latency);
    }
    for (const auto& [link, bytes] : in.link_bytes) {
      cost.bandwidth_s =
          std::max(cost.bandwidth_s, bytes / links[static_cast<size_t>(link)].bandwidth_Bps);
    }
    if (in.busiest_sender_link >= 0) {
      cost.member_stream_s = in.busiest_sender_bytes /
                             links[static_cast<size_t>(in.busiest_sender_link)].bandwidth_Bps;
    }
    cost.message_latency_s = cost.latency_steps * cost.max_hop_latency_s;
    // A pipelined phase, hop by hop along its slowest path (see phase_paths); the (k - 1) chunk
    // times are in bandwidth_s, and its other latency steps (one per extra chunk) keep max_hop.
    double slowest_path_s = -1;
    for (const PhaseLoads::Path& p : in.paths) {
      double latency = 0, chunk_times = 0, narrowest_Bps = 0;
      for (const auto& hop : p.hops) {
        double hop_Bps = 0;
        for (int link : hop) {
          const TopologyLink& l = links[static_cast<size_t>(link)];
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

std::vector<PhaseCost> estimate_phases(const CollectivePlan& plan, int group_size,
                                       const std::vector<int>& gpu_of_position,
                                       const Topology& topology) {
  return cost_phases(phase_loads(plan, group_size, gpu_of_position, topology), topology);
}

double wire_bytes(double bytes, const ProtocolSpec& protocol) {
  return protocol.streamed ? bytes : bytes / protocol.bandwidth_efficiency;
}

double streaming_seconds(const PhaseCost& phase, const ProtocolSpec& protocol) {
  if (!protocol.streamed) return 0;
  return phase.member_stream_s / phase.forwarding_steps / protocol.bandwidth_efficiency;
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
  const int n = planner.layout().size();
  return choose_collective(planner, platform, op, bytes, forced, [&](Algorithm a) {
    const auto plan = planner.plan(op, a, bytes, root);
    return estimate_phases(*plan, n, gpu_of_position, topology);
  });
}

CollectiveChoice choose_collective(const CollectivePlanner& planner, const PlatformSpec& platform,
                                   CollectiveOp op, double bytes, Algorithm forced,
                                   const PhaseCoster& phases_of) {
  const CollectiveTuning& tuning = platform.collectives;
  CollectiveChoice choice;
  choice.protocol = &tuning.protocols.front();
  const int n = planner.layout().size();
  if (n < 2) {
    choice.local_copy = true;
    choice.seconds =
        tuning.launch_latency_s +
        2.0 * bytes / (platform.gpu.memory_bandwidth_Bps * tuning.local_copy_efficiency);
    return choice;
  }
  std::vector<Algorithm> candidates;
  if (forced != Algorithm::automatic) {
    if (!planner.supports(op, forced, platform.nvls)) {
      throw std::invalid_argument(fmt::format(
          "algorithm '{}' cannot run {} on a group of {} GPUs here (nvls needs one node and "
          "node.nvls: true; nvls_tree several nodes with equal GPU counts and node.nvls: true; "
          "hierarchical several nodes with equal GPU counts)",
          to_string(forced), to_string(op), n));
    }
    candidates.push_back(forced);
  } else {
    // NCCL's algorithms: the hierarchical rings are prismsim's own, run only when asked for; NVLS
    // tree only where the platform enables it.
    for (Algorithm a : algorithms_for(op)) {
      if (a == Algorithm::hierarchical || (a == Algorithm::nvls_tree && !tuning.nvls_tree))
        continue;
      if (planner.supports(op, a, platform.nvls)) {
        candidates.push_back(a);
      }
    }
  }
  choice.seconds = std::numeric_limits<double>::infinity();
  // NCCL's tuner picks by its own estimates; the call then costs what the model says.
  if (tuning.tuner != TunerKind::fastest) {
    const TunerInputs inputs = tuner_inputs(planner.layout(), platform, op);
    double best = std::numeric_limits<double>::infinity();
    const ProtocolSpec* picked = nullptr;
    for (Algorithm a : candidates) {
      const auto consider = [&](const ProtocolSpec& protocol) {
        const auto nccl = nccl_protocol(protocol.name);
        if (!nccl) return;
        const double estimate = nccl_estimate_seconds(tuning.tuner, inputs, a, *nccl, bytes);
        if (estimate >= 0 && estimate < best) {
          best = estimate;
          picked = &protocol;
          choice.algorithm = a;
        }
      };
      if (a == Algorithm::nvls || a == Algorithm::nvls_tree) {
        consider(tuning.nvls);
      } else {
        for (const auto& protocol : tuning.protocols) consider(protocol);
      }
    }
    if (picked != nullptr && tuning.tuner_picks_protocol) {
      choice.phases = phases_of(choice.algorithm);
      choice.protocol = picked;
      choice.seconds = predicted_seconds(choice.phases, tuning.launch_latency_s, *picked);
      return choice;
    }
    // The tuner's algorithm, with the protocol the model finds fastest.
    if (picked != nullptr) candidates = {choice.algorithm};
  }
  for (Algorithm a : candidates) {
    const auto phases = phases_of(a);
    // NVLS runs its own kernel (Simple only in NCCL), with its own fixed cost.
    const std::vector<ProtocolSpec> nvls_only = {tuning.nvls};
    const bool nvls = a == Algorithm::nvls || a == Algorithm::nvls_tree;
    for (const auto& protocol : nvls ? nvls_only : tuning.protocols) {
      const double t = predicted_seconds(phases, tuning.launch_latency_s, protocol);
      if (t < choice.seconds) {
        choice.seconds = t;
        choice.algorithm = a;
        choice.protocol = nvls ? &tuning.nvls : &protocol;
        choice.phases = phases;
      }
    }
  }
  return choice;
}

double back_to_back_period_seconds(const CollectiveChoice& choice, const PlatformSpec& platform) {
  if (choice.local_copy || choice.phases.empty()) return -1;
  const ProtocolSpec& protocol = *choice.protocol;
  double period = platform.collectives.launch_latency_s + protocol.base_latency_s;
  for (const PhaseCost& phase : choice.phases) {
    if (phase.overlapping_chunks <= 0) return -1;
    period += wire_bytes(phase.bandwidth_s, protocol) +
              phase.overlapping_chunks * protocol.step_latency_s +
              streaming_seconds(phase, protocol);
  }
  return period;
}

double back_to_back_seconds(double first_call_s, double period_s, int iterations) {
  if (iterations <= 1 || period_s < 0) return first_call_s;
  return (first_call_s + (iterations - 1) * std::min(period_s, first_call_s)) / iterations;
}

double predicted_call_seconds(const std::vector<int>& gpus, const Topology& topology,
                              const PlatformSpec& platform, CollectiveOp op, double bytes,
                              Algorithm forced) {
  const CollectivePlanner planner = planner_for(layout_of(gpus, topology), platform);
  if (!planner.supports(op, forced, platform.nvls)) forced = Algorithm::automatic;
  return choose_collective(planner, gpus, topology, platform, op, bytes, forced).seconds;
}

}  // namespace prismsim
