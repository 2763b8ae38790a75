#include "training/training_plan.hpp"

#include <algorithm>

namespace prismsim {

JobShape job_shape(const Scenario& s) {
  JobShape shape;
  shape.gpus_per_node = s.platform.gpus_per_node;
  shape.nodes = (s.parallelism.ranks() + shape.gpus_per_node - 1) / shape.gpus_per_node;
  shape.replicas = s.parallelism.dp;
  const int64_t leaf_nics = s.platform.fabric.leaf_nics(shape.gpus_per_node);
  const int64_t nics = static_cast<int64_t>(shape.nodes) * shape.gpus_per_node;
  int64_t leaf_nodes = 0;
  if (s.platform.fabric.kind == FabricKind::rail_optimized) {
    leaf_nodes = std::min<int64_t>(leaf_nics, shape.nodes);
    shape.switches = static_cast<int>((nics + leaf_nics - 1) / leaf_nics);
  } else {
    leaf_nodes = std::max<int64_t>(1, leaf_nics / shape.gpus_per_node);
    shape.switches = static_cast<int>((shape.nodes + leaf_nodes - 1) / leaf_nodes);
  }
  shape.nodes_per_switch = static_cast<int>(std::min<int64_t>(leaf_nodes, shape.nodes));
  const int64_t rack = s.variability.rack_nodes > 0
                           ? s.variability.rack_nodes
                           : std::max<int64_t>(1, leaf_nics / shape.gpus_per_node);
  shape.nodes_per_rack = static_cast<int>(std::min<int64_t>(rack, shape.nodes));
  shape.racks = static_cast<int>((shape.nodes + shape.nodes_per_rack - 1) / shape.nodes_per_rack);
  return shape;
}

TrainingPlan training_plan(const Scenario& s, std::vector<StepTimeSet> sizes) {
  TrainingPlan plan;
  plan.length = s.train;
  plan.resilience = s.resilience;
  plan.shape = job_shape(s);
  plan.sizes = std::move(sizes);
  plan.seed = s.simulation.seed;
  return plan;
}

Scenario elastic_scenario(const Scenario& s, int replicas) {
  Scenario smaller = s;
  smaller.workload.global_batch = s.workload.global_batch / s.parallelism.dp * replicas;
  smaller.parallelism.dp = replicas;
  smaller.parallelism.gpus = smaller.parallelism.ranks();
  return smaller;
}

}  // namespace prismsim
