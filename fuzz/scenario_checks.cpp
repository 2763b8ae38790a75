#include "scenario_checks.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <variant>

#include "fuzz_support.hpp"
#include "platform/topology.hpp"
#include "variability/distribution.hpp"
#include "workload/job_builder.hpp"
#include "workload/memory_estimate.hpp"
#include "workload/transformer_job.hpp"
#include "workload/transformer_model.hpp"

namespace prismsim::fuzz {
namespace {

void finite(double value, const std::string& what) {
  if (!std::isfinite(value)) fail(fmt::format("{} is {}", what, value));
}

/// The draws of the extreme words and of the middle one.
void check_sampler(const DistributionSpec& spec, const std::string& what) {
  const Sampler sampler(spec);
  for (const uint64_t word : {uint64_t{0}, uint64_t{1} << 63, ~uint64_t{0}, uint64_t{12345}}) {
    finite(sampler.draw(word), fmt::format("{}: the draw of word {}", what, word));
  }
}

void check_variability(const VariabilitySpec& v) {
  if (v.has_kernel_default) check_sampler(v.kernel_default, "kernels.default");
  for (const auto& [name, d] : v.kernel_classes) check_sampler(d, "kernels." + name);
  for (const auto& [name, d] : v.kernel_names) check_sampler(d, "kernels.names." + name);
  check_sampler(v.per_gpu, "gpus.per_gpu");
  check_sampler(v.per_node, "gpus.per_node");
  check_sampler(v.per_rack, "gpus.per_rack");
  for (const SlowNodeSpec& slow : v.slow_nodes) check_sampler(slow.slowdown, "slow_nodes");
  check_sampler(v.random_slow_node_slowdown, "random_slow_nodes.slowdown");
  check_sampler(v.thermal.ambient_c, "thermal.ambient_c");
  for (const auto& [scope, d] : v.jitter) check_sampler(d, "jitter");
  for (const auto& [scope, d] : v.transfer_jitter) check_sampler(d, "transfer_jitter");
  if (v.has_wan_rtt) check_sampler(v.wan_rtt_s, "wan_rtt");
}

void check_job(const Job& job) {
  for (const Segment& segment : job.segments) finite(segment.seconds, "segment " + segment.name);
  for (const auto& program : job.program_of_rank) {
    if (!program) continue;
    for (const auto& stream : program->streams) {
      for (const Op& op : stream) {
        std::visit(
            [](const auto& o) {
              using T = std::decay_t<decltype(o)>;
              if constexpr (std::is_same_v<T, ops::ComputeFor>) finite(o.seconds, "a compute time");
              if constexpr (std::is_same_v<T, ops::Collective> || std::is_same_v<T, ops::Send> ||
                            std::is_same_v<T, ops::Recv>) {
                finite(o.bytes, "an op's bytes");
              }
            },
            op);
      }
    }
  }
}

}  // namespace

void check_derived(const Scenario& s) {
  check_variability(s.variability);
  const auto& w = s.workload;
  const bool transformer = w.kind == WorkloadKind::transformer;
  if (transformer) {
    const LayerContext c = layer_context(s);
    finite(model_parameters(c), "the model's parameters");
    for (const MemoryEstimate& m : estimate_memory(s)) finite(m.total(), "a memory estimate");
    accepted([&] { check_memory(s); });
  }
  // Programs are built only for small jobs: a fuzzer's time goes to inputs, not to building
  // millions of kernels.
  const double passes = static_cast<double>(w.global_batch) / static_cast<double>(w.microbatch) *
                        (transformer ? w.model.layers : w.layers);
  if (s.parallelism.ranks() > 64 || s.platform.total_gpus() > 4096 || passes > 4096) return;
  const Topology topology(s.platform);
  check_job(build_job(s, topology));
}

}  // namespace prismsim::fuzz
