#include "runtime/simulation.hpp"

#include <algorithm>
#include <cassert>
#include <string>

#include <simgrid/s4u.hpp>

#include "platform/sim_platform.hpp"

namespace prismsim {

namespace sg4 = simgrid::s4u;

Simulation::Simulation(const Scenario& scenario, const Job& job)
    : scenario_(scenario), job_(job), topology_(scenario.platform) {
  engine_ = create_engine();
  const double speed = scenario.platform.gpu.peak_flops.at(scenario.workload.precision);
  hosts_ = build_sim_platform(topology_, speed);

  for (size_t g = 0; g < job.groups.size(); ++g) {
    const auto& members = job.groups[g].ranks;
    std::vector<int> gpus;
    position_.emplace_back(static_cast<size_t>(job.rank_count()), -1);
    for (size_t i = 0; i < members.size(); ++i) {
      position_.back()[static_cast<size_t>(members[i])] = static_cast<int>(i);
      gpus.push_back(job.gpu_of_rank[static_cast<size_t>(members[i])]);
    }
    groups_.push_back(std::make_unique<GroupRuntime>(static_cast<int>(g), std::move(gpus),
                                                     topology_, scenario.platform,
                                                     scenario.engine));
  }

  ranks_done_.assign(static_cast<size_t>(scenario.simulation.steps), 0);
}

Simulation::~Simulation() = default;

std::string Simulation::collective_summary() {
  size_t largest = 0;
  for (size_t g = 1; g < groups_.size(); ++g) {
    if (groups_[g]->size() > groups_[largest]->size()) largest = g;
  }
  for (const auto& program : job_.program_of_rank) {
    for (const Op& op : program->ops) {
      if (op.kind != Op::Kind::collective || op.group != static_cast<int>(largest)) continue;
      const PreparedCollective& call = groups_[largest]->prepare(
          op.collective, op.bytes, scenario_.engine.collective_algorithm, op.root);
      return std::string(to_string(call.algorithm)) + "/" + call.protocol->name + "/" +
             (call.coarse ? "coarse" : "step");
    }
  }
  return "none";
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
        case Op::Kind::collective: {
          flush_compute();
          const int position = position_[static_cast<size_t>(op.group)][static_cast<size_t>(rank)];
          assert(position >= 0 && "a rank only runs collectives of its groups");
          GroupRuntime& group = *groups_[static_cast<size_t>(op.group)];
          group.run(position,
                    group.prepare(op.collective, op.bytes, scenario_.engine.collective_algorithm,
                                  op.root),
                    counters_);
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
