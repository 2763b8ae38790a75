#include "workload/step_estimate.hpp"

#include <algorithm>
#include <limits>

#include "collectives/cost_model.hpp"
#include "workload/pipeline_schedule.hpp"
#include "workload/transformer_job.hpp"

namespace prismsim {
StepEstimate::StepEstimate(const Scenario& s, const Topology& topology)
    : schedule_(s.parallelism.schedule), pp_(s.parallelism.pp),
      virtual_stages_(s.parallelism.virtual_stages),
      microbatches_(microbatches_per_replica(s)) {
  const auto& p = s.parallelism;
  const LayerContext context = layer_context(s);
  const auto layers = split_layers(p, context.model.layers);
  const RankGrid grid(p);
  // The groups through the rank of `stage` whose other coordinates are 0 (all groups of a stage
  // have this shape on a regular placement); rank r runs on GPU r.
  auto group = [&](std::initializer_list<ParallelDim> dims, int stage) {
    std::array<int, 4> c{};
    c[static_cast<size_t>(ParallelDim::pp)] = stage;
    return grid.group(grid.rank(c), dims);
  };
  auto call_seconds = [&](const std::vector<int>& gpus, CollectiveOp op, double bytes) {
    return predicted_call_seconds(gpus, topology, s.platform, op, bytes,
                                  s.engine.collective_algorithm);
  };
  const Precision gemm_precision = s.workload.fp8_gemms ? Precision::fp8 : s.workload.precision;
  const double element_bytes = bytes_per_element(s.workload.precision);
  const int stages = static_cast<int>(layers.size());
  double optimizer_parameters = 0;  // the largest share any rank updates
  std::vector<double> stage_parameters(static_cast<size_t>(p.pp), 0.0);
  for (int vs = 0; vs < stages; ++vs) {
    const int stage = vs % p.pp;
    const auto tp_group = group({ParallelDim::tp}, stage);
    const auto cp_group = group({ParallelDim::cp}, stage);
    for (bool forward : {true, false}) {
      PassCost cost;
      for (const PassUnit& unit : pass_units(context, layers, forward, vs)) {
        if (forward) stage_parameters[static_cast<size_t>(stage)] += unit.parameters;
        for (const PassItem& item : unit.items) {
          if (item.kind == PassItem::Kind::kernel) {
            const Precision precision = item.work.kernel_class == KernelClass::gemm
                                            ? gemm_precision
                                            : s.workload.precision;
            auto same = std::find_if(cost.kernels.begin(), cost.kernels.end(), [&](const auto& k) {
              return k.work.name == item.work.name && k.work.flops == item.work.flops &&
                     k.work.bytes == item.work.bytes;
            });
            if (same != cost.kernels.end()) {
              same->count += 1;
            } else {
              cost.kernels.push_back({item.work, precision, 1});
            }
          } else {
            cost.communication_s += call_seconds(
                item.group == LayerGroup::tp ? tp_group : cp_group, item.op, item.bytes);
          }
        }
      }
      (forward ? forward_ : backward_).push_back(std::move(cost));
    }
  }
  // Point-to-point: from stage 0 to stage 1 (every pair is alike on a regular placement).
  if (p.pp > 1) {
    const int from = group({}, 0).front();
    const int to = group({}, 1).front();
    std::vector<int> route;
    topology.route(from, to, route);
    double bandwidth = std::numeric_limits<double>::infinity();
    for (int link : route) bandwidth = std::min(bandwidth, topology.links()[static_cast<size_t>(link)].bandwidth_Bps);
    transfer_s_ = topology.route_latency(from, to) + context.pipeline_transfer_bytes() / bandwidth;
  }
  for (int stage = 0; stage < p.pp; ++stage) {
    const double parameters = stage_parameters[static_cast<size_t>(stage)];
    double sharded = parameters;
    if (p.dp * p.cp > 1) {
      const auto dp_group = group({ParallelDim::cp, ParallelDim::dp}, stage);
      const double bytes = parameters * element_bytes;
      double seconds = 0;
      switch (p.data_parallel) {
        case DataParallelKind::ddp:
          seconds = call_seconds(dp_group, CollectiveOp::all_reduce, bytes);
          break;
        case DataParallelKind::zero1:
        case DataParallelKind::fsdp:
          seconds = call_seconds(dp_group, CollectiveOp::reduce_scatter, bytes) +
                    call_seconds(dp_group, CollectiveOp::all_gather, bytes);
          sharded /= static_cast<double>(p.dp) * p.cp;
          break;
      }
      data_parallel_s_ = std::max(data_parallel_s_, seconds);
    }
    optimizer_parameters = std::max(optimizer_parameters, sharded);
  }
  optimizer_ = {optimizer_step(optimizer_parameters), s.workload.precision, 1};
}

double StepEstimate::pass_seconds(const PassCost& pass, const GpuSpec& gpu) const {
  double seconds = pass.communication_s;
  for (const TimedKernel& k : pass.kernels) seconds += k.count * kernel_seconds(k.work, gpu, k.precision);
  return seconds;
}

double StepEstimate::seconds(const GpuSpec& gpu) const {
  std::vector<double> forward_s, backward_s;
  for (const auto& pass : forward_) forward_s.push_back(pass_seconds(pass, gpu));
  for (const auto& pass : backward_) backward_s.push_back(pass_seconds(pass, gpu));
  const double optimizer_s = kernel_seconds(optimizer_.work, gpu, optimizer_.precision);
  return pipeline_makespan(schedule_, pp_, virtual_stages_, microbatches_, forward_s, backward_s,
                           transfer_s_) +
         data_parallel_s_ + optimizer_s;
}

}  // namespace prismsim
