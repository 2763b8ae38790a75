#pragma once

#include <vector>

#include "runtime/run_observer.hpp"
#include "workload/program.hpp"

namespace prismsim {

/// Where one rank's compute stream spent a run, in seconds.
struct RankTimes {
  double compute_s = 0;           ///< kernels (fused executions), without analytic collectives
  double layer_collective_s = 0;  ///< analytic tensor/context-parallel collectives in the compute
  double collective_s = 0;        ///< blocking collectives in the network
  double pipeline_wait_s = 0;     ///< receiving activations or gradients (the pipeline bubble)
  double stream_wait_s = 0;       ///< waiting for another stream (gradient reduction, gathers)
};

/// Adds up where each rank's compute stream (stream 0) spent the run; a rank that is not
/// simulated gets its representative's times.
class RankTimesRecorder : public RunObserver {
 public:
  explicit RankTimesRecorder(const Job& job);

  bool watches(int /*rank*/) const override { return true; }
  void on_compute(const ComputeSpan& span) override;
  void on_op(const OpSpan& span) override;
  void on_run_end() override;
  /// Per rank, complete once the run has ended.
  const std::vector<RankTimes>& times() const { return times_; }

 private:
  const Job& job_;
  std::vector<RankTimes> times_;
};

}  // namespace prismsim
