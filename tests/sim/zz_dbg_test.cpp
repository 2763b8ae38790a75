#include <doctest/doctest.h>
#include <cstdio>
#include "config/scenario_loader.hpp"
#include "in_child.hpp"
#include "runtime/collective_sweep.hpp"
#include "collectives/cost_model.hpp"
using namespace prismsim;
TEST_CASE("dbg") {
  Scenario s = load_scenario(PRISMSIM_SOURCE_DIR "/workloads/scenarios/tiny-gpt-h100.yaml", {});
  const PlatformSpec& p = s.platform;
  Topology topo(p);
  std::vector<int> gpus = {0,1,2,3,4,5,6,7};
  for (double bytes : {262144.0, 4e6, 64e6}) for (Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::automatic}) {
    CollectivePlanner planner(layout_of(gpus, topo), p.collective_channels());
    auto c = choose_collective(planner, gpus, topo, p, CollectiveOp::all_reduce, bytes, a);
    for (auto f : {CollectiveFidelity::step, CollectiveFidelity::coarse}) {
      EngineSpec e; e.collective_fidelity = f;
      auto t = testing::in_child([&]{ auto r = sweep_collective(p, e, CollectiveOp::all_reduce, 8, {bytes}, a); return std::vector<double>{r[0].seconds, (double)r[0].algorithm}; });
      printf("bytes %g alg %s -> chosen %s predicted %g ; %s sim %g\n", bytes, to_string(a), to_string(c.algorithm), c.seconds, f==CollectiveFidelity::step?"step":"coarse", t[0]);
    }
  }
}
