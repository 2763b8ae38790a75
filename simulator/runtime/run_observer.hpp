#pragma once

#include <vector>

#include "workload/program.hpp"

namespace prismsim {

/// A fused execution of compute ops of a simulated rank, as it ran.
struct ComputeSpan {
  int rank = 0;
  int stream = 0;
  int step = 0;
  double start_s = 0;
  double end_s = 0;
  const std::vector<const Op*>* ops = nullptr;  ///< the compute ops, in order
  double nominal_s = 0;                         ///< their durations without variation
  double communication_s = 0;  ///< part of the span in analytic (layer) collectives
  /// Of the ops' first waits for the host's launches, what a host ahead of the GPU had already
  /// issued: not in the span (Segment::host_wait_s).
  double host_wait_skipped_s = 0;
  /// With RunObserver::wants_kernels: each lockstep member's duration of every kernel of `ops` in
  /// order (a plain op is one kernel); null without variation (kernels then run at their nominal
  /// durations, stretched to the span).
  const std::vector<std::vector<double>>* member_kernel_s = nullptr;
  const std::vector<int>* member_gpus = nullptr;  ///< the GPUs of `member_kernel_s`, in order
};

/// A collective, receive or wait op of a simulated rank that has ended.
struct OpSpan {
  int rank = 0;
  int stream = 0;
  int step = 0;
  double start_s = 0;
  double end_s = 0;
  const Op* op = nullptr;
};

/// Watches one run at op boundaries, beside the op interpreter (tracing, per-rank breakdowns).
/// Called in the run's process, in simulated-time order per stream; a simulation without
/// observers pays nothing for them.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  /// Whether events of simulated rank `rank` are of interest.
  virtual bool watches(int rank) const = 0;
  /// Whether compute spans of `rank` should carry each lockstep member's kernel durations.
  virtual bool wants_kernels(int /*rank*/) const { return false; }
  virtual void on_compute(const ComputeSpan& /*span*/) {}
  virtual void on_op(const OpSpan& /*span*/) {}
  /// The run has ended (also when it failed): write what was recorded.
  virtual void on_run_end() {}
};

}  // namespace prismsim
