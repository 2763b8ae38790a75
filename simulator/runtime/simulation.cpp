#include "runtime/simulation.hpp"

#include <algorithm>
#include <cassert>
#include <string>

#include <simgrid/s4u.hpp>

#include "platform/sim_platform.hpp"

namespace prismsim {

namespace sg4 = simgrid::s4u;

namespace {
constexpr int kGuardPageActorLimit = 16384;  // two mappings per actor; Linux allows 65,530
}

Simulation::Simulation(const Scenario& scenario, const Job& job)
    : scenario_(scenario), job_(job), topology_(scenario.platform) {
  engine_ = create_engine();
  const double speed = scenario.platform.gpu.peak_flops.at(scenario.workload.precision);
  hosts_ = build_sim_platform(topology_, speed);

  const EngineSpec& engine = scenario.engine;
  for (size_t g = 0; g < job.groups.size(); ++g) {
    const auto& members = job.groups[g].ranks;
    const int n = static_cast<int>(members.size());
    Ring ring;
    ring.coarse = engine.collective_fidelity == CollectiveFidelity::coarse ||
                  (engine.collective_fidelity == CollectiveFidelity::automatic &&
                   n > engine.step_fidelity_max_ranks);
    position_.emplace_back(static_cast<size_t>(job.rank_count()), -1);
    for (int i = 0; i < n; ++i) {
      const int rank = members[static_cast<size_t>(i)];
      position_.back()[static_cast<size_t>(rank)] = i;
      ring.inbox.push_back(sg4::Mailbox::by_name("g" + std::to_string(g) + "-r" + std::to_string(rank)));
      const int next = members[static_cast<size_t>((i + 1) % n)];
      ring.max_hop_latency_s = std::max(
          ring.max_hop_latency_s,
          topology_.route_latency(job.gpu_of_rank[static_cast<size_t>(rank)],
                                  job.gpu_of_rank[static_cast<size_t>(next)]));
    }
    if (ring.coarse) ring.barrier = sg4::Barrier::create(static_cast<unsigned>(n));
    rings_.push_back(std::move(ring));
  }

  // Each actor's stack has a guard page; tens of thousands of them exceed vm.max_map_count.
  if (job.rank_count() > kGuardPageActorLimit) sg4::Engine::set_config("contexts/guard-size:0");
  ranks_done_.assign(static_cast<size_t>(scenario.simulation.steps), 0);
}

Simulation::~Simulation() = default;

const char* Simulation::fidelity() const {
  size_t largest = 0;
  for (size_t g = 1; g < rings_.size(); ++g) {
    if (rings_[g].size() > rings_[largest].size()) largest = g;
  }
  return rings_.empty() || !rings_[largest].coarse ? "step" : "coarse";
}

int Simulation::run(const StepCallback& on_step) {
  on_step_ = on_step;
  // Actors are created here, in the replication's process: their stacks would make fork() of a
  // large simulation fail for lack of commit charge.
  for (int rank = 0; rank < job_.rank_count(); ++rank) {
    sg4::Host* host = hosts_[static_cast<size_t>(job_.gpu_of_rank[static_cast<size_t>(rank)])];
    sg4::Actor::create("rank" + std::to_string(rank), host, [this, rank] { rank_main(rank); });
  }
  engine_->run();
  return steps_completed_;
}

void Simulation::rank_main(int rank) {
  const Program& program = *job_.program_of_rank[static_cast<size_t>(rank)];
  const double speed = sg4::this_actor::get_host()->get_speed();
  for (int step = 0; step < scenario_.simulation.steps; ++step) {
    // Consecutive compute ops have no outside interaction: run them as one execution.
    double pending_s = 0;
    auto flush_compute = [&] {
      if (pending_s <= 0) return;
      sg4::this_actor::execute(pending_s * speed);
      ++counters_.executions;
      pending_s = 0;
    };
    for (const Op& op : program.ops) {
      switch (op.kind) {
        case Op::Kind::compute:
          pending_s += op.seconds;
          break;
        case Op::Kind::all_reduce: {
          flush_compute();
          const int position = position_[static_cast<size_t>(op.group)][static_cast<size_t>(rank)];
          assert(position >= 0 && "a rank only runs collectives of its groups");
          ring_all_reduce(rings_[static_cast<size_t>(op.group)], position, op.bytes, counters_);
          break;
        }
      }
    }
    flush_compute();
    finish_step(step);
  }
}

void Simulation::finish_step(int step) {
  if (++ranks_done_[static_cast<size_t>(step)] < job_.rank_count()) return;
  const double now = sg4::Engine::get_clock();
  steps_completed_ = step + 1;
  if (on_step_) on_step_(step, now - last_step_end_s_);
  last_step_end_s_ = now;
}

}  // namespace prismsim
