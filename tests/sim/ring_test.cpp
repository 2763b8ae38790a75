#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/seeds.hpp"
#include "in_child.hpp"
#include "near.hpp"
#include "runtime/simulation.hpp"
#include "workload/layer_stack.hpp"

using prismsim::testing::Near;

using namespace prismsim;

namespace {

/// A platform of `nodes` nodes of `per_node` GPUs per datacenter, one-tier fabric, and a
/// layer-stack workload of one layer whose all-reduce carries `bytes`.
Scenario make_scenario(int per_node, std::vector<int> nodes_per_dc, double bytes) {
  Scenario s;
  s.name = "closed-form";
  PlatformSpec& p = s.platform;
  p.name = "test";
  p.gpu.peak_flops[Precision::bf16] = 100e12;
  p.gpus_per_node = per_node;
  p.nvlink = {100e9, 1e-6};
  p.nic = {25e9, 2e-6};
  p.fabric.levels = 1;
  p.fabric.radix = 64;
  p.fabric.port_bandwidth_Bps = 25e9;
  p.fabric.hop_latency_s = 5e-7;
  for (size_t i = 0; i < nodes_per_dc.size(); ++i) {
    p.datacenters.push_back({"dc" + std::to_string(i), nodes_per_dc[i]});
  }
  if (nodes_per_dc.size() == 2) p.wan.push_back({"dc0", "dc1", {10e9, 1e-3}});
  s.parallelism.dp = p.total_gpus();
  s.parallelism.gpus = p.total_gpus();
  WorkloadSpec& w = s.workload;
  w.name = "one-layer";
  w.layers = 1;
  w.parameters_per_layer = bytes / 2;  // bf16 gradients
  w.forward_flops_per_sample_per_layer = 1e12;
  w.global_batch = s.parallelism.dp;
  s.simulation.steps = 2;
  return s;
}

/// Compute time of one step of make_scenario's workload: 3 x 1 Tflop at 100 Tflop/s.
constexpr double kComputeS = 0.03;

/// Simulates `s` in a child process and returns its step times.
std::vector<double> simulate(const Scenario& s) {
  return testing::in_child([&] {
    const Job job = build_layer_stack_job(s);
    Simulation simulation(s, job);
    std::vector<double> times;
    simulation.run({}, [&](int, double t) { times.push_back(t); });
    return times;
  });
}

double simulate_step(Scenario s, CollectiveFidelity fidelity) {
  s.engine.collective_fidelity = fidelity;
  const auto times = simulate(s);
  REQUIRE(times.size() == 2);
  CHECK(times[0] == Near{times[1], 1e-12});
  return times[1];
}

/// 2(n-1)/n * S/B + 2(n-1) a: the ring all-reduce on one link kind.
double ring_closed_form(int n, double bytes, double bandwidth_Bps, double latency_s) {
  return 2.0 * (n - 1) / n * bytes / bandwidth_Bps + 2.0 * (n - 1) * latency_s;
}

}  // namespace

TEST_CASE("a ring all-reduce inside one node matches the closed form at both fidelities") {
  const double bytes = 16e6;
  const Scenario s = make_scenario(8, {1}, bytes);
  const double expected = kComputeS + ring_closed_form(8, bytes, 100e9, 1e-6);
  CHECK(simulate_step(s, CollectiveFidelity::step) == Near{expected, 1e-9});
  CHECK(simulate_step(s, CollectiveFidelity::coarse) == Near{expected, 1e-9});
}

TEST_CASE("a ring across nodes pays NIC bandwidth and NIC plus switch latency") {
  const double bytes = 64e6;
  const Scenario s = make_scenario(1, {4}, bytes);
  const double expected = kComputeS + ring_closed_form(4, bytes, 25e9, 2e-6 + 5e-7);
  CHECK(simulate_step(s, CollectiveFidelity::step) == Near{expected, 1e-9});
  CHECK(simulate_step(s, CollectiveFidelity::coarse) == Near{expected, 1e-9});
}

TEST_CASE("WAN latency and bandwidth appear exactly across datacenters") {
  const double bytes = 100e6;
  const Scenario s = make_scenario(1, {1, 1}, bytes);
  // NIC up (2 us + one switch), WAN (1 ms + the far switch), NIC down; the WAN is the bottleneck.
  const double latency = 2e-6 + 5e-7 + 1e-3 + 5e-7;
  const double expected = kComputeS + ring_closed_form(2, bytes, 10e9, latency);
  CHECK(simulate_step(s, CollectiveFidelity::step) == Near{expected, 1e-9});
  CHECK(simulate_step(s, CollectiveFidelity::coarse) == Near{expected, 1e-9});
}

TEST_CASE("step-by-step and coarse rings agree on mixed NVLink and NIC hops") {
  const Scenario s = make_scenario(8, {4}, 256e6);
  const double step = simulate_step(s, CollectiveFidelity::step);
  const double coarse = simulate_step(s, CollectiveFidelity::coarse);
  CAPTURE(step);
  CAPTURE(coarse);
  CHECK(coarse == Near{step, 0.01});
}

TEST_CASE("more bandwidth never slows a step and a slower NIC never speeds one") {
  uint64_t state = 7;
  for (int trial = 0; trial < 6; ++trial) {
    state = splitmix64(state);
    const int per_node = 1 + static_cast<int>(state % 4);
    const int nodes = 2 + static_cast<int>((state >> 8) % 4);
    const double bytes = 1e6 * static_cast<double>(1 + (state >> 16) % 200);
    Scenario s = make_scenario(per_node, {nodes}, bytes);
    CAPTURE(per_node);
    CAPTURE(nodes);
    CAPTURE(bytes);
    const double base = simulate_step(s, CollectiveFidelity::step);
    Scenario faster = s;
    faster.platform.nic.bandwidth_Bps *= 2;
    faster.platform.nvlink.bandwidth_Bps *= 2;
    CHECK(simulate_step(faster, CollectiveFidelity::step) <= base);
    Scenario slower = s;
    slower.platform.nic.bandwidth_Bps /= 2;
    CHECK(simulate_step(slower, CollectiveFidelity::step) >= base);
  }
}
