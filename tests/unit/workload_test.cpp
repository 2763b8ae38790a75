#include <doctest/doctest.h>

#include "config/scenario_loader.hpp"
#include "near.hpp"
#include "workload/layer_stack.hpp"
#include "workload/placement.hpp"

using prismsim::testing::Near;

using namespace prismsim;

TEST_CASE("ranks fill GPUs in order") {
  const Scenario s =
      load_scenario(PRISMSIM_SOURCE_DIR "/workloads/scenarios/dp-h100.yaml",
                    {"parallelism.dp=16", "parallelism.gpus=16", "workload.global_batch=16"});
  const auto gpus = place_ranks(s.parallelism, s.platform);
  REQUIRE(gpus.size() == 16);
  for (size_t r = 0; r < gpus.size(); ++r) CHECK(gpus[r] == static_cast<int>(r));
}

TEST_CASE("a layer-stack step is forward and backward per microbatch then one all-reduce") {
  const Scenario s = load_scenario(PRISMSIM_SOURCE_DIR "/workloads/scenarios/dp-h100.yaml",
                                   {"parallelism.dp=16", "parallelism.gpus=16",
                                    "workload.global_batch=64", "workload.microbatch=2"});
  const Job job = build_layer_stack_job(s);
  REQUIRE(job.rank_count() == 16);
  REQUIRE(job.groups.size() == 1);
  CHECK(job.groups[GroupId(0)].ranks.size() == 16);
  const Program& program = *job.program_of_rank[5];
  // 64 / 16 = 4 samples per rank = 2 microbatches of 2; 32 layers forward + 32 backward each.
  REQUIRE(program.streams[0].size() == 2 * 64 + 1);
  double compute_s = 0;
  for (size_t i = 0; i + 1 < program.streams[0].size(); ++i) {
    compute_s += std::get<ops::ComputeFor>(program.streams[0][i]).seconds;
  }
  const double flops = 4 * 32 * 3 * 1.79e12;
  CHECK(compute_s == Near{flops / (989e12 * 0.5)});
  const auto* reduce = std::get_if<ops::Collective>(&program.streams[0].back());
  REQUIRE(reduce != nullptr);
  CHECK(reduce->op == CollectiveOp::all_reduce);
  CHECK(reduce->bytes == Near{202e6 * 32 * 2});
}
