#include "training/training_summary.hpp"

#include <cmath>
#include <limits>

#include "core/seeds.hpp"
#include "variability/distribution.hpp"

namespace prismsim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// 95% Wilson score interval of a proportion of `hits` in `n` trials.
Interval wilson_interval(int hits, int n) {
  if (n == 0) return {0, 1};
  constexpr double z = 1.959963984540054;
  const double p = static_cast<double>(hits) / n;
  const double denominator = 1 + z * z / n;
  const double centre = (p + z * z / (2.0 * n)) / denominator;
  const double half = z * std::sqrt(p * (1 - p) / n + z * z / (4.0 * n * n)) / denominator;
  return {hits == 0 ? 0.0 : std::max(0.0, centre - half),
          hits == n ? 1.0 : std::min(1.0, centre + half)};
}

}  // namespace

double first_order_waste(double tau_s, double checkpoint_cost_s, double mtbf_s, double recovery_s) {
  return checkpoint_cost_s / tau_s + (tau_s + checkpoint_cost_s) / (2 * mtbf_s) +
         recovery_s / mtbf_s;
}

YoungDaly young_daly(const TrainingPlan& plan) {
  YoungDaly y;
  const ResilienceSpec& r = plan.resilience;
  const FailureRates rates = failure_rates(plan);
  y.mtbf_s = rates.crash_per_s > 0 ? 1 / rates.crash_per_s : kInf;
  const CheckpointSpec& c = r.checkpoint;
  if (c.enabled) {
    y.checkpoint_cost_s = c.async ? c.snapshot_s + (c.async_slowdown - 1) * c.write_s : c.write_s;
  }
  // Mean detection, weighted by each stopping component's rate, then restart and load.
  double detect = 0;
  for (size_t i = 0; i < r.components.size(); ++i) {
    const FailureComponentSpec& comp = r.components[i];
    if (comp.effect != FailureEffect::crash || rates.crash_per_s <= 0) continue;
    detect += rates.job_rate_per_s[i] / rates.crash_per_s *
              distribution_mean(comp.has_detect ? comp.detect_s : r.detect_s);
  }
  y.recovery_s = detect + distribution_mean(r.restart_s) + (c.enabled ? c.load_s : 0);
  if (std::isfinite(y.mtbf_s) && y.checkpoint_cost_s > 0) {
    const double delta = y.checkpoint_cost_s;
    const double m = y.mtbf_s;
    y.young_interval_s = std::sqrt(2 * delta * m);
    y.daly_interval_s = delta < 2 * m
                            ? std::sqrt(2 * delta * m) *
                                      (1 + std::sqrt(delta / (2 * m)) / 3 + delta / (2 * m) / 9) -
                                  delta
                            : m;
    const double step = StepTimeModel(plan.sizes.front()).mean_step_s();
    y.young_interval_steps = y.young_interval_s / step;
    y.daly_interval_steps = y.daly_interval_s / step;
  }
  return y;
}

TrainingSummary summarize_training(const TrainingPlan& plan,
                                   const std::vector<ReplicationOutcome>& outcomes) {
  TrainingSummary s;
  s.replications = static_cast<int>(outcomes.size());
  s.rates = failure_rates(plan);
  s.reference = young_daly(plan);
  s.interval_steps = checkpoint_interval_steps(plan);
  const bool until = plan.length.kind == TrainLengthSpec::Kind::until;
  if (!until) {
    s.failure_free_s =
        static_cast<double>(plan.length.steps) * StepTimeModel(plan.sizes.front()).mean_step_s();
  }
  std::vector<double> walls, goodputs, work, interruptions;
  std::vector<std::vector<double>> wall_groups;
  std::vector<double> failures(plan.resilience.components.size(), 0.0);
  double wall_total = 0;
  for (const ReplicationOutcome& o : outcomes) {
    s.finished += o.finished;
    if (o.finished && !until) {
      walls.push_back(o.wall_s);
      wall_groups.push_back({o.wall_s});
    }
    goodputs.push_back(o.goodput());
    work.push_back(o.work_steps);
    interruptions.push_back(o.interruptions);
    s.mean_planned_restarts += o.planned_restarts;
    s.mean_degradations += o.degradations;
    s.mean_checkpoints += o.checkpoints;
    s.mean_elastic_restarts += o.elastic_restarts;
    for (size_t i = 0; i < s.mean_time_s.size(); ++i) s.mean_time_s[i] += o.time_s[i];
    for (size_t i = 0; i < failures.size(); ++i) failures[i] += o.failures_by_component[i];
    wall_total += o.wall_s;
  }
  const double n = std::max<size_t>(1, outcomes.size());
  s.mean_planned_restarts /= n;
  s.mean_degradations /= n;
  s.mean_checkpoints /= n;
  s.mean_elastic_restarts /= n;
  for (size_t i = 0; i < s.mean_time_s.size(); ++i) {
    s.mean_time_s[i] /= n;
    s.mean_fraction[i] = wall_total > 0 ? s.mean_time_s[i] / (wall_total / n) : 0;
  }
  for (size_t i = 0; i < failures.size(); ++i) {
    s.components.push_back(
        {plan.resilience.components[i].name, s.rates.job_rate_per_s[i], failures[i] / n});
  }
  const uint64_t seed = splitmix64(plan.seed ^ 0x747261696e696e67ULL);
  if (!wall_groups.empty()) {
    s.wall_ci = bootstrap_quantiles(wall_groups, {0.50, 0.95, 0.99}, 0.95, 1000, seed);
  }
  s.wall_s = summarize(walls);
  s.goodput = summarize(goodputs);
  const double half = s.goodput.count > 1 ? 1.959963984540054 * s.goodput.std /
                                                std::sqrt(static_cast<double>(s.goodput.count))
                                          : 0;
  s.goodput_mean_ci = {s.goodput.mean - half, s.goodput.mean + half};
  s.work_steps = summarize(work);
  s.interruptions = summarize(interruptions);
  auto add_deadline = [&](double deadline, double multiple) {
    int hits = 0;
    for (const ReplicationOutcome& o : outcomes) hits += o.finished && o.wall_s <= deadline;
    s.deadlines.push_back({deadline, multiple, outcomes.empty() ? 0.0 : hits / n,
                           wilson_interval(hits, static_cast<int>(outcomes.size()))});
  };
  for (double deadline : plan.length.deadlines_s) add_deadline(deadline, 0);
  for (double multiple : plan.length.relative_deadlines) {
    add_deadline(multiple * s.failure_free_s, multiple);
  }
  return s;
}

}  // namespace prismsim
