#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "core/seeds.hpp"
#include "near.hpp"
#include "stats/distribution.hpp"
#include "training/training_model.hpp"
#include "training/training_summary.hpp"

using prismsim::testing::Near;
using namespace prismsim;

namespace {

constexpr double kHour = 3600;

/// 16 nodes of 8 GPUs, one data-parallel replica per node, a constant step of `step_s`.
TrainingPlan plan_with_step(double step_s, int64_t steps, int replications) {
  TrainingPlan plan;
  plan.length.kind = TrainLengthSpec::Kind::steps;
  plan.length.steps = steps;
  plan.length.replications = replications;
  plan.shape.nodes = 16;
  plan.shape.gpus_per_node = 8;
  plan.shape.replicas = 16;
  plan.shape.nodes_per_switch = 4;
  plan.shape.switches = 4;
  plan.shape.nodes_per_rack = 8;
  plan.shape.racks = 2;
  plan.sizes = {StepTimeSet{16, {{step_s}}}};
  plan.seed = 7;
  return plan;
}

FailureComponentSpec component(const char* name, FailureUnit per, double rate_per_unit_s,
                               FailureEffect effect = FailureEffect::crash) {
  FailureComponentSpec c;
  c.name = name;
  c.per = per;
  c.rate_per_unit_s = rate_per_unit_s;
  c.effect = effect;
  return c;
}

void sync_checkpoints(TrainingPlan& plan, int64_t interval_steps, double write_s) {
  plan.resilience.present = true;
  plan.resilience.checkpoint.enabled = true;
  plan.resilience.checkpoint.interval_steps = interval_steps;
  plan.resilience.checkpoint.write_s = write_s;
  plan.resilience.checkpoint.load_s = 0;
}

double mean_of(const std::vector<ReplicationOutcome>& outcomes, auto field) {
  double sum = 0;
  for (const auto& o : outcomes) sum += field(o);
  return sum / static_cast<double>(outcomes.size());
}

double sd_of(const std::vector<ReplicationOutcome>& outcomes, auto field) {
  const double mean = mean_of(outcomes, field);
  double squares = 0;
  for (const auto& o : outcomes) squares += (field(o) - mean) * (field(o) - mean);
  return std::sqrt(squares / static_cast<double>(outcomes.size() - 1));
}

double time_of(const ReplicationOutcome& o, TimeCause cause) {
  return o.time_s[static_cast<size_t>(cause)];
}

/// Exact expected time to finish `s` seconds of work that a failure (rate `lambda`) sends back
/// to its start, after a detection `d` (no failures) and a restart `r` (which failures restart):
/// A(s) = (e^{lambda s} - 1)(1/lambda + B), B = d + (e^{lambda r} - 1)(1/lambda + d).
double expected_segment(double s, double lambda, double d, double r) {
  const double b = d + std::expm1(lambda * r) * (1 / lambda + d);
  return std::expm1(lambda * s) * (1 / lambda + b);
}

}  // namespace

TEST_CASE("without failures a run takes its steps times the step time exactly") {
  TrainingPlan plan = plan_with_step(5.9, 1'000'000, 3);
  for (const auto& o : simulate_training(plan, 1)) {
    CHECK(o.finished);
    CHECK(o.wall_s == 1'000'000 * 5.9);
    CHECK(o.time_s[0] == 1'000'000 * 5.9);
    CHECK(o.goodput() == 1.0);
    CHECK(o.interruptions == 0);
    CHECK(o.work_steps == 1'000'000);
  }
  // Checkpoints add their writes and nothing else: 999,999 / 300 of them (none after the last
  // step).
  sync_checkpoints(plan, 300, 12.5);
  const auto o = simulate_replication(plan, 0);
  CHECK(o.checkpoints == 3333);
  CHECK(o.wall_s == Near{1'000'000 * 5.9 + 3333 * 12.5, 1e-12});
  CHECK(time_of(o, TimeCause::checkpoint) == Near{3333 * 12.5, 1e-9});
}

TEST_CASE("without failures the run time is the sum of independent steps of its run") {
  // One run whose steps are 1, 2 and 6 s: mean 3, variance 14/3. 10 steps sum exactly; 10,000
  // go through the normal approximation; both keep the mean and variance of the sum.
  for (const int64_t steps : {10, 10'000}) {
    CAPTURE(steps);
    TrainingPlan plan = plan_with_step(1, steps, 4000);
    plan.sizes = {StepTimeSet{16, {{1, 2, 6}}}};
    const auto outcomes = simulate_training(plan, 2);
    const auto wall = [](const ReplicationOutcome& o) { return o.wall_s; };
    const double n = static_cast<double>(steps);
    const double sd = std::sqrt(n * 14.0 / 3.0);
    CHECK(std::abs(mean_of(outcomes, wall) - 3 * n) < 4 * sd / std::sqrt(4000.0));
    CHECK(sd_of(outcomes, wall) == Near{sd, 0.05});
  }
}

TEST_CASE("each allocation follows one run: a slow run's steps persist until a restart") {
  // Two runs, 1 s and 2 s steps; no failures: a replication is entirely one or the other.
  TrainingPlan plan = plan_with_step(1, 100, 400);
  plan.sizes = {StepTimeSet{16, {{1.0}, {2.0}}}};
  int slow = 0;
  for (const auto& o : simulate_training(plan, 2)) {
    CHECK((o.wall_s == 100.0 || o.wall_s == 200.0));
    slow += o.wall_s == 200.0;
  }
  CHECK(slow > 150);
  CHECK(slow < 250);
}

TEST_CASE("sums of many steps follow the exact bootstrap sum (the normal approximation)") {
  // A skewed run (one step in ten takes 3x): 200-step sums drawn by the model against sums of
  // 200 bootstrap draws made here: same law to a KS distance within sampling error.
  std::vector<double> steps(10, 1.0);
  steps[0] = 3.0;
  const StepTimeModel model(StepTimeSet{1, {steps}});
  std::vector<double> drawn, exact;
  for (uint64_t i = 0; i < 4000; ++i) {
    drawn.push_back(model.sum_steps(0, 200, splitmix64(i + 17)));
    double sum = 0;
    for (uint64_t j = 0; j < 200; ++j) {
      sum += steps[static_cast<size_t>(splitmix64(i * 1000 + j + 5) % 10)];
    }
    exact.push_back(sum);
  }
  // Critical KS distance at 1% for two samples of 4,000: 1.63 sqrt(2/4000) = 0.036; the sums
  // take integer values (ties), which the continuous approximation spreads.
  CHECK(ks_distance(drawn, exact) < 0.06);
  const DistributionSummary s = summarize(drawn);
  CHECK(s.mean == Near{240, 0.002});
  CHECK(s.std == Near{std::sqrt(200 * 0.36), 0.05});
}

TEST_CASE("the number of interruptions is Poisson with the configured rate") {
  // 20,000 s of wall time, a per-node component of rate 1/16,000 s on 16 nodes: one failure per
  // 1,000 s, so 20 interruptions on average; detection and restart take no time, so the job
  // always holds its nodes.
  TrainingPlan plan = plan_with_step(1, 0, 4000);
  plan.length.kind = TrainLengthSpec::Kind::until;
  plan.length.until_s = 20'000;
  plan.resilience.present = true;
  plan.resilience.components = {component("node", FailureUnit::node, 1.0 / 16'000)};
  const auto outcomes = simulate_training(plan, 2);
  std::map<int, int> histogram;
  for (const auto& o : outcomes) ++histogram[o.interruptions];
  const auto count = [](const ReplicationOutcome& o) { return double(o.interruptions); };
  const double mean = mean_of(outcomes, count);
  const double variance = std::pow(sd_of(outcomes, count), 2);
  CHECK(std::abs(mean - 20) < 4 * std::sqrt(20.0 / 4000));
  CHECK(variance / mean == Near{1.0, 0.1});
  // Pearson's chi-square over 12 to 28 (and the tails pooled) against Poisson(20).
  double chi2 = 0;
  double below = 0, above = 1;
  int observed_below = 0, observed_above = 0;
  double pmf = std::exp(-20.0);
  for (int k = 0; k <= 40; ++k) {
    if (k > 0) pmf *= 20.0 / k;
    if (k < 12) {
      below += pmf;
      observed_below += histogram[k];
    } else if (k <= 28) {
      const double expected = 4000 * pmf;
      chi2 += std::pow(histogram[k] - expected, 2) / expected;
    }
    if (k <= 28) above -= pmf;
  }
  for (const auto& [k, n] : histogram) observed_above += k > 28 ? n : 0;
  chi2 += std::pow(observed_below - 4000 * below, 2) / (4000 * below);
  chi2 += std::pow(observed_above - 4000 * above, 2) / (4000 * above);
  CHECK(chi2 < 40.3);  // 99.9th percentile of chi-square with 18 degrees of freedom is 42.3
}

TEST_CASE("expected run time matches the exact formula for exponential failures") {
  // Constant 1 s steps, a checkpoint every 100 steps written in 10 s, detection 5 s, restart
  // 30 s, one failure per 500 s of the whole job, 5,000 steps: 49 checkpointed segments of
  // 110 s and a last one of 100 s, each retried from its start after a failure (a fifth of the
  // run is lost: 5% more failures would move the mean by 9 standard errors).
  TrainingPlan plan = plan_with_step(1, 5000, 4000);
  sync_checkpoints(plan, 100, 10);
  const double lambda = 1.0 / 500;
  plan.resilience.components = {component("software", FailureUnit::job, lambda)};
  plan.resilience.detect_s = DistributionSpec::constant_at(5);
  plan.resilience.restart_s = DistributionSpec::constant_at(30);
  const auto outcomes = simulate_training(plan, 2);
  const double expected =
      49 * expected_segment(110, lambda, 5, 30) + expected_segment(100, lambda, 5, 30);
  const auto wall = [](const ReplicationOutcome& o) { return o.wall_s; };
  const double se = sd_of(outcomes, wall) / std::sqrt(4000.0);
  CAPTURE(expected);
  CHECK(std::abs(mean_of(outcomes, wall) - expected) < 4 * se);
  for (const auto& o : outcomes) {
    CHECK(o.finished);
    double total = 0;
    for (double t : o.time_s) total += t;
    CHECK(total == Near{o.wall_s, 1e-9});
  }
}

TEST_CASE("with exponential failures, expected waste matches Young/Daly's first-order formula") {
  // M = 20,000 s between failures, checkpoints of 10 s at Young's interval sqrt(2 delta M) =
  // 632 s, recovery 5 + 30 s; 200 intervals per run. First-order waste:
  // delta/tau + (tau + delta)/(2M) + R/M = 0.0336; the exact formula differs by 1-2%.
  const double m = 20'000, delta = 10;
  const int64_t tau = std::llround(std::sqrt(2 * delta * m));
  TrainingPlan plan = plan_with_step(1, 200 * tau, 4000);
  sync_checkpoints(plan, tau, delta);
  plan.resilience.components = {component("software", FailureUnit::job, 1 / m)};
  plan.resilience.detect_s = DistributionSpec::constant_at(5);
  plan.resilience.restart_s = DistributionSpec::constant_at(30);
  CHECK(young_daly(plan).young_interval_s == Near{std::sqrt(2 * delta * m)});
  const auto outcomes = simulate_training(plan, 2);
  const auto waste = [](const ReplicationOutcome& o) { return o.wall_s / o.time_s[0] - 1; };
  const double formula = first_order_waste(static_cast<double>(tau), delta, m, 35);
  CAPTURE(formula);
  CHECK(mean_of(outcomes, waste) == Near{formula, 0.04});

  // The simulated waste is least near Young's interval (common random numbers across intervals).
  std::vector<double> wastes;
  for (const double f : {0.5, 0.75, 1.0, 1.5, 2.0}) {
    TrainingPlan p = plan;
    p.resilience.checkpoint.interval_steps = std::llround(f * static_cast<double>(tau));
    p.length.replications = 1000;
    wastes.push_back(mean_of(simulate_training(p, 2), waste));
  }
  CAPTURE(wastes[0]);
  CAPTURE(wastes[2]);
  CAPTURE(wastes[4]);
  const auto best = std::min_element(wastes.begin(), wastes.end()) - wastes.begin();
  CHECK(best >= 1);
  CHECK(best <= 3);
  CHECK(wastes[0] > wastes[2]);
  CHECK(wastes[4] > wastes[2]);
}

TEST_CASE("a longer checkpoint interval never reduces lost work") {
  TrainingPlan plan = plan_with_step(2, 50'000, 1500);
  plan.resilience.present = true;
  plan.resilience.components = {component("gpu", FailureUnit::gpu, 1.0 / (128 * 5 * kHour))};
  plan.resilience.detect_s = DistributionSpec::constant_at(60);
  plan.resilience.restart_s = DistributionSpec::constant_at(300);
  double previous = 0;
  for (const int64_t interval : {25, 50, 100, 200, 400, 800, 1600}) {
    CAPTURE(interval);
    sync_checkpoints(plan, interval, 20);
    const auto outcomes = simulate_training(plan, 2);
    const double lost = mean_of(
        outcomes, [](const ReplicationOutcome& o) { return time_of(o, TimeCause::lost_work); });
    CHECK(lost >= previous);
    previous = lost;
  }
}

TEST_CASE("results are identical for any number of threads") {
  TrainingPlan plan = plan_with_step(3, 20'000, 64);
  plan.sizes = {StepTimeSet{16, {{3, 3.1, 2.9}, {3.3, 3.2}}}, StepTimeSet{12, {{2.95}}}};
  sync_checkpoints(plan, 100, 15);
  plan.resilience.checkpoint.async = true;
  plan.resilience.checkpoint.snapshot_s = 1;
  plan.resilience.checkpoint.async_slowdown = 1.1;
  plan.resilience.components = {
      component("gpu", FailureUnit::gpu, 1.0 / (128 * 2 * kHour)),
      component("switch", FailureUnit::switch_, 1.0 / (4 * 10 * kHour)),
      component("slow", FailureUnit::gpu, 1.0 / (128 * 5 * kHour), FailureEffect::degrade),
      component("maintenance", FailureUnit::job, 1.0 / (8 * kHour), FailureEffect::planned)};
  plan.resilience.components[2].has_detect = true;
  plan.resilience.components[2].detect_s = DistributionSpec::constant_at(1800);
  plan.resilience.components[2].slowdown = DistributionSpec::constant_at(1.3);
  plan.resilience.elastic_replicas = {12};
  plan.resilience.spares = 1;
  plan.resilience.replacement_s = DistributionSpec::constant_at(6 * kHour);
  plan.resilience.restart_s = DistributionSpec::constant_at(120);
  const auto one = simulate_training(plan, 1);
  const auto four = simulate_training(plan, 4);
  REQUIRE(one.size() == four.size());
  for (size_t i = 0; i < one.size(); ++i) {
    CHECK(one[i].wall_s == four[i].wall_s);
    CHECK(one[i].time_s == four[i].time_s);
    CHECK(one[i].interruptions == four[i].interruptions);
    CHECK(one[i].failures_by_component == four[i].failures_by_component);
    CHECK(one[i].work_steps == four[i].work_steps);
  }
  // Every cause together still adds up, and the run does its steps.
  for (const auto& o : one) {
    double total = 0;
    for (double t : o.time_s) total += t;
    CHECK(total == Near{o.wall_s, 1e-9});
    CHECK(o.finished);
    CHECK(o.work_steps >= 20'000);
  }
}

TEST_CASE("hot spares avoid waiting for a replacement") {
  // Node failures every 4 h on average; a failed node is back after 2 h.
  TrainingPlan plan = plan_with_step(1, 200'000, 500);
  plan.resilience.present = true;
  plan.resilience.components = {component("node", FailureUnit::node, 1.0 / (16 * 4 * kHour))};
  plan.resilience.detect_s = DistributionSpec::constant_at(60);
  plan.resilience.restart_s = DistributionSpec::constant_at(300);
  plan.resilience.replacement_s = DistributionSpec::constant_at(2 * kHour);
  const auto waiting = [](const ReplicationOutcome& o) {
    return time_of(o, TimeCause::waiting_for_spares);
  };
  const auto interruptions = [](const ReplicationOutcome& o) { return double(o.interruptions); };
  const auto none = simulate_training(plan, 2);
  // Without spares each failure waits for its node: 2 h less the detection.
  CHECK(mean_of(none, waiting) == Near{mean_of(none, interruptions) * (2 * kHour - 60), 0.02});
  plan.resilience.spares = 4;
  const auto four = simulate_training(plan, 2);
  CHECK(mean_of(four, waiting) < 0.01 * mean_of(none, waiting));
  CHECK(mean_of(four, [](const auto& o) { return o.wall_s; }) <
        mean_of(none, [](const auto& o) { return o.wall_s; }));
}

TEST_CASE("elastic continuation runs with fewer replicas instead of waiting") {
  // A node failure leaves 15 nodes until its replacement arrives 10 h later; the job may run on
  // 15 or 12 replicas (one node each), whose steps take 0.98 and 0.95 s, and grows back at the
  // first checkpoint after the node returns.
  TrainingPlan plan = plan_with_step(1, 100'000, 300);
  plan.sizes.push_back(StepTimeSet{15, {{0.98}}});
  plan.sizes.push_back(StepTimeSet{12, {{0.95}}});
  sync_checkpoints(plan, 500, 5);
  plan.resilience.components = {component("node", FailureUnit::node, 1.0 / (16 * 10 * kHour))};
  plan.resilience.restart_s = DistributionSpec::constant_at(120);
  plan.resilience.replacement_s = DistributionSpec::constant_at(10 * kHour);
  const auto waiting_runs = simulate_training(plan, 2);
  plan.resilience.elastic_replicas = {15, 12};
  const auto elastic_runs = simulate_training(plan, 2);
  const auto wall = [](const ReplicationOutcome& o) { return o.wall_s; };
  const auto reduced = [](const ReplicationOutcome& o) {
    return time_of(o, TimeCause::reduced_replicas);
  };
  CHECK(mean_of(elastic_runs, wall) < mean_of(waiting_runs, wall));
  CHECK(mean_of(elastic_runs, reduced) > 0);
  CHECK(mean_of(waiting_runs, reduced) == 0);
  for (const auto& o : elastic_runs) {
    CHECK(o.finished);
    CHECK(o.work_steps >= 100'000);
  }
  // Only five failures within 10 h (below 12 replicas) make an elastic job wait.
  const auto waiting = [](const ReplicationOutcome& o) {
    return time_of(o, TimeCause::waiting_for_spares);
  };
  CHECK(mean_of(elastic_runs, waiting) < 0.05 * mean_of(waiting_runs, waiting));
  CHECK(mean_of(elastic_runs, [](const auto& o) { return double(o.elastic_restarts); }) > 0);
}

TEST_CASE("a degrading GPU slows the job until it is detected and removed") {
  // Degradations of 1.5x, found after 10 min of wall time: 600 s of wall at 1/1.5 speed cost
  // 200 s each; then a checkpoint and a restart without the GPU's node, nothing lost.
  TrainingPlan plan = plan_with_step(1, 400'000, 400);
  sync_checkpoints(plan, 1000, 5);
  auto slow = component("degrading gpu", FailureUnit::gpu, 1.0 / (128 * 20 * kHour),
                        FailureEffect::degrade);
  slow.has_detect = true;
  slow.detect_s = DistributionSpec::constant_at(600);
  slow.slowdown = DistributionSpec::constant_at(1.5);
  plan.resilience.components = {slow};
  plan.resilience.restart_s = DistributionSpec::constant_at(100);
  const auto outcomes = simulate_training(plan, 2);
  const auto count = [](const ReplicationOutcome& o) { return double(o.degradations); };
  const auto slow_time = [](const ReplicationOutcome& o) { return time_of(o, TimeCause::slow); };
  CHECK(mean_of(outcomes, count) > 3);
  CHECK(mean_of(outcomes, slow_time) == Near{200 * mean_of(outcomes, count), 0.05});
  for (const auto& o : outcomes) {
    CHECK(time_of(o, TimeCause::lost_work) == 0);
    CHECK(o.interruptions == 0);
  }
}

TEST_CASE("asynchronous checkpoints cost their snapshot and the slowdown during the write") {
  // 300-step intervals of 1 s steps, a 2 s snapshot, a 30 s write that slows steps by 1.25:
  // 30 s of wall do 24 s of steps, so each checkpoint costs 2 + 6 s.
  TrainingPlan plan = plan_with_step(1, 30'000, 1);
  sync_checkpoints(plan, 300, 30);
  plan.resilience.checkpoint.async = true;
  plan.resilience.checkpoint.snapshot_s = 2;
  plan.resilience.checkpoint.async_slowdown = 1.25;
  const auto o = simulate_replication(plan, 0);
  CHECK(o.checkpoints == 99);
  CHECK(o.wall_s == Near{30'000 + 99 * 8.0, 1e-9});
  CHECK(time_of(o, TimeCause::checkpoint) == Near{99 * 8.0, 1e-9});
  const YoungDaly y = young_daly(plan);
  CHECK(y.checkpoint_cost_s == Near{2 + 0.25 * 30});
}

TEST_CASE("an until run reports the work done in its fixed length") {
  TrainingPlan plan = plan_with_step(2, 0, 2);
  plan.length.kind = TrainLengthSpec::Kind::until;
  plan.length.until_s = 1001;
  for (const auto& o : simulate_training(plan, 1)) {
    CHECK(o.wall_s == 1001);
    CHECK(o.work_steps == 500);
    CHECK(o.finished);
  }
}

TEST_CASE("the summary reports percentiles, goodput, causes and deadlines") {
  TrainingPlan plan = plan_with_step(1, 100'000, 200);
  sync_checkpoints(plan, 600, 10);
  plan.resilience.components = {component("software", FailureUnit::job, 1.0 / (5 * kHour))};
  plan.resilience.restart_s = DistributionSpec::constant_at(600);
  plan.length.deadlines_s = {100'000, 200'000};
  plan.length.relative_deadlines = {1.0, 2.5};  // of the failure-free 100,000 s
  const auto outcomes = simulate_training(plan, 2);
  const TrainingSummary s = summarize_training(plan, outcomes);
  CHECK(s.replications == 200);
  CHECK(s.finished == 200);
  CHECK(s.wall_s.min > 100'000);
  REQUIRE(s.wall_ci.size() == 3);
  CHECK(s.wall_ci[0].low <= s.wall_s.p50);
  CHECK(s.wall_ci[0].high >= s.wall_s.p50);
  REQUIRE(s.deadlines.size() == 4);
  CHECK(s.deadlines[0].p_finish == 0);
  CHECK(s.deadlines[1].p_finish == 1);
  CHECK(s.deadlines[0].multiple == 0);
  CHECK(s.failure_free_s == 100'000);
  CHECK(s.deadlines[2].deadline_s == 100'000);
  CHECK(s.deadlines[2].multiple == 1.0);
  CHECK(s.deadlines[2].p_finish == 0);
  CHECK(s.deadlines[3].deadline_s == 250'000);
  CHECK(s.deadlines[3].p_finish == 1);
  CHECK(s.goodput.mean == Near{100'000 / s.wall_s.mean, 0.01});
  double fractions = 0;
  for (double f : s.mean_fraction) fractions += f;
  CHECK(fractions == Near{1, 1e-9});
  CHECK(s.interruptions.mean == Near{s.wall_s.mean / (5 * kHour), 0.1});
  CHECK(s.reference.mtbf_s == Near{5 * kHour});
  CHECK(s.reference.recovery_s == Near{600});
  CHECK(summarize_training(plan, outcomes).wall_ci[1].low == s.wall_ci[1].low);
}
