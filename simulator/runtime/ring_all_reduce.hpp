#pragma once

#include <cstdint>
#include <vector>

#include <simgrid/s4u/Barrier.hpp>
#include <simgrid/s4u/Mailbox.hpp>

namespace prismsim {

/// Counts of simulated activities, for events-per-second figures.
struct EventCounters {
  uint64_t executions = 0;
  uint64_t transfers = 0;
};

/// The simulation-side state of one ring: each member's inbox, in ring order.
struct Ring {
  std::vector<simgrid::s4u::Mailbox*> inbox;
  simgrid::s4u::BarrierPtr barrier;  ///< coarse mode: members leave together
  double max_hop_latency_s = 0;      ///< largest route latency between ring neighbours
  bool coarse = false;

  int size() const { return static_cast<int>(inbox.size()); }
};

/// Runs, in the calling actor, member `position`'s part of a ring all-reduce of `bytes`.
///
/// Step by step: 2(n-1) steps (reduce-scatter, then all-gather), each sending bytes/n to the
/// successor and receiving bytes/n from the predecessor; with one link of bandwidth B and latency
/// a per hop this takes 2(n-1) (a + bytes/(n B)).
/// Coarse: one flow of 2(n-1)/n bytes to the successor, then the ring waits for its slowest
/// member and adds the latency of the remaining 2(n-1)-1 steps; same closed form, 2n events.
void ring_all_reduce(Ring& ring, int position, double bytes, EventCounters& counters);

}  // namespace prismsim
