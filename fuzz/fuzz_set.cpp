// `--set PATH=VALUE` overrides: each line of the input is one override, applied to the
// repository's tiny-gpt scenario (the same file in every run).
#include <string>
#include <vector>

#include "config/scenario_loader.hpp"
#include "fuzz_support.hpp"
#include "scenario_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prismsim;
  std::vector<std::string> overrides;
  std::string line;
  for (size_t i = 0; i <= size && overrides.size() < 16; ++i) {
    if (i == size || data[i] == '\n') {
      overrides.push_back(line);
      line.clear();
    } else {
      line += static_cast<char>(data[i]);
    }
  }
  // (A --set may name a variability file, relative to the working directory: only reads.)
  const std::string base = PRISMSIM_SOURCE_DIR "/workloads/scenarios/tiny-gpt-h100.yaml";
  Scenario scenario;
  if (fuzz::accepted([&] { scenario = load_scenario(base, overrides); })) {
    fuzz::check_derived(scenario);
  }
  return 0;
}
