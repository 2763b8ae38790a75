#include "collectives/cost_model.hpp"

#include <algorithm>

namespace prismsim {

std::vector<PhaseCost> estimate_phases(const CollectivePlan& plan, int group_size,
                                       const std::vector<int>& gpu_of_position,
                                       const Topology& topology) {
  const auto latency_steps = plan.phase_latency_steps();
  std::vector<PhaseCost> phases(latency_steps.size());
  std::vector<double> load(topology.links().size(), 0.0);
  std::vector<int> touched;
  std::vector<int> path;
  CommStep step;
  for (size_t phase = 0; phase < phases.size(); ++phase) {
    PhaseCost& cost = phases[phase];
    cost.latency_steps = latency_steps[phase];
    for (int pos = 0; pos < group_size; ++pos) {
      plan.phase(pos, static_cast<int>(phase), step);
      const int src = gpu_of_position[static_cast<size_t>(pos)];
      for (const Send& send : step.sends) {
        const int dst = gpu_of_position[static_cast<size_t>(send.peer)];
        path.clear();
        topology.route(src, dst, path);
        double latency = 0;
        for (int link : path) {
          if (load[static_cast<size_t>(link)] == 0) touched.push_back(link);
          load[static_cast<size_t>(link)] += send.bytes;
          latency += topology.links()[static_cast<size_t>(link)].latency_s;
        }
        cost.max_hop_latency_s = std::max(cost.max_hop_latency_s, latency);
      }
    }
    for (int link : touched) {
      const auto& spec = topology.links()[static_cast<size_t>(link)];
      cost.bandwidth_s = std::max(cost.bandwidth_s, load[static_cast<size_t>(link)] / spec.bandwidth_Bps);
      load[static_cast<size_t>(link)] = 0;
    }
    touched.clear();
  }
  return phases;
}

double predicted_seconds(const std::vector<PhaseCost>& phases, double launch_latency_s,
                         double bandwidth_efficiency, double step_latency_s) {
  double total = launch_latency_s;
  for (const auto& phase : phases) {
    total += phase.latency_steps * (phase.max_hop_latency_s + step_latency_s) +
             phase.bandwidth_s / bandwidth_efficiency;
  }
  return total;
}

}  // namespace prismsim
