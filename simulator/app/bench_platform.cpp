// Benchmark: builds the SimGrid platform of a scenario (after --set overrides) and prints the
// GPU and link counts, the build time and the peak memory of the process.
// usage: prismsim-bench-platform SCENARIO.yaml [PATH=VALUE]...

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "config/scenario_loader.hpp"
#include "core/diagnostics.hpp"
#include "platform/sim_platform.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SCENARIO.yaml [PATH=VALUE]...\n", argv[0]);
    return 2;
  }
  try {
    const std::vector<std::string> overrides(argv + 2, argv + argc);
    const prismsim::Scenario scenario = prismsim::load_scenario(argv[1], overrides);
    const auto start = std::chrono::steady_clock::now();
    prismsim::create_engine();
    const prismsim::Topology topology(scenario.platform);
    const auto hosts = prismsim::build_sim_platform(topology, 1e15);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    fmt::print("gpus {} links {} build_s {:.3f} peak_rss_MiB {:.0f}\n", hosts.size(),
               topology.links().size(), seconds, usage.ru_maxrss / 1024.0);
    return 0;
  } catch (const prismsim::InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
