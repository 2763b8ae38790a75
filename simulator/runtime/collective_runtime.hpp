#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <simgrid/s4u/Barrier.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <tuple>
#include <vector>

#include "collectives/cost_model.hpp"
#include "collectives/plan.hpp"
#include "config/scenario.hpp"
#include "platform/topology.hpp"

namespace prismsim {

/// Counts of simulated activities, for events-per-second figures.
struct EventCounters {
  uint64_t executions = 0;
  uint64_t transfers = 0;
};

/// Messages carry no data, only a size. Sends `bytes` to `mailbox`.
simgrid::s4u::CommPtr send_async(simgrid::s4u::Mailbox* mailbox, uint64_t bytes);
/// Blocks until a message arrives on `mailbox`: one simcall, where Mailbox::get makes two.
void receive(simgrid::s4u::Mailbox* mailbox);
/// Posts a receive on `mailbox`; the caller waits for it later.
simgrid::s4u::CommPtr post_receive(simgrid::s4u::Mailbox* mailbox);

/// One collective call, resolved: the plan to run and how.
struct PreparedCollective {
  PreparedCollective() = default;
  PreparedCollective(PreparedCollective&&) = default;
  PreparedCollective& operator=(PreparedCollective&&) = default;

  Algorithm algorithm = Algorithm::ring;
  const ProtocolSpec* protocol = nullptr;
  bool coarse = false;
  std::unique_ptr<CollectivePlan> plan;
  std::vector<PhaseCost> phases;  ///< of the plan's coarse form
  double local_copy_s = 0;        ///< one-member groups: the device copy instead of a plan
};

/// A collective group inside a simulation: its members' GPUs, one mailbox per directed edge used,
/// and the plans of the calls it has seen (shared by all members).
class GroupRuntime {
 public:
  GroupRuntime(int id, std::vector<int> gpu_of_position, const Topology& topology,
               const PlatformSpec& platform, const EngineSpec& engine);

  int size() const { return planner_.layout().size(); }
  /// `forced` when it can run `op` on this group, else automatic choice.
  Algorithm applicable(CollectiveOp op, Algorithm forced) const {
    return forced == Algorithm::automatic || planner_.supports(op, forced, platform_.nvls)
               ? forced
               : Algorithm::automatic;
  }

  /// Chooses algorithm, protocol and fidelity for a call (cached; pure with respect to SimGrid).
  const PreparedCollective& prepare(CollectiveOp op, double bytes, Algorithm algorithm,
                                    int root = 0);

  /// Runs, in the calling actor, member `position`'s part of `call`.
  void run(int position, const PreparedCollective& call, EventCounters& counters);

 private:
  /// The mailbox of messages from `from` to `to` (positions in the group) among `mailboxes`
  /// (CollectivePlan::lane_mailboxes).
  simgrid::s4u::Mailbox* edge(int from, int to, int mailboxes);
  void run_coarse(int position, const PreparedCollective& call, EventCounters& counters);
  void run_steps(int position, const PreparedCollective& call, EventCounters& counters);
  /// Posts the sends of `step`, appending them to `sends`, or detached when `sends` is null.
  uint64_t post_sends(int position, int mailboxes, const CommStep& step,
                      const ProtocolSpec& protocol, std::vector<simgrid::s4u::CommPtr>* sends);

  int id_;
  std::vector<int> gpu_of_position_;
  const Topology& topology_;
  const PlatformSpec& platform_;
  const EngineSpec& engine_;
  CollectivePlanner planner_;
  simgrid::s4u::BarrierPtr barrier_;
  struct Edge {
    int to = 0, mailboxes = 0;
    simgrid::s4u::Mailbox* mailbox = nullptr;
  };
  std::vector<std::vector<Edge>> edges_from_;  ///< by sender position, sorted by (to, mailboxes)
  std::map<std::tuple<int, double, int, int>, PreparedCollective> prepared_;
};

}  // namespace prismsim
