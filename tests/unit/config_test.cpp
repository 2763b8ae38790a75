#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/scenario_loader.hpp"
#include "core/diagnostics.hpp"
#include "near.hpp"

using prismsim::testing::Near;

using namespace prismsim;

namespace {

const std::string kSource = PRISMSIM_SOURCE_DIR;
const std::string kExample = kSource + "/workloads/scenarios/dp-h100.yaml";

/// A scratch directory with files written by the test.
struct Scratch {
  std::filesystem::path dir;
  Scratch() {
    dir = std::filesystem::temp_directory_path() /
          ("prismsim-config-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
  }
  ~Scratch() { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

/// The diagnostics of loading `path`, one per line ("" when it loads).
std::string errors_of(const std::string& path, const std::vector<std::string>& overrides = {}) {
  try {
    load_scenario(path, overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* const kInlineScenario = R"(name: inline
platform:
  name: tiny
  gpu: {model: X, peak_flops: {bf16: 100Tflops}, memory: 80GiB, memory_bandwidth: 2TBps}
  node:
    gpus: 4
    nvlink: {bandwidth: 100GBps, latency: 1us}
    nic: {bandwidth: 100Gbps, latency: 2us}
  fabric: {type: fat_tree, levels: 2, radix: 8, oversubscription: 1}
  datacenters: [{name: a, nodes: 4}]
workload:
  name: w
  kind: layer_stack
  layers: 2
  layer: {parameters: 1M, forward_flops_per_sample: 1Gflop}
  precision: bf16
  global_batch: 16
parallelism: {dp: 16}
)";

}  // namespace

TEST_CASE("the bundled example loads with its platform and workload files") {
  const Scenario s = load_scenario(kExample);
  CHECK(s.name == "dp-1024-h100");
  CHECK(s.platform.name == "h100-ndr");
  CHECK(s.platform.gpus_per_node == 8);
  CHECK(s.platform.nic.bandwidth_Bps == Near{50e9});
  CHECK(s.platform.nvlink.latency_s > 0);  // fitted (calibration/README.md)
  CHECK(s.platform.calibration.collectives_calibrated());
  CHECK(s.platform.calibration.compute_calibrated());  // H100 microbenchmarks
  CHECK(s.platform.gpu.peak_flops.at(Precision::bf16) == Near{989e12});
  CHECK(s.platform.total_gpus() == 2048);
  CHECK(s.workload.layers == 32);
  CHECK(s.parallelism.dp == 1024);
  CHECK(s.simulation.seed == 42);
}

TEST_CASE("attention efficiency: one fraction for every backend, or one per backend") {
  const ComputeModelSpec h100 = load_scenario(kExample).platform.gpu.compute;
  CHECK(h100.attention_efficiency_for(AttentionBackend::cudnn) == Near{0.6});
  CHECK(h100.attention_efficiency_for(AttentionBackend::flash2) == Near{0.202});
  // A fraction set on the command line (as validate-training.py --fit does) replaces the map.
  const ComputeModelSpec set =
      load_scenario(kExample, {"platform.gpu.compute.attention_efficiency=0.3"})
          .platform.gpu.compute;
  CHECK(set.attention_efficiency_for(AttentionBackend::cudnn) == Near{0.3});
  CHECK(set.attention_efficiency_for(AttentionBackend::flash2) == Near{0.3});
}

TEST_CASE("overrides change values after includes and are validated like the file") {
  const Scenario s = load_scenario(
      kExample, {"platform.node.nic.bandwidth=200Gbps", "parallelism.dp=512",
                 "parallelism.gpus=512", "platform.datacenters.0.nodes=64", "simulation.runs=7"});
  CHECK(s.platform.nic.bandwidth_Bps == Near{25e9});
  CHECK(s.parallelism.dp == 512);
  CHECK(s.platform.datacenters[0].nodes == 64);
  CHECK(s.simulation.runs == 7);

  CHECK(errors_of(kExample, {"platform.node.nic.bandwidth=fast"}) ==
        std::string{"--set:1:29: error: invalid value 'fast' for "
                    "'platform.node.nic.bandwidth': expected a bandwidth such as "
                    "'400Gbps'"});
  CHECK(errors_of(kExample, {"simulation.runs=2", "platform.node.nick.bandwidth=1Gbps"}) ==
        std::string{"--set:2:15: error: unknown key 'platform.node.nick' (did you "
                    "mean 'nic'?)"});
  CHECK(errors_of(kExample, {"platform.datacenters.3.nodes=1"}) ==
        std::string{"--set:1:22: error: unknown path 'platform.datacenters.3.nodes': "
                    "'platform.datacenters' is a list of 1 element(s)"});
  CHECK(errors_of(kExample, {"nonsense"}) ==
        std::string{"--set:1:1: error: expected PATH=VALUE, got 'nonsense'"});
}

TEST_CASE("every problem of a file is reported at once, each at its line and column") {
  Scratch scratch;
  const std::string path = scratch.write("s.yaml", R"(name: s
platform: ../nowhere.yaml
workload: {name: w, kind: layer_stack, layers: 0, layer: {parameters: 1M}, precision: bf17}
parallelism: {dp: 2, dp: 3}
simulaton: {runs: 2}
)");
  const auto errors = errors_of(path);
  // An unreadable include stops reading; what was found before it is reported too.
  CHECK(errors == path + ":2:11: error: cannot read '" + scratch.dir.parent_path().string() +
                      "/nowhere.yaml': No such file or directory\n" + path +
                      ":4:22: error: duplicate key 'dp' (first defined at line 4)");

  const std::string inline_path = scratch.write("i.yaml", R"(name: s
platform:
  name: p
  gpu: {model: X, peak_flops: {bf16: 1Tflops}, memory: 1GiB, memory_bandwidth: 1TBps}
  node: {gpus: 8, nvlink: {bandwidth: 1GBps, latency: 1us}, nic: {bandwidth: 1Gbps, latency: 1us}}
  fabric: {type: fat_tree, levels: 2, radix: 64}
  datacenters: [{name: a, nodes: 1}]
workload: {name: w, kind: layer_stack, layers: 0, layer: {parameters: 1M}, precision: bf17, global_batch: 2}
parallelism: {dp: 2, dp: 3}
simulaton: {runs: 2}
)");
  const auto path_text = scratch.dir.string() + "/i.yaml";
  CHECK(errors_of(inline_path) ==
        path_text + ":8:48: error: 'workload.layers' must be at least 1, got 0" + "\n" + path_text +
            ":8:58: error: missing required key 'workload.layer.forward_flops_per_sample'" + "\n" +
            path_text +
            ":8:87: error: invalid value 'bf17' for 'workload.precision': expected one of "
            "fp32, tf32, bf16, fp16, fp8 (did you mean 'bf16'?)" +
            "\n" + path_text + ":9:22: error: duplicate key 'dp' (first defined at line 9)" + "\n" +
            path_text + ":10:1: error: unknown key 'simulaton' (did you mean 'simulation'?)");
}

TEST_CASE("cross-section rules are checked") {
  Scratch scratch;
  const std::string path = scratch.write("s.yaml", kInlineScenario);
  const Scenario s = load_scenario(path);
  CHECK(s.platform.fabric.capacity(s.platform.gpus_per_node) == 32);
  CHECK(s.platform.gpu.efficiency == 1.0);

  const auto loc = scratch.dir.string() + "/s.yaml";
  // Rules spanning sections point at the value that broke them, even when it came from --set.
  CHECK(errors_of(path, {"parallelism.gpus=8"}) ==
        std::string{loc + ":18:14: error: parallel degrees dp 16 x tp 1 x pp 1 x cp 1 = 16 "
                          "do not match 'parallelism.gpus' 8"});
  CHECK(errors_of(path, {"parallelism.dp=32", "workload.global_batch=32"}) ==
        std::string{loc + ":18:14: error: the scenario needs 32 GPUs but platform "
                          "'tiny' holds 16"});
  CHECK(errors_of(path, {"platform.datacenters.0.nodes=9"}) ==
        std::string{"--set:1:30: error: datacenter 'a' has 36 NICs but a 2-level "
                    "fat-tree of radix 8 holds at most 32"});
  CHECK(errors_of(path, {"workload.global_batch=24"}) ==
        std::string{"--set:1:23: error: 'workload.global_batch' 24 is not a "
                    "multiple of dp 16 x microbatch 1"});
}
