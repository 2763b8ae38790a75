#include "runtime/collective_sweep.hpp"

#include <algorithm>
#include <numeric>
#include <simgrid/s4u.hpp>

#include "platform/sim_platform.hpp"

namespace prismsim {
namespace sg4 = simgrid::s4u;

std::vector<SweepRow> sweep_collective(const PlatformSpec& platform, const EngineSpec& engine,
                                       CollectiveOp op, int gpus, const std::vector<double>& sizes,
                                       Algorithm algorithm, EventCounters* counters) {
  sg4::Engine* sim = create_engine();
  const Topology topology(platform);
  const auto hosts = build_sim_platform(topology, 1e12);
  std::vector<int> members(static_cast<size_t>(gpus));
  std::iota(members.begin(), members.end(), 0);
  GroupRuntime group(0, members, topology, platform, engine);

  std::vector<SweepRow> rows(sizes.size());
  std::vector<double> finish(sizes.size(), 0.0);
  std::vector<double> start(sizes.size(), 0.0);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const PreparedCollective& call = group.prepare(op, sizes[i], algorithm);
    rows[i] = {sizes[i], 0, call.algorithm, call.protocol->name, call.coarse};
  }
  EventCounters events;
  auto between_sizes = sg4::Barrier::create(static_cast<unsigned>(gpus));
  for (int pos = 0; pos < gpus; ++pos) {
    sg4::Actor::create("rank" + std::to_string(pos), hosts[static_cast<size_t>(pos)], [&, pos] {
      for (size_t i = 0; i < sizes.size(); ++i) {
        if (i > 0) between_sizes->wait();  // everyone starts the first size at time 0
        start[i] = sg4::Engine::get_clock();
        group.run(pos, group.prepare(op, sizes[i], algorithm), events);
        finish[i] = std::max(finish[i], sg4::Engine::get_clock());
      }
    });
  }
  sim->run();
  for (size_t i = 0; i < sizes.size(); ++i) rows[i].seconds = finish[i] - start[i];
  if (counters != nullptr) *counters = events;
  return rows;
}

}  // namespace prismsim
