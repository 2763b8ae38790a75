#pragma once

#include <vector>

#include "config/scenario.hpp"
#include "platform/topology.hpp"
#include "workload/compute_model.hpp"

namespace prismsim {

/// Closed-form duration of one training step of a transformer workload, for calibration: each pass
/// of virtual stage v takes the sum of its kernel times and of its tensor/context-parallel
/// collectives (cost model, no contention); passes follow the pipeline schedule
/// (pipeline_makespan) with point-to-point transfers at route latency plus bytes over the route's
/// narrowest link; then the data-parallel gradient collectives, not overlapped (one all-reduce for
/// DDP, one reduce-scatter and one all-gather of all parameters for ZeRO-1 and, as an
/// approximation, for FSDP), and the optimizer. It matches the simulator for DDP and ZeRO-1 jobs
/// without overlap, one gradient bucket and analytic layer collectives when the network has no
/// contention. Kernel shapes are built once; seconds() re-times them for any compute-model
/// parameters.
class StepEstimate {
 public:
  StepEstimate(const Scenario& scenario, const Topology& topology);

  /// The step's duration with `gpu`'s compute model.
  double seconds(const GpuSpec& gpu) const;

 private:
  struct TimedKernel {
    KernelWork work;
    Precision precision = Precision::bf16;
    double count = 1;  ///< identical kernels of the pass (same layer repeated)
  };
  struct PassCost {
    std::vector<TimedKernel> kernels;
    double communication_s = 0;
  };
  double pass_seconds(const PassCost& pass, const GpuSpec& gpu) const;

  PipelineSchedule schedule_;
  int pp_ = 1, virtual_stages_ = 1, microbatches_ = 1;
  std::vector<PassCost> forward_, backward_;  ///< per virtual stage
  double transfer_s_ = 0;
  double data_parallel_s_ = 0;   ///< slowest stage's gradient collectives
  TimedKernel optimizer_;          ///< of the stage with the most parameters to update
};

}  // namespace prismsim
