#include "runtime/ring_all_reduce.hpp"

#include <cmath>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>

namespace prismsim {
namespace {

/// Mailbox payloads are never read; a transfer only needs a non-null pointer.
int payload_tag = 0;

void exchange(Ring& ring, int position, uint64_t bytes, EventCounters& counters) {
  const int n = ring.size();
  auto send = ring.inbox[static_cast<size_t>((position + 1) % n)]->put_async(&payload_tag, bytes);
  ring.inbox[static_cast<size_t>(position)]->get<int>();
  send->wait();
  ++counters.transfers;
}

}  // namespace

void ring_all_reduce(Ring& ring, int position, double bytes, EventCounters& counters) {
  const int n = ring.size();
  if (n < 2) return;
  const int steps = 2 * (n - 1);
  if (ring.coarse) {
    const double volume = bytes * steps / n;
    exchange(ring, position, static_cast<uint64_t>(std::llround(volume)), counters);
    ring.barrier->wait();
    simgrid::s4u::this_actor::sleep_for((steps - 1) * ring.max_hop_latency_s);
    return;
  }
  const auto chunk = static_cast<uint64_t>(std::llround(bytes / n));
  for (int step = 0; step < steps; ++step) exchange(ring, position, chunk, counters);
}

}  // namespace prismsim
