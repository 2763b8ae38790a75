#pragma once

#include <optional>
#include <vector>

#include "config/scenario.hpp"
#include "platform/topology.hpp"
#include "workload/compute_model.hpp"

namespace prismsim {

/// Closed-form duration of one training step of a transformer workload, for calibration: each pass
/// of virtual stage v runs its kernels and tensor/context-parallel collectives (cost model, no
/// contention) in order as the host issues them (one kernel_launch each, layer_launch before each
/// unit's first, the device idle while the host is behind); passes follow the pipeline schedule
/// (pipeline_makespan) with point-to-point transfers at route latency plus bytes over the route's
/// narrowest link (and the receiver's all-gather of a scatter-gather transfer); then the
/// data-parallel gradient collectives, not overlapped (one all-reduce for DDP, one reduce-scatter
/// and one all-gather of all parameters for ZeRO and, as an approximation, for FSDP), the
/// tied-embedding and gradient-norm all-reduces, the optimizer and the host's per-step time. It
/// matches the simulator for DDP and ZeRO jobs without overlap, one gradient bucket, analytic
/// layer collectives and no deferred output-layer weight gradients when the network has no
/// contention. Kernel shapes are built once; seconds()
/// re-times them for any compute-model and host times (the blocking copies, `host.layer_syncs`,
/// are part of the shapes: the scenario's count).
class StepEstimate {
 public:
  StepEstimate(const Scenario& scenario, const Topology& topology);

  /// The step's duration with `gpu`'s compute model and `host`'s costs.
  double seconds(const GpuSpec& gpu, const HostSpec& host) const;

 private:
  /// A kernel of a pass in issue order, an analytic collective or a blocking copy (work unused).
  struct PassItemCost {
    KernelWork work;
    Precision precision = Precision::bf16;
    double communication_s = -1;         ///< >= 0: an analytic collective of this cost
    int hiding_gemm = 0;                 ///< a collective: as hiding_gemm_offset
    int module_runs = 0;                 ///< as PassItem::module_runs
    bool host_sync = false;              ///< a blocking copy: the host then waits for the device
    bool gradient_accumulation = false;  ///< as PassItem::gradient_accumulation
  };
  struct PassCost {
    std::vector<PassItemCost> items;
  };
  /// With `first_gradients`, without the adds into kept gradients (autograd's first backward).
  double pass_seconds(const PassCost& pass, const GpuSpec& gpu, const HostSpec& host,
                      bool first_gradients = false) const;

  PipelineSchedule schedule_;
  int pp_ = 1, virtual_stages_ = 1, microbatches_ = 1;
  bool receives_ahead_ = false;
  bool autograd_accumulation_ = false;        ///< the first backward adds into no kept gradient
  std::vector<PassCost> forward_, backward_;  ///< per virtual stage
  double transfer_s_ = 0;
  double data_parallel_s_ = 0;  ///< slowest stage's gradient collectives and fixed all-reduces
  KernelWork optimizer_;        ///< of the stage with the most parameters to update
  std::optional<KernelWork> zero_gradients_;  ///< none when autograd sets `.grad` to None
  Precision precision_ = Precision::bf16;
};

}  // namespace prismsim
