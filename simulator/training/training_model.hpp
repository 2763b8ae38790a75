#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "config/training_spec.hpp"
#include "training/step_time_model.hpp"

namespace prismsim {

/// The job's failure units at full size and how its nodes group.
struct JobShape {
  int nodes = 1;             ///< nodes the job runs on
  int gpus_per_node = 1;     ///< also NICs per node (one NIC per GPU)
  int nodes_per_switch = 1;  ///< nodes a leaf-switch failure takes down
  int switches = 1;          ///< leaf switches the job's nodes hang from
  int nodes_per_rack = 1;    ///< nodes a rack failure takes down
  int racks = 1;             ///< racks the job spans
  int replicas = 1;          ///< data-parallel replicas

  /// Units of `per` in the job at full size.
  int64_t units(FailureUnit per) const;
  /// Nodes one failure of a `per` unit takes out of service (before any override).
  int nodes_down(FailureUnit per) const;
};

/// Everything one whole-run study needs.
struct TrainingPlan {
  TrainLengthSpec length;
  ResilienceSpec resilience;
  JobShape shape;
  /// Step times at full size first, then at each of resilience.elastic_replicas, in that order.
  std::vector<StepTimeSet> sizes;
  uint64_t seed = 1;
};

/// Where a replication's wall-clock time went. The causes add up to the wall time.
enum class TimeCause {
  useful,              ///< steps that count, at the speed of a healthy full-size job
  checkpoint,          ///< checkpoint writes and snapshots that were kept, and async overhead
  lost_work,           ///< everything since the last durable checkpoint, at each crash
  detection,           ///< from a crash to its detection (the job hangs)
  restart,             ///< rescheduling, process and communicator set-up, checkpoint load
  waiting_for_spares,  ///< no healthy nodes to restart on: waiting for a replacement
  slow,                ///< extra step time while a degrading GPU slowed the job
  reduced_replicas,    ///< elastic: the work the missing replicas would have done
};
constexpr int kTimeCauses = 8;
const char* to_string(TimeCause cause);

/// One replication of the whole run.
struct ReplicationOutcome {
  int replication = 0;
  uint64_t seed = 0;
  bool finished = false;  ///< steps runs: reached its length before the simulation's cap
  double wall_s = 0;      ///< total training time (an `until` run: its length)
  std::array<double, kTimeCauses> time_s{};  ///< by TimeCause; sums to wall_s
  double work_steps = 0;                     ///< full-size steps of work done (kept)
  int64_t steps_run = 0;                     ///< steps executed and kept, at any size
  int interruptions = 0;     ///< crashes that stopped the job (a running job or a restart)
  int planned_restarts = 0;  ///< maintenance, removals of degraded nodes, regrowing to full size
  int degradations = 0;      ///< GPUs that began to slow the job
  int checkpoints = 0;       ///< checkpoints made durable
  int elastic_restarts = 0;  ///< restarts at fewer replicas than the full size
  std::vector<int> failures_by_component;  ///< failures that hit the job, per component

  double goodput() const { return wall_s > 0 ? time_s[0] / wall_s : 0; }
};

/// The resolved per-component model the replications share (rates already scaled).
struct FailureRates {
  /// Failures per second of each component hitting the whole job at full size.
  std::vector<double> job_rate_per_s;
  double total_per_s = 0;  ///< every component
  double crash_per_s = 0;  ///< components that stop the job (crash and planned)
};

/// Rates of the plan's components for the job at full size.
FailureRates failure_rates(const TrainingPlan& plan);

/// The checkpoint interval in steps: the given number, or the given duration over the mean
/// full-size step time, rounded, at least 1. 0 without checkpointing.
int64_t checkpoint_interval_steps(const TrainingPlan& plan);

/// Simulates `plan.length.replications` replications of the whole run, `jobs` of them at once
/// (threads); results are in replication order and do not depend on `jobs`. Replication i is
/// seeded run_seed(plan.seed, i), and every random quantity comes from a counter-based stream
/// of it (failure arrivals, their effects, restarts, step sums, allocations), so runs of two
/// plans that differ only in checkpointing, spares or recovery see the same failures at the same
/// wall-clock times (common random numbers).
std::vector<ReplicationOutcome> simulate_training(const TrainingPlan& plan, int jobs);

/// One replication (what simulate_training runs for each).
ReplicationOutcome simulate_replication(const TrainingPlan& plan, int replication);

}  // namespace prismsim
