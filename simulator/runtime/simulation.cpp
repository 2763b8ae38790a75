#include "runtime/simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <deque>
#include <optional>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/overloaded.hpp"
#include "platform/sim_platform.hpp"
#include "variability/variation.hpp"

namespace prismsim {

namespace sg4 = simgrid::s4u;

Simulation::Simulation(const Scenario& scenario, const Job& job)
    : Simulation(scenario, job, Topology(scenario.platform)) {}

Simulation::Simulation(const Scenario& scenario, const Job& job, Topology topology)
    : scenario_(scenario), job_(job), topology_(std::move(topology)) {
  engine_ = create_engine();
  const double speed = scenario.platform.gpu.peak_flops.at(scenario.workload.precision);
  hosts_ = build_sim_platform(topology_, speed, job.link_quotient);

  // Only the groups that simulated programs call get a runtime (with tensor-parallel symmetry
  // most groups have no simulated member) and memberships, indexed by rank: counted, then filled
  // in group order (so sorted by group).
  std::vector<char> used(job.groups.size(), 0);
  for (const auto& program : job.program_of_rank) {
    if (!program) continue;
    for (const auto& stream : program->streams) {
      for (const Op& op : stream) {
        if (const auto* call = std::get_if<ops::Collective>(&op)) used[call->group.index()] = 1;
      }
    }
  }
  membership_begin_.assign(static_cast<size_t>(job.rank_count()) + 1, 0);
  for (GroupId g(0); g.index() < job.groups.size(); g = GroupId(g.value() + 1)) {
    if (!used[g.index()]) continue;
    for (int rank : job.groups[g].ranks) ++membership_begin_[static_cast<size_t>(rank) + 1];
  }
  for (size_t r = 1; r < membership_begin_.size(); ++r) {
    membership_begin_[r] += membership_begin_[r - 1];
  }
  memberships_.resize(membership_begin_.back());
  std::vector<size_t> filled(membership_begin_.begin(), membership_begin_.end() - 1);
  groups_.resize(job.groups.size());
  for (GroupId g(0); g.index() < job.groups.size(); g = GroupId(g.value() + 1)) {
    if (!used[g.index()]) continue;
    const CollectiveGroup& group = job.groups[g];
    std::vector<int> gpus;
    gpus.reserve(group.ranks.size());
    for (size_t i = 0; i < group.ranks.size(); ++i) {
      const auto rank = static_cast<size_t>(group.ranks[i]);
      memberships_[filled[rank]++] = {g, static_cast<int>(i)};
      gpus.push_back(job.gpu_of_rank[rank]);
    }
    groups_[g] = std::make_unique<GroupRuntime>(g.value(), std::move(gpus), topology_,
                                                scenario.platform, scenario.engine);
  }
  for (const auto& program : job.program_of_rank) {
    if (program) stream_count_ += static_cast<int>(program->streams.size());
  }
  for (const Segment& segment : job.segments) {
    double seconds = 0;
    for (const Kernel& k : segment.kernels) {
      if (k.kernel_class == KernelClass::communication) seconds += k.seconds;
    }
    segment_communication_s_.push_back(seconds);
  }
}

Simulation::~Simulation() = default;

int Simulation::position_in(GroupId group, int rank) const {
  const auto begin = memberships_.begin() +
                     static_cast<std::ptrdiff_t>(membership_begin_[static_cast<size_t>(rank)]);
  const auto end = memberships_.begin() +
                   static_cast<std::ptrdiff_t>(membership_begin_[static_cast<size_t>(rank) + 1]);
  const auto it = std::lower_bound(
      begin, end, group, [](const auto& membership, GroupId g) { return membership.first < g; });
  assert(it != end && it->first == group && "a rank only runs collectives of its groups");
  return it->second;
}

int Simulation::simulated_ranks() const {
  int count = 0;
  for (int rank = 0; rank < job_.rank_count(); ++rank) count += job_.simulated(rank);
  return count;
}

std::string Simulation::collective_summary() {
  // The first call of the largest group that any program uses.
  const ops::Collective* first = nullptr;
  for (const auto& program : job_.program_of_rank) {
    if (!program) continue;
    for (const auto& stream : program->streams) {
      for (const Op& op : stream) {
        const auto* call = std::get_if<ops::Collective>(&op);
        if (call != nullptr &&
            (first == nullptr || groups_[call->group]->size() > groups_[first->group]->size())) {
          first = call;
        }
      }
    }
  }
  if (first == nullptr) return "none";
  GroupRuntime& group = *groups_[first->group];
  const PreparedCollective& call = group.prepare(
      first->op, first->bytes, group.applicable(first->op, scenario_.engine.collective_algorithm),
      first->root);
  return std::string(to_string(call.algorithm)) + "/" + call.protocol->name + "/" +
         (call.coarse ? "coarse" : "step");
}

/// The state of one run: the actors' shared bookkeeping, this run's variation draws and its
/// observers; and the op interpreter every stream's actor runs.
class Simulation::Run {
 public:
  Run(Simulation& simulation, const RunRequest& request, const StepCallback& on_step);
  RunResult simulate();

 private:
  /// Per rank: how often each event was recorded, and where streams wait for it.
  struct RankEvents {
    std::vector<int> recorded;
    sg4::MutexPtr mutex;
    sg4::ConditionVariablePtr changed;
  };

  void stream_main(int rank, int stream);
  /// Runs the fused compute `ops` of `rank` after `lead_s` (the host's launch gap, the GPU idle),
  /// for as long as they take.
  void compute(int rank, int stream, int step, const std::vector<const Op*>& ops, double lead_s,
               double* host_ahead_s);
  void collective(int rank, const ops::Collective& op);
  void finish_step(int step);
  /// Sets the network regime of `step`: inter-node bandwidth divided by its slowdown.
  void apply_regime(int step);
  void notify(const OpSpan& span) const;

  Simulation& sim_;
  const Job& job_;
  const RunRequest& request_;
  const StepCallback& on_step_;
  std::unique_ptr<RunVariation> variation_;          ///< this run's draws, when variation is active
  std::vector<std::vector<RunObserver*>> watchers_;  ///< per rank: observers watching it
  std::vector<char> kernels_wanted_;                 ///< per rank: some watcher wants kernels
  std::vector<RankEvents> events_;                   ///< per rank
  std::vector<int> streams_done_;                    ///< per step: streams that finished it
  std::vector<std::pair<sg4::Link*, double>> inter_node_links_;  ///< nominal Bps
  /// Per network group (with variation): calls each member has entered, and per call the latest
  /// start of a member so far (a double per call and group for the run: kilobytes per group at
  /// the step counts simulated). Jitter stretches a call's transfer, after its last member came.
  IdVector<GroupId, std::vector<uint64_t>> calls_entered_;
  IdVector<GroupId, std::vector<double>> latest_start_;
  double regime_slowdown_ = 1;
  double last_step_end_s_ = 0;
  RunResult result_;
};

Simulation::Run::Run(Simulation& simulation, const RunRequest& request, const StepCallback& on_step)
    : sim_(simulation), job_(simulation.job_), request_(request), on_step_(on_step) {
  const int ranks = job_.rank_count();
  events_.resize(static_cast<size_t>(ranks));
  watchers_.resize(static_cast<size_t>(ranks));
  kernels_wanted_.assign(static_cast<size_t>(ranks), 0);
  streams_done_.assign(static_cast<size_t>(sim_.scenario_.simulation.steps), 0);
  for (int rank = 0; rank < ranks; ++rank) {
    if (!job_.simulated(rank)) continue;
    for (RunObserver* observer : request.observers) {
      if (!observer->watches(rank)) continue;
      watchers_[static_cast<size_t>(rank)].push_back(observer);
      kernels_wanted_[static_cast<size_t>(rank)] |= observer->wants_kernels(rank);
    }
  }
  const VariationModel* model = request.variation;
  if (model == nullptr || !model->active()) return;
  variation_ = std::make_unique<RunVariation>(*model, request.seed);
  calls_entered_.resize(job_.groups.size());
  latest_start_.resize(job_.groups.size());
  // Routes read latencies from the topology when the simulation asks for them.
  for (const auto& [link, latency_s] : variation_->wan_latencies()) {
    sim_.topology_.set_latency(link, latency_s);
  }
  if (!model->spec().regimes.empty()) {
    const Topology& topology = sim_.topology_;
    for (int link = 0; link < static_cast<int>(topology.links().size()); ++link) {
      if (!topology.is_inter_node(link) ||
          !topology.links()[static_cast<size_t>(link)].can_saturate) {
        continue;
      }
      sg4::Link* sg_link = sg4::Link::by_name(topology.link_name(link));
      inter_node_links_.emplace_back(sg_link, sg_link->get_bandwidth());
    }
    apply_regime(0);
  }
}

RunResult Simulation::Run::simulate() {
  // Actors are created here, in the replication's process: their stacks would make fork() of a
  // large simulation fail for lack of commit charge.
  for (int rank = 0; rank < job_.rank_count(); ++rank) {
    if (!job_.simulated(rank)) continue;
    const Program& program = *job_.program_of_rank[static_cast<size_t>(rank)];
    if (program.events > 0) {
      RankEvents& events = events_[static_cast<size_t>(rank)];
      events.recorded.assign(static_cast<size_t>(program.events), 0);
      events.mutex = sg4::Mutex::create();
      events.changed = sg4::ConditionVariable::create();
    }
    sg4::Host* host = sim_.hosts_[static_cast<size_t>(job_.gpu_of_rank[static_cast<size_t>(rank)])];
    for (int stream = 0; stream < static_cast<int>(program.streams.size()); ++stream) {
      const std::string name =
          stream == 0 ? "rank" + std::to_string(rank) : fmt::format("rank{}.{}", rank, stream);
      sg4::Actor::create(name, host, [this, rank, stream] { stream_main(rank, stream); });
    }
  }
  try {
    sim_.engine_->run();
  } catch (...) {
    for (RunObserver* observer : request_.observers) observer->on_run_end();
    throw;
  }
  for (RunObserver* observer : request_.observers) observer->on_run_end();
  if (variation_) result_.peak_temperature_c = variation_->peak_temperature_c();
  return result_;
}

void Simulation::Run::notify(const OpSpan& span) const {
  for (RunObserver* observer : watchers_[static_cast<size_t>(span.rank)]) observer->on_op(span);
}

void Simulation::Run::stream_main(int rank, int stream) {
  const Program& program = *job_.program_of_rank[static_cast<size_t>(rank)];
  const std::vector<Op>& ops = program.streams[static_cast<size_t>(stream)];
  RankEvents& events = events_[static_cast<size_t>(rank)];
  const bool watched = !watchers_[static_cast<size_t>(rank)].empty();
  // The mailbox of each send and receive, looked up once: a lookup is a simcall. Activations
  // and gradients between two ranks have mailboxes of their own ("p0>1", "p1>0b"), so that
  // receives posted ahead match their direction's sends.
  struct Edge {
    std::tuple<int, int, bool> key;  // from, to, backward
    sg4::Mailbox* mailbox;
    std::deque<sg4::CommPtr> posted;  // receives posted and not yet awaited, oldest first
  };
  std::vector<Edge> edges;
  std::vector<size_t> edge_of_op(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    std::optional<std::tuple<int, int, bool>> key;
    if (const auto* send = std::get_if<ops::Send>(&ops[i])) {
      key.emplace(rank, send->peer, send->backward);
    } else if (const auto* recv = std::get_if<ops::Recv>(&ops[i])) {
      key.emplace(recv->peer, rank, recv->backward);
    } else if (const auto* post = std::get_if<ops::PostRecv>(&ops[i])) {
      key.emplace(post->peer, rank, post->backward);
    }
    if (!key) continue;
    auto it =
        std::find_if(edges.begin(), edges.end(), [&](const Edge& e) { return e.key == *key; });
    if (it == edges.end()) {
      const auto [from, to, backward] = *key;
      edges.push_back(
          {*key,
           sg4::Mailbox::by_name(fmt::format("p{}>{}{}", from, to, backward ? "b" : "")),
           {}});
      it = edges.end() - 1;
    }
    edge_of_op[i] = static_cast<size_t>(it - edges.begin());
  }
  std::vector<sg4::CommPtr> sends;     // complete on their own; awaited at the step's end
  std::vector<sg4::CommPtr> blocking;  // awaited after the receive batched with them, if any
  std::vector<const Op*> fused;        // consecutive compute ops: one execution
  double lead_s = 0;                   // the host's launch gap before `fused`
  // How far the host is ahead of the compute stream: while the stream waits for a posted receive
  // (Megatron's overlap_p2p_comm, which does not synchronise the host), the host goes on issuing
  // kernels. Reset where the host may wait: a collective (conservatively), an event, the step.
  double host_ahead_s = 0;
  double* const ahead = stream == 0 ? &host_ahead_s : nullptr;
  const bool launch_gaps = variation_ && variation_->has_launch_gaps();
  // Without observers or thermal state, a gap inside a run of compute changes only when the run
  // ends: it joins the run's timed wait instead of splitting it (one engine event fewer).
  const bool fold_gaps = launch_gaps && !watched && !variation_->has_thermal();
  for (int step = 0; step < sim_.scenario_.simulation.steps; ++step) {
    host_ahead_s = 0;
    if (stream == 0 && variation_ && variation_->has_host_step()) {
      sg4::this_actor::sleep_for(variation_->host_step_s(rank, step));
    }
    for (size_t op_index = 0; op_index < ops.size(); ++op_index) {
      const Op& op = ops[op_index];
      if (!blocking.empty() && !std::holds_alternative<ops::Recv>(op) &&
          !std::holds_alternative<ops::PostRecv>(op)) {
        sg4::Comm::wait_all(blocking);
        blocking.clear();
      }
      if (is_compute(op)) {
        const auto* run = std::get_if<ops::RunSegment>(&op);
        if (launch_gaps && run != nullptr && run->pass && run->pass->first) {
          // The host's gap before the pass: the GPU idles for it, in the execution's timed wait
          // (folded) or before an execution of the pass's own (split).
          const double gap_s = variation_->launch_gap_s(rank, step, *run->pass);
          if (!fused.empty() && !fold_gaps) {
            compute(rank, stream, step, fused, lead_s, ahead);
            fused.clear();
            lead_s = 0;
          }
          lead_s += gap_s;
        }
        fused.push_back(&op);
        continue;
      }
      if (!fused.empty()) {
        compute(rank, stream, step, fused, lead_s, ahead);
        fused.clear();
        lead_s = 0;
      }
      const double start = sg4::Engine::get_clock();
      bool notable = true;  // observers hear of collectives, receives and waits
      std::visit(Overloaded{
                     [](const ops::RunSegment&) {},
                     [](const ops::ComputeFor&) {},
                     [&](const ops::Collective& c) {
                       collective(rank, c);
                       host_ahead_s = 0;
                     },
                     [&](const ops::Send& send) {
                       // Transfer jitter stretches the transfer's bandwidth time: its size grows.
                       const double bytes =
                           variation_ ? send.bytes * variation_->transfer_slowdown(rank, send.peer)
                                      : send.bytes;
                       (send.blocking ? blocking : sends)
                           .push_back(send_async(edges[edge_of_op[op_index]].mailbox,
                                                 static_cast<uint64_t>(bytes)));
                       ++result_.counters.transfers;
                       notable = false;
                     },
                     [&](const ops::Recv& recv) {
                       Edge& edge = edges[edge_of_op[op_index]];
                       if (recv.posted) {
                         if (edge.posted.empty())
                           throw std::logic_error("a receive waited for was not posted");
                         edge.posted.front()->wait();
                         edge.posted.pop_front();
                         host_ahead_s += sg4::Engine::get_clock() - start;
                       } else {
                         receive(edge.mailbox);
                       }
                       if (!blocking.empty()) {
                         sg4::Comm::wait_all(blocking);
                         blocking.clear();
                       }
                     },
                     [&](const ops::PostRecv&) {
                       Edge& edge = edges[edge_of_op[op_index]];
                       edge.posted.push_back(post_receive(edge.mailbox));
                       notable = false;
                     },
                     [&](const ops::Record& record) {
                       const std::unique_lock lock(*events.mutex);
                       ++events.recorded[record.event.index()];
                       events.changed->notify_all();
                       notable = false;
                     },
                     [&](const ops::Wait& wait) {
                       host_ahead_s = 0;
                       std::unique_lock lock(*events.mutex);
                       while (events.recorded[wait.event.index()] <= step)
                         events.changed->wait(lock);
                     },
                 },
                 op);
      if (watched && notable) notify({rank, stream, step, start, sg4::Engine::get_clock(), &op});
    }
    if (!fused.empty()) {
      compute(rank, stream, step, fused, lead_s, ahead);
      fused.clear();
      lead_s = 0;
    }
    // Sends finish when their receivers take them; the step ends after they have.
    if (!blocking.empty()) sg4::Comm::wait_all(blocking);
    blocking.clear();
    if (!sends.empty()) sg4::Comm::wait_all(sends);
    sends.clear();
    finish_step(step);
  }
}

void Simulation::Run::compute(int rank, int stream, int step, const std::vector<const Op*>& ops,
                              double lead_s, double* host_ahead_s) {
  // The execution starts after the lead (an idle GPU), in the same timed wait: one event.
  const double start = sg4::Engine::get_clock() + lead_s;
  double nominal_s = 0;
  for (const Op* op : ops) nominal_s += nominal_seconds(job_, *op);
  const auto& watchers = watchers_[static_cast<size_t>(rank)];
  std::vector<std::vector<double>> member_kernel_s;
  // A host ahead of the GPU has already issued what the GPU would wait for at the segments'
  // start, up to the first time the host waits for the GPU.
  double skipped_s = 0;
  for (const Op* op : ops) {
    const auto* run = std::get_if<ops::RunSegment>(op);
    if (host_ahead_s == nullptr || *host_ahead_s <= 0 || run == nullptr) break;
    const Segment& segment = job_.segments[run->segment];
    const double saved_s = std::min(*host_ahead_s, segment.host_wait_s);
    skipped_s += saved_s;
    *host_ahead_s = segment.host_waits ? 0 : *host_ahead_s - saved_s;
  }
  // A rank's host runs nothing else, so its compute is a timed wait: as long as an execution of
  // the same work, and cheaper for the engine (no CPU sharing to solve).
  ExecutionTime time{std::max(0.0, nominal_s - skipped_s), 0};
  if (variation_) {
    time = variation_->execute(
        rank, ops, start, step,
        kernels_wanted_[static_cast<size_t>(rank)] ? &member_kernel_s : nullptr, skipped_s);
  }
  sg4::this_actor::sleep_for(lead_s + time.seconds);
  ++result_.counters.executions;
  if (watchers.empty()) return;
  ComputeSpan span{rank,
                   stream,
                   step,
                   start,
                   sg4::Engine::get_clock(),
                   &ops,
                   nominal_s,
                   time.communication_s,
                   skipped_s,
                   nullptr,
                   nullptr};
  if (variation_) {
    if (kernels_wanted_[static_cast<size_t>(rank)]) {
      span.member_kernel_s = &member_kernel_s;
      span.member_gpus = &variation_->member_gpus(rank);
    }
  } else {
    for (const Op* op : ops) {
      if (const auto* run = std::get_if<ops::RunSegment>(op)) {
        span.communication_s += sim_.segment_communication_s_[run->segment];
      }
    }
  }
  for (RunObserver* observer : watchers) observer->on_compute(span);
}

void Simulation::Run::collective(int rank, const ops::Collective& op) {
  const double start = sg4::Engine::get_clock();
  const int position = sim_.position_in(op.group, rank);
  GroupRuntime& group = *sim_.groups_[op.group];
  const Algorithm algorithm = group.applicable(op.op, sim_.scenario_.engine.collective_algorithm);
  uint64_t call = 0;  // an index: other members may grow latest_start_ while this one runs
  if (variation_) {
    auto& entered = calls_entered_[op.group];
    if (entered.empty()) entered.assign(job_.groups[op.group].ranks.size(), 0);
    call = entered[static_cast<size_t>(position)]++;
    auto& latest = latest_start_[op.group];
    if (latest.size() <= call) latest.resize(call + 1, 0.0);
    latest[call] = std::max(latest[call], start);
  }
  group.run(position, group.prepare(op.op, op.bytes, algorithm, op.root), result_.counters);
  if (variation_) {
    // Jitter stretches the transfer by its slowdown (the fabric model is its fastest): the time
    // from the last member's start to the end, as `prismsim calibrate` measures it. The wait for
    // late members is not stretched: a member that came early would otherwise be slowed by how
    // long it waited.
    const double slowdown = variation_->collective_slowdown(op.group, op.op, position);
    const double transfer_s = sg4::Engine::get_clock() - latest_start_[op.group][call];
    if (slowdown > 1 && transfer_s > 0) sg4::this_actor::sleep_for((slowdown - 1) * transfer_s);
  }
}

void Simulation::Run::finish_step(int step) {
  if (++streams_done_[static_cast<size_t>(step)] < sim_.stream_count_) return;
  const double now = sg4::Engine::get_clock();
  result_.steps_completed = step + 1;
  if (!inter_node_links_.empty()) apply_regime(step + 1);
  if (on_step_) on_step_(step, now - last_step_end_s_);
  last_step_end_s_ = now;
}

void Simulation::Run::apply_regime(int step) {
  const double slowdown = variation_->regime(step);
  if (slowdown == regime_slowdown_) return;
  regime_slowdown_ = slowdown;
  for (const auto& [link, nominal_Bps] : inter_node_links_) {
    link->set_bandwidth(nominal_Bps / slowdown);
  }
}

RunResult Simulation::run(const RunRequest& request, const StepCallback& on_step) {
  Run run(*this, request, on_step);
  return run.simulate();
}

}  // namespace prismsim
