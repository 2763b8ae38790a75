#pragma once

#include <cstdint>
#include <vector>

#include "variability/distribution.hpp"

namespace prismsim {

/// The step times the simulator produced for one job size, one vector per simulated run. A run
/// is one draw of the persistent state (placement, GPU speeds, slow nodes, WAN round trips); its
/// steps hold the step-to-step variation under that state.
struct StepTimeSet {
  int replicas = 0;                       ///< data-parallel replicas of this size
  std::vector<std::vector<double>> runs;  ///< each run's step times, s (each run non-empty)
};

/// Draws the duration of many consecutive steps of one allocation of the job.
///
/// Within an allocation (one run's persistent state) steps are independent draws from that run's
/// own step times (the bootstrap of its steps): the only dependence between steps kept is the
/// persistent state. A sum of at most kExactSteps steps is drawn step by step; a longer one from
/// the normal law of the same mean and variance (central limit theorem), clamped to the range
/// the exact sum can take. The mean and the variance of every sum are exact; only the shape of
/// its fluctuation is approximated, a fluctuation whose relative size is a step's coefficient of
/// variation divided by sqrt(K), under an eighth of it for K > 64.
class StepTimeModel {
 public:
  /// Sums of more steps than this are drawn from the normal approximation.
  static constexpr int64_t kExactSteps = 64;

  /// `set` must hold at least one run, each with at least one positive step time.
  explicit StepTimeModel(const StepTimeSet& set);

  int runs() const { return static_cast<int>(runs_.size()); }
  int replicas() const { return replicas_; }
  /// Mean step time over runs (each run weighs the same: a new allocation draws a run
  /// uniformly), s.
  double mean_step_s() const { return mean_s_; }
  /// Mean step time of run `run`, s.
  double run_mean_s(int run) const { return runs_[static_cast<size_t>(run)].mean_s; }
  /// Shortest step of run `run`, s.
  double run_min_s(int run) const { return runs_[static_cast<size_t>(run)].min_s; }

  /// Duration of `steps` (>= 1) consecutive steps in run `run`, s; `key` seeds the draws (a
  /// counter-based stream: the same key gives the same sum).
  double sum_steps(int run, int64_t steps, uint64_t key) const;

 private:
  struct Run {
    std::vector<double> steps_s;
    double mean_s = 0, sd_s = 0, min_s = 0, max_s = 0;
  };
  int replicas_ = 0;
  std::vector<Run> runs_;
  double mean_s_ = 0;
  Sampler standard_normal_;
};

}  // namespace prismsim
