#include "workload/job_shape.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/scenario_loader.hpp"
#include "platform/topology.hpp"
#include "workload/job_builder.hpp"
#include "workload/run_estimate.hpp"

using namespace prismsim;

namespace {

const std::string kTinyGpt = PRISMSIM_SOURCE_DIR "/workloads/scenarios/tiny-gpt-h100.yaml";
const std::string kDp = PRISMSIM_SOURCE_DIR "/workloads/scenarios/dp-h100.yaml";

}  // namespace

TEST_CASE("the shape counted from one program per stage equals the built job's") {
  // Network TP collectives (the scenario's), analytic ones with and without tensor-parallel
  // symmetry, an oversubscribed fabric (symmetry on its quotient), nodes split across leaves (no
  // symmetry), DDP, FSDP and an interleaved schedule.
  const std::string split = "platform.fabric.radix=12";  // 6 down ports for nodes of 8 NICs
  const std::string analytic = "engine.layer_collectives=analytic";
  const std::vector<std::vector<std::string>> cases = {
      {},
      {analytic},
      {analytic, "engine.tensor_parallel_symmetry=false"},
      {analytic, "platform.fabric.oversubscription=[2]"},
      {analytic, split, "platform.datacenters.0.nodes=2", "parallelism.tp=4", "parallelism.dp=2"},
      {analytic, "parallelism.data_parallel=fsdp"},
      {analytic, "parallelism.data_parallel=ddp"},
      {"parallelism.schedule=interleaved", "parallelism.virtual_stages=2"},
  };
  for (const auto& overrides : cases) {
    std::string label;
    for (const std::string& o : overrides) label += o + " ";
    CAPTURE(label);
    const Scenario s = load_scenario(kTinyGpt, overrides);
    const Topology topology(s.platform);
    const RunShape built = shape_of(build_job(s, topology));
    const RunShape sampled = job_shape(s, topology);
    CHECK(sampled.ranks == built.ranks);
    CHECK(sampled.simulated_ranks == built.simulated_ranks);
    CHECK(sampled.streams == built.streams);
    CHECK(sampled.ops == built.ops);
    CHECK(sampled.executions == built.executions);
    CHECK(sampled.sends == built.sends);
    CHECK(sampled.collective_calls == built.collective_calls);
    CHECK(built.executions > 0);
    // With symmetry only tensor-parallel position 0 is simulated.
    auto has = [&](const std::string& o) {
      return std::find(overrides.begin(), overrides.end(), o) != overrides.end();
    };
    const bool symmetric =
        has(analytic) && !has("engine.tensor_parallel_symmetry=false") && !has(split);
    CHECK(built.simulated_ranks == (symmetric ? built.ranks / s.parallelism.tp : built.ranks));
  }
}

TEST_CASE("a layer stack's shape counts every rank's fused executions and one collective") {
  const Scenario s = load_scenario(kDp, {"simulation.steps=1"});
  const RunShape shape = job_shape(s, Topology(s.platform));
  CHECK(shape.ranks == s.parallelism.ranks());
  CHECK(shape.simulated_ranks == shape.ranks);
  CHECK(shape.streams == shape.ranks);
  // A layer stack is one run of compute ops and then the gradient all-reduce.
  CHECK(shape.executions == shape.ranks);
  CHECK(shape.collective_calls == shape.ranks);
  CHECK(shape.sends == 0);
}

TEST_CASE("the run estimate grows with ranks, steps, runs and runs at once") {
  RunShape shape;
  shape.ranks = 1024;
  shape.simulated_ranks = 128;
  shape.streams = 256;
  shape.ops = 100000;
  shape.executions = 20000;
  shape.sends = 10000;
  shape.collective_calls = 5000;
  const RunEstimate one = estimate_run(shape, 1, 1, 1);
  CHECK(one.events == doctest::Approx(35000));
  CHECK(one.peak_bytes > 0);
  CHECK(one.seconds > 0);
  CHECK(estimate_run(shape, 2, 1, 1).seconds > one.seconds);
  CHECK(estimate_run(shape, 1, 4, 1).seconds > estimate_run(shape, 1, 4, 4).seconds);
  CHECK(estimate_run(shape, 1, 4, 4).peak_bytes > one.peak_bytes);
  RunShape bigger = shape;
  bigger.ranks *= 2;
  bigger.streams *= 2;
  CHECK(estimate_run(bigger, 1, 1, 1).peak_bytes > one.peak_bytes);
}
