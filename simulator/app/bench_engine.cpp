// Benchmark: SimGrid's own cost, without prismsim's collective runtime, for the collective speed
// targets. On the platform prismsim builds, one actor per GPU runs a bare ring all-reduce:
//   step N:   2(N-1) steps; in each, a rank sends S/N bytes to its successor, receives from its
//             predecessor and waits for its send (what the step-by-step ring does, minus planning);
//   coarse N: one flow of 2(N-1)/N S bytes to the successor and one from the predecessor, then a
//             barrier and a sleep (what a coarse ring does).
// Prints the wall time of the run (platform build excluded) and of the whole process so far.
// usage: prismsim-bench-engine PLATFORM.yaml step|coarse GPUS [PATH=VALUE]...

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/scenario_loader.hpp"
#include "core/diagnostics.hpp"
#include "platform/sim_platform.hpp"

namespace {

namespace sg4 = simgrid::s4u;
constexpr double kBytes = 1024.0 * 1024 * 1024;
int payload = 0;  // every message carries a pointer to it

void step_ring(int rank, int n, const std::vector<sg4::Mailbox*>& inbox) {
  sg4::Mailbox* next = inbox[static_cast<size_t>((rank + 1) % n)];
  const auto chunk = static_cast<uint64_t>(kBytes / n);
  for (int step = 0; step < 2 * (n - 1); ++step) {
    sg4::CommPtr send = next->put_async(&payload, chunk);
    inbox[static_cast<size_t>(rank)]->get<int>();
    send->wait();
  }
}

void coarse_ring(int rank, int n, const std::vector<sg4::Mailbox*>& inbox,
                 const sg4::BarrierPtr& barrier) {
  int* received = nullptr;
  const auto volume = static_cast<uint64_t>(2.0 * (n - 1) / n * kBytes);
  std::vector<sg4::CommPtr> comms{
      inbox[static_cast<size_t>((rank + 1) % n)]->put_async(&payload, volume),
      inbox[static_cast<size_t>(rank)]->get_async<int>(&received)};
  sg4::Comm::wait_all(comms);
  barrier->wait();
  sg4::this_actor::sleep_for(1e-6 * 2 * (n - 1));
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  const std::string mode = argc > 2 ? argv[2] : "";
  if (argc < 4 || (mode != "step" && mode != "coarse")) {
    std::fprintf(stderr, "usage: %s PLATFORM.yaml step|coarse GPUS [PATH=VALUE]...\n", argv[0]);
    return 2;
  }
  try {
    const int n = std::stoi(argv[3]);
    const prismsim::PlatformSpec platform =
        prismsim::load_platform(argv[1], std::vector<std::string>(argv + 4, argv + argc));
    sg4::Engine* engine = prismsim::create_engine();
    const prismsim::Topology topology(platform);
    const auto hosts = prismsim::build_sim_platform(topology, 1e15);
    if (n < 2 || n > static_cast<int>(hosts.size())) {
      std::fprintf(stderr, "GPUS must be from 2 to %zu\n", hosts.size());
      return 2;
    }
    std::vector<sg4::Mailbox*> inbox;
    for (int rank = 0; rank < n; ++rank) {
      inbox.push_back(sg4::Mailbox::by_name(std::to_string(rank)));
    }
    const sg4::BarrierPtr barrier = sg4::Barrier::create(static_cast<unsigned>(n));
    for (int rank = 0; rank < n; ++rank) {
      sg4::Actor::create(std::to_string(rank), hosts[static_cast<size_t>(rank)], [&, rank] {
        if (mode == "step") {
          step_ring(rank, n, inbox);
        } else {
          coarse_ring(rank, n, inbox, barrier);
        }
      });
    }
    const auto run_start = std::chrono::steady_clock::now();
    engine->run();
    const auto end = std::chrono::steady_clock::now();
    fmt::print("{} ring, {} GPUs: simulated {:.6f} s; run {:.2f} s wall, process {:.2f} s wall\n",
               mode, n, sg4::Engine::get_clock(),
               std::chrono::duration<double>(end - run_start).count(),
               std::chrono::duration<double>(end - start).count());
    return 0;
  } catch (const prismsim::InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::logic_error& e) {  // GPUS is not a number
    std::fprintf(stderr, "GPUS must be a number, got '%s'\n", argv[3]);
    return 2;
  }
}
