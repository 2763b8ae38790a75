#include "workload/step_estimate.hpp"

#include <algorithm>
#include <limits>

#include "collectives/cost_model.hpp"
#include "workload/pipeline_schedule.hpp"
#include "workload/transformer_job.hpp"

namespace prismsim {
StepEstimate::StepEstimate(const Scenario& s, const Topology& topology)
    : schedule_(s.parallelism.schedule),
      pp_(s.parallelism.pp),
      virtual_stages_(s.parallelism.virtual_stages),
      microbatches_(microbatches_per_replica(s)),
      receives_ahead_(s.parallelism.pipeline_receives_ahead),
      autograd_accumulation_(s.parallelism.gradient_accumulation == GradientAccumulation::autograd),
      precision_(s.workload.precision) {
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
    return gpus.size() < 2 ? 0.0
                           : predicted_call_seconds(gpus, topology, s.platform, op, bytes,
                                                    s.engine.collective_algorithm);
  };
  const double element_bytes = bytes_per_element(s.workload.precision);
  const double gradient_bytes = bytes_per_element(p.gradient_reduce_precision);
  const int stages = static_cast<int>(layers.size());
  std::vector<double> stage_trained(static_cast<size_t>(p.pp), 0.0);
  for (int vs = 0; vs < stages; ++vs) {
    const int stage = vs % p.pp;
    const auto tp_group = group({ParallelDim::tp}, stage);
    const auto cp_group = group({ParallelDim::cp}, stage);
    for (bool forward : {true, false}) {
      PassCost cost;
      for (const PassUnit& unit : pass_units(context, layers, forward, vs)) {
        if (forward) stage_trained[static_cast<size_t>(stage)] += unit.trainable;
        for (const PassItem& item : unit.items) {
          PassItemCost c;
          if (item.kind == PassItem::Kind::kernel) {
            c.work = item.work;
            c.precision = kernel_precision(item.work, s.workload);
          } else if (item.kind == PassItem::Kind::host_sync) {
            c.host_sync = true;
          } else {
            c.communication_s = call_seconds(item.group == LayerGroup::tp ? tp_group : cp_group,
                                             item.op, item.bytes);
            c.hiding_gemm =
                hiding_gemm_offset(item.op, p.tp_comm_overlap, item.hidden_by_previous_gemm);
          }
          c.module_runs = item.module_runs;
          c.gradient_accumulation = item.gradient_accumulation;
          cost.items.push_back(std::move(c));
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
    for (int link : route)
      bandwidth = std::min(bandwidth, topology.links()[static_cast<size_t>(link)].bandwidth_Bps);
    transfer_s_ = topology.route_latency(from, to) + context.pipeline_transfer_bytes() / bandwidth;
    if (context.pipeline_gathers()) {
      transfer_s_ += call_seconds(group({ParallelDim::tp}, 1), CollectiveOp::all_gather,
                                  context.activation_bytes_per_microbatch());
    }
  }
  double optimizer_parameters = 0, rank_parameters = 0;  // the largest share any rank updates
  for (int stage = 0; stage < p.pp; ++stage) {
    const double parameters = stage_trained[static_cast<size_t>(stage)];
    double sharded = parameters;
    double seconds = 0;
    if (p.dp * p.cp > 1) {
      const auto dp_group = group({ParallelDim::cp, ParallelDim::dp}, stage);
      const double bytes = parameters * gradient_bytes;
      if (p.data_parallel == DataParallelKind::ddp) {
        seconds = call_seconds(dp_group, CollectiveOp::all_reduce, bytes);
      } else {
        seconds = call_seconds(dp_group, CollectiveOp::reduce_scatter, bytes) +
                  call_seconds(dp_group, CollectiveOp::all_gather, parameters * element_bytes);
        sharded /= static_cast<double>(p.dp) * p.cp;
      }
    }
    const double embedding_gradient = trained_embedding_parameters(context) * gradient_bytes;
    if (s.workload.model.tied_embeddings && embedding_gradient > 0 && p.pp > 1 &&
        (stage == 0 || stage == p.pp - 1)) {
      seconds += call_seconds({group({}, 0).front(), group({}, p.pp - 1).front()},
                              CollectiveOp::all_reduce, embedding_gradient);
    }
    if (p.pp * p.dp > 1) {
      seconds += call_seconds(group({ParallelDim::pp, ParallelDim::dp}, stage),
                              CollectiveOp::all_reduce, 8);
    }
    data_parallel_s_ = std::max(data_parallel_s_, seconds);
    optimizer_parameters = std::max(optimizer_parameters, sharded);
    rank_parameters = std::max(rank_parameters, parameters);
  }
  optimizer_ = optimizer_step(optimizer_parameters, gradient_bytes, element_bytes);
  if (!autograd_accumulation_) zero_gradients_ = zero_gradients(rank_parameters, gradient_bytes);
}

double StepEstimate::pass_seconds(const PassCost& pass, const GpuSpec& gpu, const HostSpec& host,
                                  bool first_gradients) const {
  // As issue_in_order in the job builder: the device waits for the host's launches.
  double host_s = 0, device_s = 0;
  const auto& items = pass.items;
  for (size_t i = 0; i < items.size(); ++i) {
    const PassItemCost& item = items[i];
    if (first_gradients && item.gradient_accumulation) continue;
    if (item.host_sync) {
      device_s = host_s = std::max(device_s, host_s + host.kernel_launch_s);
      continue;
    }
    double seconds = item.communication_s;
    if (seconds < 0) {
      seconds = kernel_seconds(item.work, gpu, item.precision);
    } else if (const auto gemm = static_cast<std::ptrdiff_t>(i) + item.hiding_gemm;
               item.hiding_gemm != 0 && gemm >= 0 && gemm < std::ssize(items)) {
      const PassItemCost& hider = items[static_cast<size_t>(gemm)];
      if (hider.communication_s < 0 && hider.work.kernel_class == KernelClass::gemm) {
        seconds = std::max(0.0, seconds - kernel_seconds(hider.work, gpu, hider.precision));
      }
    }
    host_s += item.module_runs * host.layer_launch_s +
              (item.communication_s < 0 ? host.kernel_launch_s : host.collective_launch_s);
    device_s = std::max(device_s, host_s) + seconds;
  }
  return device_s;
}

double StepEstimate::seconds(const GpuSpec& gpu, const HostSpec& host) const {
  std::vector<double> forward_s, backward_s, first_backward_s;
  for (const auto& pass : forward_) forward_s.push_back(pass_seconds(pass, gpu, host));
  for (const auto& pass : backward_) {
    backward_s.push_back(pass_seconds(pass, gpu, host));
    if (autograd_accumulation_) first_backward_s.push_back(pass_seconds(pass, gpu, host, true));
  }
  double optimizer_s = std::max(host.kernel_launch_s, kernel_seconds(optimizer_, gpu, precision_));
  if (zero_gradients_) {
    optimizer_s +=
        std::max(host.kernel_launch_s, kernel_seconds(*zero_gradients_, gpu, precision_));
  }
  return host.step_s +
         pipeline_makespan(schedule_, pp_, virtual_stages_, microbatches_, forward_s, backward_s,
                           transfer_s_, receives_ahead_, first_backward_s) +
         data_parallel_s_ + optimizer_s;
}

}  // namespace prismsim
