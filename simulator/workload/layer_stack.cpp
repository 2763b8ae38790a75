#include "workload/layer_stack.hpp"

#include <numeric>

#include "workload/placement.hpp"

namespace prismsim {

double compute_seconds(double flops, const GpuSpec& gpu, Precision precision) {
  return flops / (gpu.peak_flops.at(precision) * gpu.efficiency);
}

Job build_layer_stack_job(const Scenario& scenario) {
  const WorkloadSpec& w = scenario.workload;
  const GpuSpec& gpu = scenario.platform.gpu;
  const int dp = scenario.parallelism.dp;
  const int64_t microbatches = w.global_batch / (static_cast<int64_t>(dp) * w.microbatch);
  const double samples = static_cast<double>(w.microbatch);
  const double forward =
      compute_seconds(samples * w.forward_flops_per_sample_per_layer, gpu, w.precision);
  const double backward =
      compute_seconds(2.0 * samples * w.forward_flops_per_sample_per_layer, gpu, w.precision);

  auto program = std::make_shared<Program>();
  for (int64_t mb = 0; mb < microbatches; ++mb) {
    for (int layer = 0; layer < w.layers; ++layer)
      program->streams[0].push_back(ops::ComputeFor{forward});
    for (int layer = 0; layer < w.layers; ++layer)
      program->streams[0].push_back(ops::ComputeFor{backward});
  }
  const double gradient_bytes = w.parameters_per_layer * w.layers * bytes_per_element(w.precision);
  program->streams[0].push_back(
      ops::Collective{CollectiveOp::all_reduce, gradient_bytes, GroupId(0), 0, std::nullopt});

  Job job;
  job.gpu_of_rank = place_ranks(scenario.parallelism, scenario.platform);
  job.program_of_rank.assign(job.gpu_of_rank.size(), program);
  CollectiveGroup everyone;
  everyone.ranks.resize(job.gpu_of_rank.size());
  std::iota(everyone.ranks.begin(), everyone.ranks.end(), 0);
  job.groups.push_back(std::move(everyone));
  return job;
}

}  // namespace prismsim
