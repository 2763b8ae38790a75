#pragma once

#include "config/scenario.hpp"
#include "workload/program.hpp"

namespace prismsim {

/// Seconds a kernel of `flops` takes on `gpu` at `precision` (achieved rate = peak x efficiency).
double compute_seconds(double flops, const GpuSpec& gpu, Precision precision);

/// Builds the data-parallel training step of a layer-stack workload: every rank runs forward then
/// backward (2x the forward flops) of each layer for each of its microbatches, then all-reduces
/// its gradients (parameters x bytes per element of the precision) with every other rank.
Job build_layer_stack_job(const Scenario& scenario);

}  // namespace prismsim
