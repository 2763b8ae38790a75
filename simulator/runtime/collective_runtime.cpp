#include "runtime/collective_runtime.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <string>

namespace prismsim {
namespace sg4 = simgrid::s4u;

namespace {

/// Mailbox payloads are never read: a transfer sends this address and receives into `sink`.
int payload_tag = 0;
int* sink = nullptr;

/// The protocol's costs that no transfer carries: its per-step cost, once per message on the
/// algorithm's critical path, and a streamed protocol's rate, once per phase.
void add_protocol_costs(const PreparedCollective& call) {
  const ProtocolSpec& protocol = *call.protocol;
  double seconds = 0;
  for (int steps : call.plan->phase_latency_steps()) seconds += steps * protocol.step_latency_s;
  for (const PhaseCost& phase : call.phases) seconds += streaming_seconds(phase, protocol);
  if (seconds > 0) sg4::this_actor::sleep_for(seconds);
}

}  // namespace

sg4::CommPtr send_async(sg4::Mailbox* mailbox, uint64_t bytes) {
  return mailbox->put_async(&payload_tag, bytes);
}

void receive(sg4::Mailbox* mailbox) {
  // Waiting on a comm not yet started posts and awaits it in one simcall.
  mailbox->get_init()->set_dst_data(reinterpret_cast<void**>(&sink), sizeof(void*))->wait();
}

sg4::CommPtr post_receive(sg4::Mailbox* mailbox) {
  return mailbox->get_init()->set_dst_data(reinterpret_cast<void**>(&sink), sizeof(void*))->start();
}

GroupRuntime::GroupRuntime(int id, std::vector<int> gpu_of_position, const Topology& topology,
                           const PlatformSpec& platform, const EngineSpec& engine)
    : id_(id),
      gpu_of_position_(std::move(gpu_of_position)),
      topology_(topology),
      platform_(platform),
      engine_(engine),
      planner_(planner_for(layout_of(gpu_of_position_, topology), platform)),
      barrier_(sg4::Barrier::create(static_cast<unsigned>(gpu_of_position_.size()))),
      edges_from_(gpu_of_position_.size()) {}

sg4::Mailbox* GroupRuntime::edge(int from, int to, int mailboxes) {
  // A member talks to few peers (one per lane in a ring; n - 1 in an all-to-all): a sorted list
  // per sender is cheaper than a hash table, whose lookups were a tenth of a step-by-step ring's
  // time.
  std::vector<Edge>& out = edges_from_[static_cast<size_t>(from)];
  auto find = [&] {
    return std::lower_bound(out.begin(), out.end(), std::pair{to, mailboxes},
                            [](const Edge& e, std::pair<int, int> key) {
                              return std::pair{e.to, e.mailboxes} < key;
                            });
  };
  auto it = find();
  if (it != out.end() && it->to == to && it->mailboxes == mailboxes) return it->mailbox;
  // by_name is a simcall: other members may run, and add edges, before it returns.
  auto* mailbox = sg4::Mailbox::by_name("g" + std::to_string(id_) + ":" + std::to_string(from) +
                                        ">" + std::to_string(to) + "#" + std::to_string(mailboxes));
  it = find();
  if (it == out.end() || it->to != to || it->mailboxes != mailboxes) {
    out.insert(it, Edge{to, mailboxes, mailbox});
  }
  return mailbox;
}

const PreparedCollective& GroupRuntime::prepare(CollectiveOp op, double bytes, Algorithm algorithm,
                                                int root) {
  const auto key = std::make_tuple(static_cast<int>(op), bytes, static_cast<int>(algorithm), root);
  auto found = prepared_.find(key);
  if (found != prepared_.end()) return found->second;

  PreparedCollective call;
  CollectiveChoice choice = choose_collective(planner_, gpu_of_position_, topology_, platform_, op,
                                              bytes, algorithm, root);
  call.algorithm = choice.algorithm;
  call.protocol = choice.protocol;
  call.phases = std::move(choice.phases);
  if (choice.local_copy) {
    call.local_copy_s = choice.seconds;
    return prepared_.emplace(key, std::move(call)).first->second;
  }
  call.plan = planner_.plan(op, call.algorithm, bytes, root);
  // Automatic: step by step while the call stays small (each step of each lane of each member is
  // a transfer) and its steps follow the algorithm (not NVLS tree's: docs/design.md); coarse
  // otherwise.
  int64_t transfers = 0;
  const int n = size();
  const bool steps_possible =
      n <= engine_.step_fidelity_max_ranks && call.plan->steps_follow_the_algorithm();
  if (steps_possible) {
    for (int position = 0; position < n; ++position) {
      for (int lane = 0; lane < call.plan->lanes(); ++lane) {
        transfers += call.plan->step_count(position, lane);
      }
    }
  }
  call.coarse = engine_.collective_fidelity == CollectiveFidelity::coarse ||
                (engine_.collective_fidelity == CollectiveFidelity::automatic &&
                 (!steps_possible || transfers > engine_.step_fidelity_max_transfers));
  return prepared_.emplace(key, std::move(call)).first->second;
}

void GroupRuntime::run(int position, const PreparedCollective& call, EventCounters& counters) {
  if (size() < 2) {
    sg4::this_actor::sleep_for(call.local_copy_s);
    return;
  }
  const double fixed_s = platform_.collectives.launch_latency_s + call.protocol->base_latency_s;
  if (fixed_s > 0) sg4::this_actor::sleep_for(fixed_s);
  if (call.coarse) {
    run_coarse(position, call, counters);
  } else {
    run_steps(position, call, counters);
  }
}

uint64_t GroupRuntime::post_sends(int position, int mailboxes, const CommStep& step,
                                  const ProtocolSpec& protocol, std::vector<sg4::CommPtr>* sends) {
  for (const Send& send : step.sends) {
    const auto bytes = static_cast<uint64_t>(std::llround(wire_bytes(send.bytes, protocol)));
    sg4::Mailbox* mailbox = edge(position, send.peer, mailboxes);
    if (sends != nullptr) {
      sends->push_back(send_async(mailbox, bytes));
    } else {
      // Nobody waits for it: SimGrid drops it when delivered.
      mailbox->put_init(&payload_tag, bytes)->detach();
    }
  }
  return step.sends.size();
}

void GroupRuntime::run_coarse(int position, const PreparedCollective& call,
                              EventCounters& counters) {
  const ProtocolSpec& protocol = *call.protocol;
  CommStep step;
  std::vector<sg4::CommPtr> comms;
  for (int index = 0; index < call.plan->phases(); ++index) {
    call.plan->phase(position, index, step);
    step.merge_by_peer();
    comms.clear();
    counters.transfers += post_sends(position, 0, step, protocol, &comms);
    for (int peer : step.recvs) comms.push_back(edge(peer, position, 0)->get_async<int>(&sink));
    if (!comms.empty()) sg4::Comm::wait_all(comms);
    // The phase ends for everyone with its slowest member; the algorithm's other message
    // latencies (and the protocol's per-step cost) are added analytically.
    barrier_->wait();
    sg4::this_actor::sleep_for(
        phase_remainder_seconds(call.phases[static_cast<size_t>(index)], protocol));
  }
}

void GroupRuntime::run_steps(int position, const PreparedCollective& call,
                             EventCounters& counters) {
  // Lanes progress independently: a lane's step waits for its receives, then posts its sends.
  // Sends complete on their own, as NCCL's do: a rank is done when it has received everything.
  const CollectivePlan& plan = *call.plan;
  const ProtocolSpec& protocol = *call.protocol;
  const int lanes = plan.lanes();
  if (lanes == 1) {
    // One lane: blocking gets, and a step's sends are awaited before the next step sends. Every
    // one-lane plan receives a message one step after it was sent (a unit test checks this), so
    // this cannot deadlock, and SimGrid handles these comms far faster than detached ones (27 s
    // instead of 40 s for a 1,024-GPU ring).
    CommStep step;
    std::vector<sg4::CommPtr> in_flight;
    for (int index = 0; index < plan.step_count(position, 0); ++index) {
      plan.step(position, 0, index, step);
      for (int peer : step.recvs) receive(edge(peer, position, 0));
      if (!in_flight.empty()) sg4::Comm::wait_all(in_flight);
      in_flight.clear();
      counters.transfers += post_sends(position, 0, step, protocol, &in_flight);
    }
    if (!in_flight.empty()) sg4::Comm::wait_all(in_flight);
    add_protocol_costs(call);
    return;
  }
  std::vector<int> next_step(static_cast<size_t>(lanes), 0);
  std::vector<int> waiting(static_cast<size_t>(lanes), 0);
  std::vector<sg4::CommPtr> recvs;
  std::vector<int> recv_lane;
  std::vector<CommStep> current(static_cast<size_t>(lanes));

  // Runs lane `lane` until it must wait for a message (or is done).
  auto advance = [&](int lane) {
    CommStep& step = current[static_cast<size_t>(lane)];
    int& index = next_step[static_cast<size_t>(lane)];
    while (true) {
      if (waiting[static_cast<size_t>(lane)] == 0 && index > 0) {
        counters.transfers +=
            post_sends(position, plan.lane_mailboxes(lane), step, protocol, nullptr);
      }
      if (index >= plan.step_count(position, lane)) return;
      plan.step(position, lane, index, step);
      ++index;
      for (int peer : step.recvs) {
        recvs.push_back(edge(peer, position, plan.lane_mailboxes(lane))->get_async<int>(&sink));
        recv_lane.push_back(lane);
      }
      waiting[static_cast<size_t>(lane)] = static_cast<int>(step.recvs.size());
      if (!step.recvs.empty()) return;
    }
  };
  for (int lane = 0; lane < lanes; ++lane) advance(lane);
  while (!recvs.empty()) {
    const auto done = static_cast<size_t>(sg4::Comm::wait_any(recvs));
    const int lane = recv_lane[done];
    recvs.erase(recvs.begin() + static_cast<std::ptrdiff_t>(done));
    recv_lane.erase(recv_lane.begin() + static_cast<std::ptrdiff_t>(done));
    if (--waiting[static_cast<size_t>(lane)] == 0) advance(lane);
  }
  add_protocol_costs(call);
}

}  // namespace prismsim
