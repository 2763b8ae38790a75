#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/scenario_loader.hpp"
#include "core/seeds.hpp"
#include "in_child.hpp"
#include "near.hpp"
#include "runtime/simulation.hpp"
#include "workload/job_builder.hpp"
#include "workload/transformer_job.hpp"

using prismsim::testing::Near;

using namespace prismsim;

namespace {

const std::string kTinyGpt = PRISMSIM_SOURCE_DIR "/workloads/scenarios/tiny-gpt-h100.yaml";
const std::string kDp = PRISMSIM_SOURCE_DIR "/workloads/scenarios/dp-h100.yaml";
const std::string kTwoDcs = PRISMSIM_SOURCE_DIR "/workloads/scenarios/dp-h100-2dc.yaml";

/// Step times of run `run` of `s`, simulated in a child process with the scenario's variability;
/// the last value is the hottest GPU temperature of the run.
std::vector<double> simulate(const Scenario& s, int run = 0) {
  return testing::in_child([&] {
    Topology topology(s.platform);
    const Job job = build_job(s, topology);
    Simulation simulation(s, job, std::move(topology));
    const VariationModel model(s.variability, s, simulation.topology(), job);
    const RunRequest request{
        run, run_seed(s.simulation.seed, static_cast<uint64_t>(run)), &model, {}};
    std::vector<double> times;
    const RunResult result = simulation.run(request, [&](int, double t) { times.push_back(t); });
    times.push_back(result.peak_temperature_c);
    return times;
  });
}

/// Watches every rank; `kernels`: records each kernel's duration too (as a trace does).
struct WatchAll : RunObserver {
  bool kernels = false;
  bool watches(int) const override { return true; }
  bool wants_kernels(int) const override { return kernels; }
};

/// Step times of run 0 of `s` with its variability, watched by `observer` if not null.
std::vector<double> observed_steps(const Scenario& s, RunObserver* observer) {
  return testing::in_child([&] {
    Topology topology(s.platform);
    const Job job = build_job(s, topology);
    Simulation simulation(s, job, std::move(topology));
    const VariationModel model(s.variability, s, simulation.topology(), job);
    RunRequest request{0, run_seed(s.simulation.seed, 0), &model, {}};
    if (observer != nullptr) request.observers.push_back(observer);
    std::vector<double> times;
    simulation.run(request, [&](int, double t) { times.push_back(t); });
    return times;
  });
}

double step_of(const Scenario& s, int run = 0) {
  const auto values = simulate(s, run);
  REQUIRE(values.size() == 2);
  return values[0];
}

/// Seconds of rank 0's compute ops in one step (the layer stack has no analytic collectives).
double compute_seconds(const Scenario& s) {
  const Job job = build_job(s, Topology(s.platform));
  double seconds = 0;
  for (const Op& op : job.program_of_rank[0]->streams[0]) {
    seconds += nominal_seconds(job, op);
  }
  return seconds;
}

}  // namespace

TEST_CASE("with variation, one rank per tensor-parallel group still gives the full run's steps") {
  // The representative draws for every member of its group and waits for the slowest at each
  // analytic collective, as every member of the full run does.
  const std::string variability =
      "variability={kernels: {default: {lognormal: {median: 1, sigma: 0.1}}}, "
      "gpus: {per_gpu: {normal: {mean: 1, stddev: 0.03, floor: 0.9}}}, "
      "slow_nodes: [{rank: 5, slowdown: 1.3}], "
      "thermal: {throttle_c: 40, time_constant: 0.01s}}";
  auto with = [&](const char* symmetry) {
    return load_scenario(
        kTinyGpt, {"parallelism.gpus=16", "parallelism.tp=4", "parallelism.pp=2",
                   "parallelism.dp=2", "engine.layer_collectives=analytic", "simulation.steps=2",
                   variability, std::string("engine.tensor_parallel_symmetry=") + symmetry});
  };
  const Scenario reduced = with("true"), full = with("false");
  REQUIRE(build_job(reduced, Topology(reduced.platform)).representative.size() == 16);
  std::vector<double> first_steps;
  for (int run = 0; run < 3; ++run) {
    CAPTURE(run);
    const auto a = simulate(reduced, run), b = simulate(full, run);
    REQUIRE(a.size() == 3);
    REQUIRE(b.size() == 3);
    CHECK(a[0] == b[0]);
    CHECK(a[1] == b[1]);
    CHECK(a[2] == b[2]);
    first_steps.push_back(a[0]);
  }
  // Each run draws its own variation.
  CHECK(first_steps[0] != first_steps[1]);
  CHECK(first_steps[1] != first_steps[2]);
}

TEST_CASE(
    "with variation on shared links, one rank per TP group on the quotient gives the full run") {
  // Every source but collective jitter (which keeps every rank simulated here): the drawn
  // compute is the slowest member's for every position, transfer jitter the slowest member's
  // draw, regimes and WAN round trips apply per link. Equal to 1e-12 (see transformer_sim_test).
  const std::string variability =
      "variability={kernels: {default: {lognormal: {median: 1, sigma: 0.1}}}, "
      "gpus: {per_gpu: {normal: {mean: 1, stddev: 0.03, floor: 0.9}}}, "
      "slow_nodes: [{rank: 5, slowdown: 1.3}], thermal: {throttle_c: 40, time_constant: 0.01s}, "
      "host: {launch_gap: {unit: ms, gamma: {shape: 2, mean: 0.05}}}, "
      "network: {transfer_jitter: {inter_node: {lognormal: {median: 1, sigma: 0.2}}, "
      "cross_datacenter: {lognormal: {median: 1, sigma: 0.2}}}, "
      "regimes: [{probability: 0.5, slowdown: 1}, {probability: 0.5, slowdown: 3}]";
  const std::vector<std::vector<std::string>> fabrics = {
      {"platform.fabric.radix=12", "platform.datacenters.0.nodes=8",
       "platform.fabric.oversubscription=[2]"},
      {"platform.fabric.radix=12",
       "platform.datacenters=[{name: a, nodes: 4}, {name: b, nodes: 4}]",
       "platform.wan=[{between: [a, b], bandwidth: 100Gbps, latency: 1ms}]"},
  };
  for (const auto& fabric : fabrics) {
    const bool wan = fabric.size() == 3 && fabric[2].find("wan") != std::string::npos;
    CAPTURE(fabric.back());
    auto with = [&](const char* symmetry) {
      auto overrides = fabric;
      for (const char* o :
           {"parallelism.gpus=32", "parallelism.tp=4", "parallelism.pp=2", "parallelism.dp=4",
            "platform.node.gpus=4", "engine.layer_collectives=analytic", "simulation.steps=3"}) {
        overrides.emplace_back(o);
      }
      overrides.push_back(variability +
                          (wan ? ", wan_rtt_ms: {lognormal: {median: 2, sigma: 0.3}}}}" : "}}"));
      overrides.push_back(std::string("engine.tensor_parallel_symmetry=") + symmetry);
      return load_scenario(kTinyGpt, overrides);
    };
    const Scenario reduced = with("true"), full = with("false");
    REQUIRE_FALSE(build_job(reduced, Topology(reduced.platform)).link_quotient.copies.empty());
    for (int run = 0; run < 2; ++run) {
      CAPTURE(run);
      const auto a = simulate(reduced, run), b = simulate(full, run);
      REQUIRE(a.size() == 4);
      REQUIRE(b.size() == 4);
      for (size_t i = 0; i < 4; ++i) CHECK(a[i] == Near{b[i], 1e-12});
    }
  }
}

TEST_CASE("a slow node never makes a step faster, wherever it is placed") {
  const std::vector<std::string> base = {"simulation.steps=1", "engine.layer_collectives=analytic"};
  const double nominal = step_of(load_scenario(kTinyGpt, base));
  double slowest = nominal;
  for (int stage = 0; stage < 2; ++stage) {
    for (int replica = 0; replica < 4; ++replica) {
      CAPTURE(stage);
      CAPTURE(replica);
      auto overrides = base;
      overrides.push_back(
          fmt::format("variability={{slow_nodes: [{{stage: {}, replica: {}, slowdown: 1.4}}]}}",
                      stage, replica));
      const double step = step_of(load_scenario(kTinyGpt, overrides));
      CHECK(step >= nominal);
      slowest = std::max(slowest, step);
    }
  }
  CHECK(slowest > nominal * 1.05);
}

TEST_CASE("collective jitter stretches a network collective by its slowdown") {
  // Data parallelism only: a step is the compute, then the gradient all-reduce across nodes.
  const std::vector<std::string> base = {"simulation.steps=1", "parallelism.gpus=16",
                                         "parallelism.dp=16"};
  const Scenario plain = load_scenario(kDp, base);
  auto jittered = base;
  jittered.push_back("variability={network: {jitter: {inter_node: 1.5}}}");
  const double compute = compute_seconds(plain);
  const double step = step_of(plain), slow = step_of(load_scenario(kDp, jittered));
  CHECK(slow - compute == Near{1.5 * (step - compute), 1e-9});
}

TEST_CASE("collective jitter stretches the transfer, not the wait for a late member") {
  // One of the two nodes computes 1.3x slower: the other node's ranks wait for it in the
  // all-reduce. Jitter stretches the transfer after the last member came (what `prismsim
  // calibrate` measures); stretching each member's whole call, wait included, would make the
  // early ranks finish 1.5 x 0.3 x compute later still.
  const std::vector<std::string> base = {"simulation.steps=1", "parallelism.gpus=16",
                                         "parallelism.dp=16"};
  const double compute = compute_seconds(load_scenario(kDp, base));
  auto slow_node = base;
  slow_node.push_back("variability={slow_nodes: [{rank: 0, slowdown: 1.3}]}");
  auto jittered = base;
  jittered.push_back(
      "variability={slow_nodes: [{rank: 0, slowdown: 1.3}], network: {jitter: {inter_node: "
      "1.5}}}");
  const double transfer = step_of(load_scenario(kDp, slow_node)) - 1.3 * compute;
  REQUIRE(transfer > 0);
  CHECK(step_of(load_scenario(kDp, jittered)) == Near{1.3 * compute + 1.5 * transfer, 1e-9});
}

TEST_CASE("transfer jitter stretches a pipeline transfer's bandwidth time by its slowdown") {
  // Two pipeline stages in one node, one microbatch: the step's critical path holds the forward
  // transfer and the backward one, so it grows linearly with the transfers' slowdown.
  const std::vector<std::string> base = {
      "simulation.steps=1", "parallelism.gpus=2",      "parallelism.tp=1",     "parallelism.dp=1",
      "parallelism.pp=2",   "workload.global_batch=1", "workload.microbatch=1"};
  const auto step_with = [&](const std::string& slowdown) {
    auto overrides = base;
    overrides.push_back("variability={network: {transfer_jitter: {intra_node: " + slowdown + "}}}");
    return step_of(load_scenario(kTinyGpt, overrides));
  };
  const double plain = step_of(load_scenario(kTinyGpt, base));
  CHECK(step_with("1") == plain);
  CHECK(step_with("0.5") == plain);  // draws below 1 count as 1
  const double twice = step_with("2"), thrice = step_with("3");
  CHECK(twice > plain);
  CHECK(thrice - twice == Near{twice - plain, 1e-6});
  // Other scopes' jitter leaves these transfers alone.
  auto inter = base;
  inter.push_back("variability={network: {transfer_jitter: {inter_node: 3}}}");
  CHECK(step_of(load_scenario(kTinyGpt, inter)) == plain);
}

TEST_CASE("a network regime divides inter-node bandwidth during its steps") {
  const std::vector<std::string> base = {"simulation.steps=1", "parallelism.gpus=16",
                                         "parallelism.dp=16", "engine.collective_fidelity=coarse"};
  const Scenario plain = load_scenario(kDp, base);
  auto congested = base;
  congested.push_back("variability={network: {regimes: [{probability: 1, slowdown: 2}]}}");
  auto calm = base;
  calm.push_back("variability={network: {regimes: [{probability: 1, slowdown: 1}]}}");
  const double step = step_of(plain);
  CHECK(step_of(load_scenario(kDp, calm)) == step);
  const double slow = step_of(load_scenario(kDp, congested));
  const double compute = compute_seconds(plain);
  // Bandwidth-bound: the all-reduce takes nearly twice as long (its latency terms do not grow).
  CHECK(slow - compute > 1.8 * (step - compute));
  CHECK(slow - compute < 2.0 * (step - compute));
}

TEST_CASE("a longer WAN round trip slows a cross-datacenter step") {
  const std::vector<std::string> base = {"simulation.steps=1"};
  double previous = 0;
  for (const char* rtt : {"1", "20", "80"}) {
    auto overrides = base;
    overrides.push_back(std::string("variability={network: {wan_rtt_ms: ") + rtt + "}}");
    const double step = step_of(load_scenario(kTwoDcs, overrides));
    CHECK(step > previous);
    previous = step;
  }
}

TEST_CASE("thermal throttling heats busy GPUs and slows their steps") {
  const std::vector<std::string> base = {"simulation.steps=3", "engine.layer_collectives=analytic"};
  const std::string thermal =
      "variability={thermal: {ambient_c: 25, time_constant: 0.02s, resistance_c_per_w: 0.1, "
      "idle_power_w: 100, busy_power_w: 700, derate_per_c: 0.02, throttle_c: ";
  auto with_throttle = [&](const char* throttle_c) {
    auto overrides = base;
    overrides.push_back(thermal + throttle_c + "}}");
    return simulate(load_scenario(kTinyGpt, overrides));
  };
  const auto cool = with_throttle("200");  // never throttles
  const auto hot = with_throttle("36");    // just above the idle steady state (35 C)
  const auto none = simulate(load_scenario(kTinyGpt, base));
  REQUIRE(cool.size() == 4);
  REQUIRE(hot.size() == 4);
  // Without throttling the clocks stay at 1: the deterministic steps (up to rounding).
  for (int step = 0; step < 3; ++step) {
    CHECK(cool[step] == Near{none[step], 1e-12});
  }
  CHECK(cool[3] > 25 + 0.1 * 100);  // busy GPUs heat above the idle steady state
  CHECK(cool[3] <= 25 + 0.1 * 700);
  for (int step = 0; step < 3; ++step) CHECK(hot[step] > cool[step]);
  CHECK(hot[3] < cool[3]);  // derated clocks draw less power
}

namespace {

/// tiny-gpt on one GPU: no communication, so a step is the sum of its compute and host waits.
const std::vector<std::string> kOneGpu = {
    "simulation.steps=1", "parallelism.gpus=1",    "parallelism.tp=1",          "parallelism.pp=1",
    "parallelism.dp=1",   "host.kernel_launch=0s", "host.collective_launch=0s", "host.step=0s"};

double one_gpu_step(const std::string& variability) {
  auto overrides = kOneGpu;
  if (!variability.empty()) overrides.push_back("variability=" + variability);
  return step_of(load_scenario(kTinyGpt, overrides));
}

/// Seconds of rank 0's compute per step in passes of one direction.
double pass_seconds(const Scenario& s, bool forward) {
  const Job job = build_job(s, Topology(s.platform));
  double seconds = 0;
  for (const Op& op : job.program_of_rank[0]->streams[0]) {
    const auto* run = std::get_if<ops::RunSegment>(&op);
    if (run != nullptr && run->pass && run->pass->forward == forward) {
      seconds += nominal_seconds(job, op);
    }
  }
  return seconds;
}

}  // namespace

TEST_CASE("a constant level slows all the compute it covers, as a persistent slowdown does") {
  // Every level covers every compute op of one GPU but the pass levels, which leave out the
  // optimizer step; a constant draw of 2 at any of them doubles the step.
  const double plain = one_gpu_step("");
  const double doubled = one_gpu_step("{gpus: {per_gpu: 2}}");
  CHECK(doubled == Near{2 * plain, 1e-9});
  for (const char* level : {"run", "step", "node_step", "gpu_step"}) {
    CAPTURE(level);
    CHECK(one_gpu_step(fmt::format("{{levels: {{{}: 2}}}}", level)) == Near{doubled, 1e-9});
  }
  const Scenario s = load_scenario(kTinyGpt, kOneGpu);
  const double forward = pass_seconds(s, true), backward = pass_seconds(s, false);
  REQUIRE(forward > 0);
  REQUIRE(backward > forward);
  CHECK(one_gpu_step("{levels: {forward_pass: 2}}") == Near{plain + forward, 1e-9});
  CHECK(one_gpu_step("{levels: {backward_pass: 2}}") == Near{plain + backward, 1e-9});
  CHECK(one_gpu_step("{levels: {pass: 2}}") == Near{plain + forward + backward, 1e-9});
  // Microbatch draws cover the passes (each microbatch's forward and backward).
  CHECK(one_gpu_step("{levels: {microbatch: 2}}") == Near{plain + forward + backward, 1e-9});
  // Levels multiply.
  CHECK(one_gpu_step("{levels: {run: 2, step: 1.5}}") == Near{3 * plain, 1e-9});
}

TEST_CASE("a slow GPU slows its forward and backward passes by their own factors") {
  const Scenario s = load_scenario(kTinyGpt, kOneGpu);
  const double forward = pass_seconds(s, true), backward = pass_seconds(s, false);
  const double plain = one_gpu_step("");
  CHECK(one_gpu_step("{slow_gpus: [{gpu: 0, forward: 3}]}") == Near{plain + 2 * forward, 1e-9});
  CHECK(one_gpu_step("{slow_gpus: [{gpu: 0, backward: 1.5}]}") ==
        Near{plain + 0.5 * backward, 1e-9});
  // `slowdown` covers everything, the passes included unless given their own factor.
  CHECK(one_gpu_step("{slow_gpus: [{gpu: 0, slowdown: 2}]}") == Near{2 * plain, 1e-9});
  CHECK(one_gpu_step("{slow_gpus: [{gpu: 0, slowdown: 2, forward: 1}]}") ==
        Near{2 * plain - forward, 1e-9});
  // Placed by grid coordinates in a 16-GPU job: the GPU of that rank, the same as naming it by
  // id; it slows the step.
  const std::vector<std::string> base = {"simulation.steps=1", "engine.layer_collectives=analytic"};
  const Scenario tiny16 = load_scenario(kTinyGpt, base);
  const double nominal = step_of(tiny16);
  const int rank = RankGrid(tiny16.parallelism).rank({0, 0, 1, 2});  // tp, cp, pp, dp
  const int gpu =
      build_job(tiny16, Topology(tiny16.platform)).gpu_of_rank[static_cast<size_t>(rank)];
  auto step_with = [&](const std::string& place) {
    auto overrides = base;
    overrides.push_back("variability={slow_gpus: [{" + place + ", forward: 1.5}]}");
    return step_of(load_scenario(kTinyGpt, overrides));
  };
  const double by_coordinates = step_with("stage: 1, replica: 2");
  CHECK(by_coordinates > nominal);
  CHECK(by_coordinates == step_with(fmt::format("gpu: {}", gpu)));
  CHECK(by_coordinates == step_with(fmt::format("rank: {}", rank)));
}

TEST_CASE("host step time and launch gaps delay the GPU by their durations") {
  const double plain = one_gpu_step("");
  CHECK(one_gpu_step("{host: {step: 10ms}}") == Near{plain + 0.010, 1e-9});
  // One GPU: every pass (a forward and a backward per microbatch) waits its gap.
  const Scenario s = load_scenario(kTinyGpt, kOneGpu);
  const Job job = build_job(s, Topology(s.platform));
  int passes = 0;
  for (const Op& op : job.program_of_rank[0]->streams[0]) {
    const auto* run = std::get_if<ops::RunSegment>(&op);
    passes += run != nullptr && run->pass && run->pass->first;
  }
  CHECK(passes == 2 * s.workload.global_batch / s.workload.microbatch);
  CHECK(one_gpu_step("{host: {launch_gap: 1ms}}") == Near{plain + passes * 0.001, 1e-9});
}

TEST_CASE("a launch gap inside a run of compute gives the same steps folded or split") {
  // Unobserved ranks fold each gap into the execution's timed wait; observed ones split the
  // execution at the gap (so that a trace shows it). The step times agree.
  const Scenario s = load_scenario(
      kTinyGpt, {"simulation.steps=2", "engine.layer_collectives=analytic",
                 "variability={host: {launch_gap: {unit: ms, gamma: {shape: 2, mean: 0.5}}}, "
                 "levels: {pass: {lognormal: {median: 1, sigma: 0.05}}}}"});
  WatchAll all;
  const auto folded = observed_steps(s, nullptr), split = observed_steps(s, &all);
  REQUIRE(folded.size() == 2);
  REQUIRE(split.size() == 2);
  for (size_t i = 0; i < 2; ++i) CHECK(folded[i] == Near{split[i], 1e-9});
  CHECK(folded[0] > step_of(load_scenario(
                        kTinyGpt, {"simulation.steps=1", "engine.layer_collectives=analytic"})));
}

TEST_CASE("watching a run does not change its step times, to the bit") {
  // Without kernel noise or thermal state an execution's time comes from its plan's sums; a
  // rank whose kernels are recorded (a trace) also times each chunk, and must still take its
  // time from the same sums. Levels, GPU speeds, and jitter on the analytic TP collectives
  // inside executions (24 layers with sequence parallelism: four collectives a layer).
  const Scenario s = load_scenario(
      kTinyGpt, {"simulation.steps=3", "engine.layer_collectives=analytic",
                 "parallelism.sequence_parallel=true", "workload.model.layers=24",
                 "variability={levels: {step: {lognormal: {median: 1, sigma: 0.05}}, "
                 "pass: {lognormal: {median: 1, sigma: 0.03}}}, "
                 "gpus: {per_gpu: {normal: {mean: 1, stddev: 0.03, floor: 0.9}}}, "
                 "network: {jitter: {intra_node: {lognormal: {median: 1, sigma: 0.2}}}}}"});
  WatchAll recorder;
  recorder.kernels = true;
  const auto unwatched = observed_steps(s, nullptr), watched = observed_steps(s, &recorder);
  REQUIRE(unwatched.size() == 3);
  CHECK(watched == unwatched);
  CHECK(unwatched[0] != unwatched[1]);  // the variation is there to be kept
}

TEST_CASE("level draws are seeded: the same run repeats, runs differ, a step's draw is shared") {
  const std::vector<std::string> base = {"simulation.steps=3", "engine.layer_collectives=analytic",
                                         "variability={levels: {step: {lognormal: {median: 1, "
                                         "sigma: 0.2}}}}"};
  const Scenario s = load_scenario(kTinyGpt, base);
  const auto a = simulate(s, 0), again = simulate(s, 0), other = simulate(s, 1);
  REQUIRE(a.size() == 4);
  CHECK(a == again);
  CHECK(a != other);
  CHECK(a[0] != a[1]);
}
