#include "runtime/simulation.hpp"

#include <algorithm>
#include <cassert>
#include <string>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include "platform/sim_platform.hpp"

namespace prismsim {

namespace sg4 = simgrid::s4u;

Simulation::Simulation(const Scenario& scenario, const Job& job)
    : Simulation(scenario, job, Topology(scenario.platform)) {}

Simulation::Simulation(const Scenario& scenario, const Job& job, Topology topology)
    : scenario_(scenario), job_(job), topology_(std::move(topology)) {
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
  for (const auto& program : job.program_of_rank) {
    if (program) stream_count_ += static_cast<int>(program->streams.size());
  }
  streams_done_.assign(static_cast<size_t>(scenario.simulation.steps), 0);
  for (const Segment& segment : job.segments) {
    double seconds = 0;
    for (const Kernel& k : segment.kernels) {
      if (k.kernel_class == KernelClass::communication) seconds += k.seconds;
    }
    segment_communication_s_.push_back(seconds);
  }
}

Simulation::~Simulation() = default;

int Simulation::simulated_ranks() const {
  int count = 0;
  for (int rank = 0; rank < job_.rank_count(); ++rank) count += job_.simulated(rank);
  return count;
}

std::string Simulation::collective_summary() {
  // The first call of the largest group that any program uses.
  const Op* first = nullptr;
  for (const auto& program : job_.program_of_rank) {
    if (!program) continue;
    for (const auto& stream : program->streams) {
      for (const Op& op : stream) {
        if (op.kind == Op::Kind::collective &&
            (first == nullptr || groups_[static_cast<size_t>(op.group)]->size() >
                                     groups_[static_cast<size_t>(first->group)]->size())) {
          first = &op;
        }
      }
    }
  }
  if (first == nullptr) return "none";
  GroupRuntime& group = *groups_[static_cast<size_t>(first->group)];
  const PreparedCollective& call = group.prepare(
      first->collective, first->bytes,
      group.applicable(first->collective, scenario_.engine.collective_algorithm), first->root);
  return std::string(to_string(call.algorithm)) + "/" + call.protocol->name + "/" +
         (call.coarse ? "coarse" : "step");
}

int Simulation::run(const StepCallback& on_step) {
  on_step_ = on_step;
  if (trace_ != nullptr && trace_->run() != run_) trace_ = nullptr;
  // Actors are created here, in the replication's process: their stacks would make fork() of a
  // large simulation fail for lack of commit charge.
  events_.resize(static_cast<size_t>(job_.rank_count()));
  traced_as_.assign(static_cast<size_t>(job_.rank_count()), {});
  if (trace_ != nullptr) {
    // A rank that is not simulated is drawn with its representative's timeline.
    for (int rank = 0; rank < job_.rank_count(); ++rank) {
      if (!trace_->wants(rank)) continue;
      const int simulated = job_.simulated(rank) ? rank : job_.representative[static_cast<size_t>(rank)];
      traced_as_[static_cast<size_t>(simulated)].push_back(rank);
    }
  }
  rank_times_.assign(static_cast<size_t>(job_.rank_count()), {});
  if (variation_model_ != nullptr && variation_model_->active()) {
    variation_ = std::make_unique<RunVariation>(*variation_model_, seed_);
    // Routes read latencies from the topology when the simulation asks for them.
    for (const auto& [link, latency_s] : variation_->wan_latencies()) {
      topology_.set_latency(link, latency_s);
    }
    if (!variation_model_->spec().regimes.empty()) {
      for (int link = 0; link < static_cast<int>(topology_.links().size()); ++link) {
        if (!topology_.is_inter_node(link) ||
            !topology_.links()[static_cast<size_t>(link)].can_saturate) {
          continue;
        }
        sg4::Link* sg_link = sg4::Link::by_name(topology_.link_name(link));
        inter_node_links_.emplace_back(sg_link, sg_link->get_bandwidth());
      }
      apply_regime(0);
    }
  }
  for (int rank = 0; rank < job_.rank_count(); ++rank) {
    if (!job_.simulated(rank)) continue;
    const Program& program = *job_.program_of_rank[static_cast<size_t>(rank)];
    if (program.events > 0) {
      RankEvents& events = events_[static_cast<size_t>(rank)];
      events.recorded.assign(static_cast<size_t>(program.events), 0);
      events.mutex = sg4::Mutex::create();
      events.changed = sg4::ConditionVariable::create();
    }
    sg4::Host* host = hosts_[static_cast<size_t>(job_.gpu_of_rank[static_cast<size_t>(rank)])];
    for (int stream = 0; stream < static_cast<int>(program.streams.size()); ++stream) {
      const std::string name = stream == 0 ? "rank" + std::to_string(rank)
                                           : fmt::format("rank{}.{}", rank, stream);
      sg4::Actor::create(name, host, [this, rank, stream] { stream_main(rank, stream); });
    }
  }
  try {
    engine_->run();
  } catch (...) {
    write_trace();
    throw;
  }
  write_trace();
  if (report_rank_times_ && !job_.representative.empty()) {
    for (int rank = 0; rank < job_.rank_count(); ++rank) {
      rank_times_[static_cast<size_t>(rank)] =
          rank_times_[static_cast<size_t>(job_.representative[static_cast<size_t>(rank)])];
    }
  }
  return steps_completed_;
}

void Simulation::stream_main(int rank, int stream) {
  const Program& program = *job_.program_of_rank[static_cast<size_t>(rank)];
  const std::vector<Op>& ops = program.streams[static_cast<size_t>(stream)];
  const std::vector<int>& traced_as = traced_as_[static_cast<size_t>(rank)];
  const bool traced = !traced_as.empty();
  RankEvents& events = events_[static_cast<size_t>(rank)];
  std::vector<sg4::CommPtr> sends;
  std::vector<const Op*> fused;  // compute ops of the pending execution (trace, variation)
  RankTimes& times = rank_times_[static_cast<size_t>(rank)];
  const bool timed = stream == 0 && report_rank_times_;  // the compute stream, when asked

  std::vector<std::vector<double>> member_kernel_s;  // traced: each lockstep member's kernels
  // The mailbox of each send and receive, looked up once: a lookup is a simcall.
  std::vector<sg4::Mailbox*> mailbox_of_op(ops.size(), nullptr);
  {
    std::vector<std::pair<std::pair<int, int>, sg4::Mailbox*>> seen;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (op.kind != Op::Kind::send && op.kind != Op::Kind::recv) continue;
      const auto edge =
          op.kind == Op::Kind::send ? std::pair{rank, op.peer} : std::pair{op.peer, rank};
      auto it =
          std::find_if(seen.begin(), seen.end(), [&](const auto& e) { return e.first == edge; });
      if (it == seen.end()) {
        seen.emplace_back(edge,
                          sg4::Mailbox::by_name(fmt::format("p{}>{}", edge.first, edge.second)));
        it = seen.end() - 1;
      }
      mailbox_of_op[i] = it->second;
    }
  }
  // A span that ends now, for every rank drawn with this one's timeline.
  auto span = [&](double start, TraceSpan s) {
    s.stream = stream;
    s.start_s = start;
    s.end_s = sg4::Engine::get_clock();
    for (int as : traced_as) {
      s.rank = as;
      trace_->add(s);
    }
  };
  auto op_seconds = [&](const Op& op) {
    return op.segment >= 0 ? job_.segments[static_cast<size_t>(op.segment)].seconds : op.seconds;
  };
  for (int step = 0; step < scenario_.simulation.steps; ++step) {
    // Consecutive compute ops have no outside interaction: run them as one execution.
    double pending_s = 0;
    auto flush_compute = [&] {
      if (pending_s <= 0) return;
      const double start = sg4::Engine::get_clock();
      // A rank's host runs nothing else, so its compute is a timed wait: as long as an
      // execution of the same work, and cheaper for the engine (no CPU sharing to solve).
      double communication_s = 0;
      if (variation_ != nullptr) {
        const ExecutionTime t =
            variation_->execute(rank, fused, start, step, traced ? &member_kernel_s : nullptr);
        communication_s = t.communication_s;
        sg4::this_actor::sleep_for(t.seconds);
      } else {
        if (timed) {
          for (const Op* op : fused) communication_s += segment_communication_s(*op);
        }
        sg4::this_actor::sleep_for(pending_s);
      }
      ++counters_.executions;
      if (timed) {
        const double elapsed = sg4::Engine::get_clock() - start;
        times.compute_s += elapsed - communication_s;
        times.layer_collective_s += communication_s;
      }
      if (traced) trace_kernels(rank, stream, start, pending_s, fused, member_kernel_s);
      fused.clear();
      pending_s = 0;
    };
    for (size_t op_index = 0; op_index < ops.size(); ++op_index) {
      const Op& op = ops[op_index];
      if (op.kind != Op::Kind::compute) flush_compute();
      const double start = sg4::Engine::get_clock();
      switch (op.kind) {
        case Op::Kind::compute:
          pending_s += op_seconds(op);
          fused.push_back(&op);
          break;
        case Op::Kind::collective: {
          const int position = position_[static_cast<size_t>(op.group)][static_cast<size_t>(rank)];
          assert(position >= 0 && "a rank only runs collectives of its groups");
          GroupRuntime& group = *groups_[static_cast<size_t>(op.group)];
          const Algorithm algorithm =
              group.applicable(op.collective, scenario_.engine.collective_algorithm);
          group.run(position, group.prepare(op.collective, op.bytes, algorithm, op.root),
                    counters_);
          if (variation_ != nullptr) {
            // Jitter stretches the call by its slowdown: the fabric model is its fastest.
            const double slowdown = variation_->collective_slowdown(op.group, position);
            if (slowdown > 1) {
              sg4::this_actor::sleep_for((slowdown - 1) * (sg4::Engine::get_clock() - start));
            }
          }
          if (timed) times.collective_s += sg4::Engine::get_clock() - start;
          if (traced) {
            const CollectiveGroup& g = job_.groups[static_cast<size_t>(op.group)];
            span(start, {.name = fmt::format("{} {}", g.name, to_string(op.collective)),
                         .category = "collective",
                         .microbatch = op.microbatch,
                         .op = to_string(op.collective),
                         .bytes = op.bytes,
                         .group = g.ranks});
          }
          break;
        }
        case Op::Kind::send: {
          // Transfer jitter stretches the transfer's bandwidth time: its size grows.
          const double bytes =
              variation_ != nullptr ? op.bytes * variation_->transfer_slowdown(rank, op.peer)
                                    : op.bytes;
          sends.push_back(send_async(mailbox_of_op[op_index], static_cast<uint64_t>(bytes)));
          ++counters_.transfers;
          break;
        }
        case Op::Kind::recv: {
          receive(mailbox_of_op[op_index]);
          if (timed) times.pipeline_wait_s += sg4::Engine::get_clock() - start;
          if (traced) {
            span(start, {.name = fmt::format("recv from rank {}", op.peer),
                         .category = "p2p",
                         .microbatch = op.microbatch,
                         .op = "recv",
                         .bytes = op.bytes,
                         .group = {op.peer, rank}});
          }
          break;
        }
        case Op::Kind::record: {
          const std::unique_lock lock(*events.mutex);
          ++events.recorded[static_cast<size_t>(op.event)];
          events.changed->notify_all();
          break;
        }
        case Op::Kind::wait: {
          std::unique_lock lock(*events.mutex);
          while (events.recorded[static_cast<size_t>(op.event)] <= step) events.changed->wait(lock);
          lock.unlock();
          if (timed) times.stream_wait_s += sg4::Engine::get_clock() - start;
          if (traced && sg4::Engine::get_clock() > start) {
            TraceSpan wait;
            wait.name = wait.category = "wait";
            span(start, std::move(wait));
          }
          break;
        }
      }
    }
    flush_compute();
    // Sends finish when their receivers take them; the step ends after they have.
    if (!sends.empty()) sg4::Comm::wait_all(sends);
    sends.clear();
    finish_step(step);
  }
}

void Simulation::finish_step(int step) {
  if (++streams_done_[static_cast<size_t>(step)] < stream_count_) return;
  const double now = sg4::Engine::get_clock();
  steps_completed_ = step + 1;
  if (!inter_node_links_.empty()) apply_regime(step + 1);
  if (on_step_) on_step_(step, now - last_step_end_s_);
  last_step_end_s_ = now;
}

void Simulation::apply_regime(int step) {
  const double slowdown = variation_->regime(step);
  if (slowdown == regime_slowdown_) return;
  regime_slowdown_ = slowdown;
  for (const auto& [link, nominal_Bps] : inter_node_links_) {
    link->set_bandwidth(nominal_Bps / slowdown);
  }
}

double Simulation::segment_communication_s(const Op& op) const {
  return op.segment < 0 ? 0.0 : segment_communication_s_[static_cast<size_t>(op.segment)];
}

void Simulation::trace_kernels(int rank, int stream, double start, double nominal_s,
                               const std::vector<const Op*>& fused,
                               const std::vector<std::vector<double>>& member_kernel_s) {
  // Without variation, kernels in proportion to their nominal durations.
  const double scale = (sg4::Engine::get_clock() - start) / nominal_s;
  for (int as : traced_as_[static_cast<size_t>(rank)]) {
    // With variation, the kernels as this rank's own GPU ran them.
    const std::vector<double>* own = nullptr;
    if (variation_ != nullptr) {
      const std::vector<int>& gpus = variation_->member_gpus(rank);
      const auto it = std::find(gpus.begin(), gpus.end(), job_.gpu_of_rank[static_cast<size_t>(as)]);
      if (it != gpus.end()) own = &member_kernel_s[static_cast<size_t>(it - gpus.begin())];
    }
    std::vector<int> lockstep;
    if (!job_.lockstep_of_rank.empty() && job_.lockstep_of_rank[static_cast<size_t>(as)] >= 0) {
      lockstep = job_.lockstep[static_cast<size_t>(job_.lockstep_of_rank[static_cast<size_t>(as)])];
    }
    double at = start;
    size_t next = 0;
    for (const Op* op : fused) {
      const auto add = [&](const std::string& name, const char* category, double seconds,
                           double bytes) {
        const double d = own != nullptr ? (*own)[next++] : seconds * scale;
        TraceSpan kernel;
        kernel.rank = as;
        kernel.stream = stream;
        kernel.start_s = at;
        kernel.end_s = at + d;
        kernel.name = name;
        kernel.category = category;
        kernel.microbatch = op->microbatch;
        if (category == std::string_view("communication")) {
          kernel.op = name;
          kernel.bytes = bytes;
          kernel.group = lockstep;
        }
        trace_->add(std::move(kernel));
        at += d;
      };
      if (op->segment < 0) {
        add("compute", "compute", op->seconds, 0);
        continue;
      }
      for (const Kernel& k : job_.segments[static_cast<size_t>(op->segment)].kernels) {
        add(k.name, to_string(k.kernel_class), k.seconds, k.bytes);
      }
    }
  }
}

void Simulation::write_trace() const {
  if (trace_ == nullptr) return;
  size_t streams = 1;
  for (const auto& program : job_.program_of_rank) {
    if (program) streams = std::max(streams, program->streams.size());
  }
  const std::vector<std::string> names = {"compute", "data-parallel", "data-parallel reduce"};
  TraceLayout layout;
  for (size_t s = 0; s < streams; ++s) {
    layout.stream_names.push_back(s < names.size() ? names[s] : fmt::format("stream {}", s));
  }
  for (int rank = 0; rank < job_.rank_count(); ++rank) {
    layout.rank_labels.push_back(job_.simulated(rank)
                         ? fmt::format("rank {} (GPU {})", rank,
                                       job_.gpu_of_rank[static_cast<size_t>(rank)])
                         : fmt::format("rank {} (GPU {}, as rank {})", rank,
                                       job_.gpu_of_rank[static_cast<size_t>(rank)],
                                       job_.representative[static_cast<size_t>(rank)]));
    layout.device_of_rank.push_back(job_.gpu_of_rank[static_cast<size_t>(rank)] %
                                    scenario_.platform.gpus_per_node);
  }
  trace_->write(layout);
}

}  // namespace prismsim
