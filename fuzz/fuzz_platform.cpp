// A platform file on its own (as `prismsim collective --platform` reads it), then its topology
// when it is small.
#include "config/scenario_loader.hpp"
#include "fuzz_support.hpp"
#include "platform/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prismsim;
  const auto& dir = fuzz::fresh_scratch_dir();
  const std::string path =
      fuzz::write_input(dir, "platform.yaml", {reinterpret_cast<const char*>(data), size});
  PlatformSpec platform;
  if (fuzz::accepted([&] { platform = load_platform(path); }) && platform.total_gpus() <= 4096) {
    const Topology topology(platform);
    (void)topology;
  }
  return 0;
}
