#include <doctest/doctest.h>

#include <cmath>

#include "config/scenario_loader.hpp"
#include "near.hpp"
#include "training/training_plan.hpp"
#include "training/training_summary.hpp"

using prismsim::testing::Near;
using namespace prismsim;

namespace {

const std::string kTraining =
    std::string(PRISMSIM_SOURCE_DIR) + "/workloads/scenarios/llama3-405b-h100-training.yaml";
const std::string k405b =
    std::string(PRISMSIM_SOURCE_DIR) + "/workloads/scenarios/llama3-405b-h100.yaml";

}  // namespace

TEST_CASE("the published failure preset gives 419 unexpected interruptions in 54 days") {
  const Scenario s = load_scenario(kTraining, {});
  REQUIRE(s.resilience.present);
  CHECK(s.train.kind == TrainLengthSpec::Kind::until);
  CHECK(s.train.until_s == 54 * 86400.0);
  const TrainingPlan plan = training_plan(s, {StepTimeSet{128, {{10.0}}}});
  CHECK(plan.shape.nodes == 2048);
  CHECK(plan.shape.units(FailureUnit::gpu) == 16384);
  CHECK(plan.shape.units(FailureUnit::node) == 2048);
  const FailureRates rates = failure_rates(plan);
  double unexpected = 0;
  for (size_t i = 0; i < rates.job_rate_per_s.size(); ++i) {
    if (s.resilience.components[i].effect == FailureEffect::crash) {
      unexpected += rates.job_rate_per_s[i];
    }
  }
  CHECK(unexpected * 54 * 86400 == Near{419, 1e-5});
  CHECK(rates.crash_per_s * 54 * 86400 == Near{466, 1e-5});
  // Durations with units: a 3-minute median, a 24-hour median; sizes over bandwidths.
  CHECK(s.resilience.detect_s.mu == Near{std::log(180.0)});
  CHECK(s.resilience.replacement_s.mu == Near{std::log(86400.0)});
  CHECK(s.resilience.checkpoint.write_s == Near{5.68});
  CHECK(s.resilience.checkpoint.interval_s == 600);
  CHECK(checkpoint_interval_steps(plan) == 60);
  CHECK(s.resilience.spares == 64);
}

TEST_CASE("rates, lengths and checkpoint settings read with their units") {
  const Scenario s = load_scenario(
      k405b, {"simulation.train={tokens: 15.6T, replications: 10, deadlines: [60d, 1.1x]}",
              "platform.datacenters.0.nodes=2080",
              "resilience={failures: {scale: 2, components: [{name: sw, per: switch, rate: "
              "1/1000h}, {name: slow, per: gpu, mtbf: 1e6h, effect: degrade, slowdown: 1.2, "
              "detect: 2h}]}, recovery: {spares: 32, elastic: {replicas: [127, 120]}}, "
              "checkpoint: {interval: 200, write_time: 1min, mode: async, snapshot: 2s, "
              "async_slowdown: 1.05}}"});
  // 2,048 sequences of 8,192 tokens a step.
  CHECK(s.train.steps == 929'833);
  CHECK(s.train.deadlines_s == std::vector<double>{60 * 86400.0});
  CHECK(s.train.relative_deadlines == std::vector<double>{1.1});
  CHECK(s.train.replications == 10);
  const auto& r = s.resilience;
  REQUIRE(r.components.size() == 2);
  CHECK(r.components[0].rate_per_unit_s == Near{1 / 3.6e6});
  CHECK(r.components[1].rate_per_unit_s == Near{1 / 3.6e9});
  CHECK(r.components[1].detect_s.value == 7200);
  CHECK(r.rate_scale == 2);
  CHECK(r.elastic_replicas == std::vector<int>{127, 120});
  CHECK(r.checkpoint.async);
  CHECK(r.checkpoint.load_s == 60);
  CHECK(r.checkpoint.interval_steps == 200);
  // A 64-port leaf holds 32 NICs: 4 nodes; 2,048 nodes hang from 512 leaves.
  const JobShape shape = job_shape(s);
  CHECK(shape.nodes_per_switch == 4);
  CHECK(shape.switches == 512);
  CHECK(shape.nodes_down(FailureUnit::switch_) == 4);
  const Scenario smaller = elastic_scenario(s, 120);
  CHECK(smaller.parallelism.dp == 120);
  CHECK(smaller.workload.global_batch == 1920);
  CHECK(smaller.parallelism.gpus == 15360);
  const TrainingPlan plan = training_plan(s, {StepTimeSet{128, {{10.0}}}});
  // The switch component: 512 leaves, twice the rate: one per 3,515.6 s... of the whole job.
  CHECK(failure_rates(plan).job_rate_per_s[0] == Near{2 * 512 / 3.6e6});
  CHECK(young_daly(plan).checkpoint_cost_s == Near{2 + 0.05 * 60});
}
