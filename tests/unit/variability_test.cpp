#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/scenario_loader.hpp"
#include "core/diagnostics.hpp"
#include "near.hpp"
#include "platform/topology.hpp"
#include "variability/thermal.hpp"
#include "variability/variation.hpp"
#include "workload/job_builder.hpp"

using prismsim::testing::Near;

using namespace prismsim;

namespace {

const std::string kTinyGpt = PRISMSIM_SOURCE_DIR "/workloads/scenarios/tiny-gpt-h100.yaml";

/// tiny-gpt (dp 4, tp 2, pp 2 on two 8-GPU nodes) with its layer collectives charged
/// analytically, so that each tensor-parallel pair runs in lockstep, and `variability`.
Scenario tiny(const std::string& variability, std::vector<std::string> more = {}) {
  std::vector<std::string> overrides = {"engine.layer_collectives=analytic",
                                        "variability=" + variability, "host.kernel_launch=0s",
                                        "host.collective_launch=0s"};
  overrides.insert(overrides.end(), more.begin(), more.end());
  return load_scenario(kTinyGpt, overrides);
}

/// A job, its topology and its variation model, kept together.
struct Fixture {
  explicit Fixture(const Scenario& scenario)
      : s(scenario),
        topology(s.platform),
        job(build_job(s, topology)),
        model(s.variability, s, topology, job) {}
  Scenario s;
  Topology topology;
  Job job;
  VariationModel model;

  /// The first compute op of `rank`'s program.
  const Op* first_compute(int rank) const {
    for (const Op& op : job.program_of_rank[static_cast<size_t>(rank)]->streams[0]) {
      if (std::holds_alternative<ops::RunSegment>(op)) return &op;
    }
    return nullptr;
  }
  /// Nominal seconds of a compute op: its kernels, the GPU's waits for the host, its analytic
  /// collectives.
  double compute_s(const Op* op) const {
    return nominal(op) - communication_s(op) - of_class(op, KernelClass::idle);
  }
  double nominal(const Op* op) const {
    return job.segments[std::get<ops::RunSegment>(*op).segment].seconds;
  }
  double communication_s(const Op* op) const { return of_class(op, KernelClass::communication); }
  double of_class(const Op* op, KernelClass kernel_class) const {
    double seconds = 0;
    for (const Kernel& k : job.segments[std::get<ops::RunSegment>(*op).segment].kernels) {
      if (k.kernel_class == kernel_class) seconds += k.seconds;
    }
    return seconds;
  }
};

std::string load_error(const std::vector<std::string>& overrides) {
  try {
    load_scenario(kTinyGpt, overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the thermal model settles at its closed-form steady state under constant load") {
  ThermalSpec spec;
  spec.resistance_c_per_w = 0.08;
  spec.time_constant_s = 20;
  spec.idle_power_w = 100;
  spec.busy_power_w = 700;
  spec.throttle_c = 200;  // never reached: 25 + 0.08 x 700 = 81 C
  const ThermalModel model(spec);
  CHECK(model.initial_c(25) == Near{25 + 0.08 * 100});
  double t = model.initial_c(25);
  for (int second = 0; second < 600; ++second) t = model.advance(t, 25, 1.0, 1.0, model.clock(t));
  CHECK(t == Near{81.0, 1e-9});
  // One time constant covers 1 - 1/e of the way.
  const double after_tau = model.advance(33, 25, 20, 1.0, 1.0);
  CHECK(after_tau == Near{81 - 48 * std::exp(-1.0)});

  SUBCASE("above the throttle temperature the clock derates until heat balances") {
    spec.throttle_c = 70;
    spec.derate_per_c = 0.02;
    const ThermalModel hot(spec);
    double temperature = hot.initial_c(25);
    for (int second = 0; second < 2000; ++second) {
      temperature = hot.advance(temperature, 25, 0.5, 1.0, hot.clock(temperature));
    }
    // Fixed point T = 25 + R (P_idle + (P_busy - P_idle) f(T)^3), f(T) = 1 - 0.02 (T - 70),
    // solved by bisection.
    double low = 70, high = 81;
    for (int i = 0; i < 200; ++i) {
      const double mid = (low + high) / 2;
      const double f = 1 - 0.02 * (mid - 70);
      (25 + 0.08 * (100 + 600 * f * f * f) > mid ? low : high) = mid;
    }
    CHECK(temperature == Near{low, 1e-6});
    CHECK(hot.clock(temperature) < 1.0);
    CHECK(hot.clock(69.9) == 1.0);
    CHECK(hot.clock(1000) == spec.min_clock);
  }
  SUBCASE("a power cap limits the clock so that busy power equals the cap") {
    spec.power_cap_w = 500;
    const ThermalModel capped(spec);
    const double clock = capped.clock(30);
    CHECK(clock == Near{std::cbrt(400.0 / 600.0)});
    CHECK(capped.power_w(1.0, clock) == Near{500});
  }
}

TEST_CASE("a variability section is read with its parameters normalised") {
  const Scenario s =
      tiny(PRISMSIM_SOURCE_DIR "/workloads/variability/h100-all-sources.yaml",
           {"variability.kernels.gemm={lognormal: {mean: 1.1, sigma: 0.2, shift: 0.1}}",
            "variability.kernels.attention={gamma: {shape: 4, mean: 1.2}}"});
  const VariabilitySpec& v = s.variability;
  const DistributionSpec& gemm = v.kernel_classes.at("gemm");
  CHECK(gemm.family == DistributionSpec::Family::lognormal);
  CHECK(gemm.mu == Near{std::log(1.0) - 0.02});  // mean - shift = exp(mu + s^2/2)
  CHECK(v.kernel_classes.at("attention").scale == Near{0.3});
  CHECK(v.thermal.time_constant_s == 20);
  CHECK(v.thermal.ambient_per_rack);
  CHECK(v.regimes.size() == 3);
  CHECK(v.sources() == std::vector<std::string>{"kernels", "gpus", "slow_nodes", "thermal",
                                                "network_jitter", "network_regimes"});
  const VariabilitySpec no_thermal = v.without("thermal");
  CHECK_FALSE(no_thermal.has_thermal);
  CHECK(no_thermal.sources().size() == 5);
  CHECK(no_thermal.kernel_classes.size() == v.kernel_classes.size());
  const Scenario t = tiny(PRISMSIM_SOURCE_DIR "/workloads/variability/h100-all-sources.yaml",
                          {"variability.network.transfer_jitter={inter_node: {lognormal: "
                           "{median: 1, sigma: 0.1}}}"});
  CHECK(t.variability.transfer_jitter.count(CommScope::inter_node) == 1);
  CHECK(t.variability.sources().size() == 7);
  CHECK(t.variability.without("transfer_jitter").sources() == v.sources());
}

TEST_CASE("an empirical distribution reads its samples from a file, one per line") {
  const std::string file =
      (std::filesystem::temp_directory_path() / "prismsim-variability-samples.txt").string();
  std::ofstream(file) << "# slowdowns\n1.02\n\n0.98 \n1.5\n";
  const Scenario s = tiny("{kernels: {gemm: {empirical: {file: " + file + "}}}}");
  CHECK(s.variability.kernel_classes.at("gemm").samples == std::vector<double>{1.02, 0.98, 1.5});
  std::filesystem::remove(file);
}

TEST_CASE("bad variability input is reported at its place") {
  CHECK(load_error({"variability={kernels: {gemm: {lognormal: {sigma: 0.1}}}}"})
            .find("needs one of 'mu', 'median', 'mean'") != std::string::npos);
  CHECK(load_error({"variability={kernels: {gemm: {lognormol: {sigma: 0.1}}}}"})
            .find("unknown distribution 'lognormol' in 'variability.kernels.gemm' (did you mean "
                  "'lognormal'?)") != std::string::npos);
  CHECK(load_error({"variability={kernels: {communication: 1.1}}"})
            .find("communication varies by scope") != std::string::npos);
  CHECK(load_error({"variability={slow_nodes: [{stage: 2, slowdown: 1.5}]}"})
            .find("slow node: stage 2 does not exist (the job has 2)") != std::string::npos);
  CHECK(load_error({"variability={network: {wan_rtt_ms: 20}}"}).find("needs WAN links") !=
        std::string::npos);
  CHECK(load_error({"variability={network: {regimes: [{probability: 0.5, slowdown: 2}]}}"})
            .find("probabilities must sum to 1, got 0.5") != std::string::npos);
  CHECK(load_error({"variability={gpus: {per_gpu: -1}}"}).find("must be a positive number") !=
        std::string::npos);
  CHECK(load_error({"variability={gpus: {per_gpu: {uniform: {min: 2, max: 1}}}}"})
            .find("max must exceed min") != std::string::npos);
  CHECK(load_error({"variability={kernels: {gemm: {mixture: [{weight: 1, mixture: []}]}}}"})
            .find("mixtures cannot nest") != std::string::npos);
  CHECK(load_error({"variability={kernels: {gemm: {empirical: {samples: []}}}}"})
            .find("has no samples") != std::string::npos);
}

TEST_CASE("a source's draws do not depend on which other sources are on") {
  const std::string noise = "{kernels: {default: {lognormal: {median: 1, sigma: 0.1}}}";
  const Fixture noise_only(tiny(noise + "}"));
  // A GPU slowdown of 2 doubles the compute (not the collectives): with the same kernel draws,
  // exactly twice the compute time.
  const Fixture with_gpus(tiny(noise + ", gpus: {per_gpu: 2}}"));
  RunVariation a(noise_only.model, 42), b(with_gpus.model, 42), c(noise_only.model, 43);
  const Op* op = noise_only.first_compute(0);
  const double communication = noise_only.communication_s(op);
  CHECK(communication > 0);
  for (int i = 0; i < 5; ++i) {
    const double alone = a.execute(0, {op}, 0, 0).seconds - communication;
    CHECK(b.execute(0, {op}, 0, 0).seconds - communication == Near{2 * alone, 1e-12});
    CHECK(c.execute(0, {op}, 0, 0).seconds - communication != Near{alone, 1e-6});
  }
}

TEST_CASE("a lockstep group's execution lasts as long as its slowest member's") {
  // One GPU per node: the tensor-parallel pair of ranks 0 and 1 spans nodes 0 and 1. Slowing
  // node 1 slows the pair's compute for rank 0 too.
  const Fixture f(tiny("{slow_nodes: [{node: 1, slowdown: 1.5}]}", {"platform.node.gpus=1"}));
  const Op* op = f.first_compute(0);
  RunVariation run(f.model, 1);
  CHECK(run.execute(0, {op}, 0, 0).seconds ==
        Near{1.5 * f.compute_s(op) + f.communication_s(op), 1e-12});
}

TEST_CASE("a slow GPU slows its kernels but not its waits for the host") {
  // 1 ms per launch: the host is far behind the GPU, whose speed then changes only the kernels.
  const Fixture f(tiny("{slow_nodes: [{node: 0, slowdown: 2}]}", {"host.kernel_launch=1ms"}));
  const Op* op = f.first_compute(0);
  const double idle = f.of_class(op, KernelClass::idle);
  CHECK(idle > f.compute_s(op));
  RunVariation run(f.model, 1);
  CHECK(run.execute(0, {op}, 0, 0).seconds ==
        Near{2 * f.compute_s(op) + idle + f.communication_s(op), 1e-12});
}

TEST_CASE("a slow node placed by grid coordinates slows the ranks on that node only") {
  // Megatron's order [tp, cp, dp, pp]: rank = tp + 2 dp + 8 pp; replica 2's stage 1 is rank 12,
  // GPU 12, on node 1, which holds all of stage 1; stage 0 sits on node 0.
  const Fixture f(tiny("{slow_nodes: [{stage: 1, replica: 2, slowdown: 2}]}"));
  RunVariation run(f.model, 1);
  for (int rank : {0, 2, 4, 6}) {
    CHECK(run.execute(rank, {f.first_compute(rank)}, 0, 0).seconds ==
          f.nominal(f.first_compute(rank)));
  }
  for (int rank : {8, 10, 12, 14}) {
    const Op* op = f.first_compute(rank);
    CHECK(run.execute(rank, {op}, 0, 0).seconds ==
          Near{2 * f.compute_s(op) + f.communication_s(op), 1e-12});
  }
}

TEST_CASE("network regimes are drawn per step with their probabilities") {
  const Fixture f(
      tiny("{network: {regimes: [{probability: 0.7, slowdown: 1}, "
           "{probability: 0.2, slowdown: 1.5}, {probability: 0.1, slowdown: 3}]}}"));
  RunVariation run(f.model, 7);
  int counts[3] = {0, 0, 0};
  const int steps = 20000;
  for (int step = 0; step < steps; ++step) {
    const double r = run.regime(step);
    counts[r == 1 ? 0 : r == 1.5 ? 1 : 2]++;
    CHECK(run.regime(step) == r);  // the same step, the same regime
  }
  // Binomial standard deviations: 0.0032, 0.0028, 0.0021.
  CHECK(counts[0] / double(steps) == Near{0.7, 0.02});
  CHECK(counts[1] / double(steps) == Near{0.2, 0.05});
  CHECK(counts[2] / double(steps) == Near{0.1, 0.1});
}

TEST_CASE("collective jitter is a slowdown drawn per call and shared by its members") {
  const Fixture f(tiny("{network: {jitter: {inter_node: {lognormal: {median: 1, sigma: 0.5}}}}}",
                       {"engine.layer_collectives=network", "parallelism.order=[tp, cp, pp, dp]"}));
  // With pipeline stages inside a node, the data-parallel groups span both nodes.
  std::optional<GroupId> found;
  for (size_t g = 0; g < f.job.groups.size(); ++g) {
    if (f.job.groups[GroupId(g)].name == "dp") found = GroupId(g);
  }
  REQUIRE(found.has_value());
  const GroupId dp = *found;
  RunVariation run(f.model, 3);
  int above = 0;
  for (int call = 0; call < 200; ++call) {
    const double first = run.collective_slowdown(dp, CollectiveOp::all_reduce, 0);
    CHECK(first >= 1.0);
    CHECK(run.collective_slowdown(dp, CollectiveOp::all_reduce, 1) == first);
    above += first > 1.0;
  }
  CHECK(above > 60);  // about half the draws of a median-1 lognormal exceed 1
  CHECK(above < 140);
}

namespace {

/// The first compute op of `rank` in microbatch `microbatch`'s pass of direction `forward`.
const Op* pass_op(const Job& job, int rank, int microbatch, bool forward) {
  for (const Op& op : job.program_of_rank[static_cast<size_t>(rank)]->streams[0]) {
    const auto* run = std::get_if<ops::RunSegment>(&op);
    if (run != nullptr && run->pass && run->pass->forward == forward && run->microbatch &&
        *run->microbatch == microbatch) {
      return &op;
    }
  }
  return nullptr;
}

}  // namespace

TEST_CASE("level draws are shared where the level says: a step, a node, a GPU, a microbatch") {
  const char* levels[] = {"step", "node_step", "gpu_step", "microbatch"};
  for (const char* level : levels) {
    CAPTURE(level);
    const Fixture f(tiny(std::string("{levels: {") + level + ": {uniform: {min: 1, max: 2}}}}"));
    RunVariation run(f.model, 11);
    // The factor of a forward pass of microbatch 0 at rank `rank` in step `step`.
    auto factor = [&](int rank, int step) {
      const Op* op = pass_op(f.job, rank, 0, true);
      REQUIRE(op != nullptr);
      const ExecutionTime t = run.execute(rank, {op}, 0, step);
      return (t.seconds - t.communication_s - f.of_class(op, KernelClass::idle)) / f.compute_s(op);
    };
    // tiny-gpt: ranks 0 and 1 are a tensor-parallel pair (one lockstep unit) on node 0, stage 0;
    // the grid is [tp, cp, dp, pp]: rank 2 is replica 1 of stage 0, rank 8 stage 1 of replica 0
    // (node 1).
    const int same_node = 2, other_stage = 8;
    const double a = factor(0, 0);
    CHECK(a >= 1.0);
    CHECK(a <= 2.0);
    CHECK(factor(0, 1) != a);  // every level here draws again each step
    const bool by_node = std::string(level) == "node_step";
    const bool by_step = std::string(level) == "step";
    const bool by_microbatch = std::string(level) == "microbatch";
    CHECK((factor(same_node, 0) == Near{a, 1e-12}) == (by_step || by_node));
    CHECK((factor(other_stage, 0) == Near{a, 1e-12}) == (by_step || by_microbatch));
  }
}
