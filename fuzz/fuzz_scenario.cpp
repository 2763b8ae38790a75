// A scenario with the files it includes: the input is a bundle (fuzz_support.hpp) whose first
// file is the scenario; seeds bundle the repository's scenarios with their platform, workload
// and variability files.
#include "config/scenario_loader.hpp"
#include "fuzz_support.hpp"
#include "scenario_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prismsim;
  const auto& dir = fuzz::fresh_scratch_dir();
  const std::string path =
      fuzz::write_bundle(dir, "scenario.yaml", {reinterpret_cast<const char*>(data), size});
  Scenario scenario;
  if (fuzz::accepted([&] { scenario = load_scenario(path); })) fuzz::check_derived(scenario);
  return 0;
}
