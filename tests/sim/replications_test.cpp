#include "montecarlo/replications.hpp"

#include <doctest/doctest.h>

#include <numeric>

#include "near.hpp"
#include "workload/layer_stack.hpp"

using prismsim::testing::Near;

using namespace prismsim;

namespace {

Scenario two_gpu_scenario(int steps) {
  Scenario s;
  s.name = "replications";
  PlatformSpec& p = s.platform;
  p.name = "pair";
  p.gpu.peak_flops[Precision::bf16] = 1e12;
  p.gpus_per_node = 2;
  p.nvlink = {1e9, 1e-6};
  p.nic = {1e9, 1e-6};
  p.fabric.levels = 1;
  p.fabric.radix = 8;
  p.datacenters = {{"dc", 1}};
  p.collectives.channels = 1;
  s.parallelism.dp = 2;
  s.simulation.steps = steps;
  s.workload.precision = Precision::bf16;
  return s;
}

Job pair_job(const Program& first, const Program& second) {
  Job job;
  job.gpu_of_rank = {0, 1};
  job.program_of_rank = {std::make_shared<Program>(first), std::make_shared<Program>(second)};
  job.groups.push_back(CollectiveGroup{{0, 1}, "pair"});
  return job;
}

}  // namespace

TEST_CASE("replications return every run in order with its own seed") {
  const Scenario s = two_gpu_scenario(3);
  const Program program{{{ops::ComputeFor{0.5}, ops::Collective{CollectiveOp::all_reduce, 2e6,
                                                                GroupId(0), 0, std::nullopt}}}};
  const Job job = pair_job(program, program);
  Simulation simulation(s, job);
  const auto runs = run_replications(simulation, replications(5, nullptr), 11, 2);
  REQUIRE(runs.size() == 5);
  for (int r = 0; r < 5; ++r) {
    CAPTURE(r);
    CHECK(runs[r].run == r);
    CHECK(runs[r].ok);
    REQUIRE(runs[r].step_times_s.size() == 3);
    // 0.5 s of compute, then a 2-rank ring: 2 steps of 1 MB at 1 GB/s plus 1 us each.
    CHECK(runs[r].step_times_s[0] == Near{0.5 + 2 * (1e-3 + 1e-6), 1e-12});
    CHECK(runs[r].counters.transfers == 3 * 2 * 2);
    for (int other = 0; other < r; ++other) CHECK(runs[other].seed != runs[r].seed);
  }
}

TEST_CASE("a run that stops early keeps the steps it finished and reports why") {
  // Rank 0 joins one more all-reduce per step than rank 1: the first step completes, then rank 0
  // waits forever for a partner and SimGrid ends the run.
  const Scenario s = two_gpu_scenario(2);
  const Program greedy{
      {{ops::ComputeFor{0.5},
        ops::Collective{CollectiveOp::all_reduce, 2e6, GroupId(0), 0, std::nullopt},
        ops::Collective{CollectiveOp::all_reduce, 2e6, GroupId(0), 0, std::nullopt}}}};
  const Program normal{{{ops::ComputeFor{0.5}, ops::Collective{CollectiveOp::all_reduce, 2e6,
                                                               GroupId(0), 0, std::nullopt}}}};
  const Job job = pair_job(greedy, normal);
  Simulation simulation(s, job);
  const auto runs = run_replications(simulation, replications(2, nullptr), 1, 2);
  REQUIRE(runs.size() == 2);
  for (const auto& run : runs) {
    CHECK_FALSE(run.ok);
    CHECK(run.step_times_s.size() == 1);
    CHECK(run.error == "run " + std::to_string(run.run) + " failed after 1 of 2 step(s)");
  }
}

namespace {

/// Rank 0 sends 1 MB to rank 1, then computes 0.5 s; rank 1 computes 0.2 s, then receives. Returns
/// the step time (one engine per process: one call per test case).
double send_then_compute(bool blocking) {
  const Scenario s = two_gpu_scenario(1);
  const Program sender{{{ops::Send{1, 1e6, std::nullopt, blocking}, ops::ComputeFor{0.5}}}};
  const Program receiver{{{ops::ComputeFor{0.2}, ops::Recv{0, 1e6, std::nullopt}}}};
  const Job job = pair_job(sender, receiver);
  Simulation simulation(s, job);
  const auto runs = run_replications(simulation, replications(1, nullptr), 1, 1);
  REQUIRE(runs.front().ok);
  return runs.front().step_times_s.front();
}

}  // namespace

TEST_CASE("an asynchronous send lets its sender compute on") {
  CHECK(send_then_compute(false) == Near{0.5, 1e-9});
}

TEST_CASE("a blocking send holds its sender until the receiver has the data") {
  // The transfer takes 1 us + 1 ms once rank 1 is ready at 0.2 s; then rank 0 computes.
  CHECK(send_then_compute(true) == Near{0.2 + 1e-6 + 1e6 / 1e9 + 0.5, 1e-9});
}

TEST_CASE("a blocking send batched with the receive that follows completes with it") {
  // Rank 0 sends to rank 1 and receives from it, as Megatron's send_forward_recv_backward; rank 1
  // does the same in the other order. Neither waits for its send before posting its receive, so
  // the exchange cannot deadlock; each then computes 0.1 s.
  const Scenario s = two_gpu_scenario(1);
  const Program first{{{ops::Send{1, 1e6, std::nullopt, true}, ops::Recv{1, 1e6, std::nullopt},
                        ops::ComputeFor{0.1}}}};
  const Program second{{{ops::Recv{0, 1e6, std::nullopt}, ops::Send{0, 1e6, std::nullopt, true},
                         ops::ComputeFor{0.1}}}};
  const Job job = pair_job(first, second);
  Simulation simulation(s, job);
  const auto runs = run_replications(simulation, replications(1, nullptr), 1, 1);
  REQUIRE(runs.front().ok);
  // Rank 1's send starts once it has received rank 0's: two transfers one after the other.
  CHECK(runs.front().step_times_s.front() == Near{2 * (1e-6 + 1e6 / 1e9) + 0.1, 1e-9});
}
