#pragma once

#include <array>
#include <string>
#include <vector>

#include "stats/distribution.hpp"
#include "training/training_model.hpp"

namespace prismsim {

/// The classical reference for the checkpoint interval (Young 1974; Daly 2006), for the job at
/// full size: exponential failures of mean `mtbf_s` between job-stopping failures, a checkpoint
/// costing `checkpoint_cost_s` of training time.
struct YoungDaly {
  double mtbf_s = 0;                ///< 1 / rate of crash and planned failures; inf without any
  double checkpoint_cost_s = 0;     ///< sync: the write; async: snapshot + (slowdown - 1) x write
  double recovery_s = 0;            ///< mean detection + restart + checkpoint load
  double young_interval_s = 0;      ///< sqrt(2 delta M) (0 when undefined)
  double daly_interval_s = 0;       ///< Daly's higher-order optimum
  double young_interval_steps = 0;  ///< the same in mean full-size steps
  double daly_interval_steps = 0;
};

/// Young/Daly reference of `plan` (checkpoint cost from its checkpoint section; its mean full
/// step time from its step times).
YoungDaly young_daly(const TrainingPlan& plan);

/// First-order expected fraction of wall-clock time wasted (Young/Daly): checkpoint cost over
/// the interval, half an interval (plus its checkpoint) lost per failure, and each failure's
/// recovery: delta / tau + (tau + delta) / (2 M) + R / M, for an interval `tau_s` of training.
double first_order_waste(double tau_s, double checkpoint_cost_s, double mtbf_s, double recovery_s);

/// What a whole-run study reports.
struct TrainingSummary {
  int replications = 0;
  int finished = 0;            ///< replications that reached their length (steps runs)
  double failure_free_s = 0;   ///< steps x mean full-size step (steps runs)
  int64_t interval_steps = 0;  ///< checkpoint interval used, steps (0: none)
  /// Total training time of the finished replications, s; with 95% bootstrap intervals of p50,
  /// p95, p99 (empty for `until` runs, whose length is fixed).
  DistributionSummary wall_s;
  std::vector<Interval> wall_ci;
  /// Useful time / wall time per replication; `goodput_mean_ci`: 95% normal interval of the mean.
  DistributionSummary goodput;
  Interval goodput_mean_ci;
  /// Full-size steps of work done (the length of a steps run; what an `until` run achieved).
  DistributionSummary work_steps;
  DistributionSummary interruptions;
  double mean_planned_restarts = 0, mean_degradations = 0, mean_checkpoints = 0;
  double mean_elastic_restarts = 0;
  /// Mean time per cause over replications, s, and as a fraction of the mean wall time.
  std::array<double, kTimeCauses> mean_time_s{}, mean_fraction{};
  /// Per component: name, rate hitting the full-size job (per s), mean failures per replication.
  struct Component {
    std::string name;
    double job_rate_per_s = 0;
    double mean_failures = 0;
  };
  std::vector<Component> components;
  FailureRates rates;
  YoungDaly reference;
  /// Per deadline: P(the run has finished by then) with a 95% Wilson interval; unfinished
  /// replications count as late.
  struct Deadline {
    double deadline_s = 0;
    double multiple = 0;  ///< of the failure-free time, when given so ("1.1x")
    double p_finish = 0;
    Interval ci;
  };
  std::vector<Deadline> deadlines;
};

/// Summarises outcomes of simulate_training(plan, ...). Bootstrap intervals are seeded from
/// plan.seed: same inputs, same summary.
TrainingSummary summarize_training(const TrainingPlan& plan,
                                   const std::vector<ReplicationOutcome>& outcomes);

}  // namespace prismsim
