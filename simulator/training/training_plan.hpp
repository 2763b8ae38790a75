#pragma once

#include <vector>

#include "config/scenario.hpp"
#include "training/training_model.hpp"

namespace prismsim {

/// The failure units of a scenario's job. Nodes: ranks over GPUs per node, rounded up. A leaf
/// switch holds the fabric's leaf down ports of NICs: for a fat tree a node's NICs share a leaf,
/// so a leaf failure takes down the nodes below it; rail-optimised, a leaf holds one NIC of as
/// many nodes, and takes each of them down. Racks hold variability.rack_nodes nodes (default:
/// the nodes of one leaf, as for per-rack variability).
JobShape job_shape(const Scenario& scenario);

/// The whole-run plan of a scenario: its length, resilience and seed, its job shape, and the
/// step times of the full size and of each elastic size (in resilience.elastic_replicas order).
TrainingPlan training_plan(const Scenario& scenario, std::vector<StepTimeSet> sizes);

/// The scenario that an elastic size runs: `replicas` data-parallel replicas with the same
/// microbatches each (the global batch shrinks with them), everything else unchanged.
Scenario elastic_scenario(const Scenario& scenario, int replicas);

}  // namespace prismsim
