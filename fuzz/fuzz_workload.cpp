// A workload file, included by a fixed scenario: 16 GPUs of the repository's h100-ndr platform
// as TP 2 x PP 2 x DP 4 (which a layer stack refuses, with a message).
#include "config/scenario_loader.hpp"
#include "fuzz_support.hpp"
#include "scenario_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prismsim;
  const auto& dir = fuzz::fresh_scratch_dir();
  fuzz::write_input(dir, "workload.yaml", {reinterpret_cast<const char*>(data), size});
  const std::string path = fuzz::write_input(dir, "scenario.yaml",
                                             "name: fuzz-workload\n"
                                             "platform: " PRISMSIM_SOURCE_DIR
                                             "/platforms/h100-ndr.yaml\n"
                                             "workload: workload.yaml\n"
                                             "parallelism: {gpus: 16, tp: 2, pp: 2, dp: 4}\n");
  Scenario scenario;
  if (fuzz::accepted([&] { scenario = load_scenario(path); })) fuzz::check_derived(scenario);
  return 0;
}
