#include "workload/transformer_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>

#include "collectives/cost_model.hpp"
#include "config/framework.hpp"
#include "workload/compute_model.hpp"
#include "workload/pipeline_schedule.hpp"

namespace prismsim {

RankGrid::RankGrid(const ParallelismSpec& p) {
  degree_ = {p.tp, p.cp, p.pp, p.dp};
  int stride = 1;
  for (ParallelDim dim : p.order) {
    stride_[static_cast<size_t>(dim)] = stride;
    stride *= degree_[static_cast<size_t>(dim)];
  }
  ranks_ = stride;
}

std::array<int, 4> RankGrid::coords(int rank) const {
  std::array<int, 4> c{};
  for (size_t d = 0; d < 4; ++d) c[d] = (rank / stride_[d]) % degree_[d];
  return c;
}

int RankGrid::rank(const std::array<int, 4>& c) const {
  int r = 0;
  for (size_t d = 0; d < 4; ++d) r += c[d] * stride_[d];
  return r;
}

std::vector<int> RankGrid::group(int rank, std::initializer_list<ParallelDim> dims) const {
  std::vector<int> out = {rank};
  for (ParallelDim dim : dims) {
    std::vector<int> grown;
    for (int member : out) {
      auto c = coords(member);
      for (int i = 0; i < degree(dim); ++i) {
        c[static_cast<size_t>(dim)] = i;
        grown.push_back(this->rank(c));
      }
    }
    out = std::move(grown);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<StageLayers> split_layers(const ParallelismSpec& p, int layers) {
  const int stages = p.pp * p.virtual_stages;
  std::vector<int> counts = p.stage_layers;
  if (counts.empty()) counts.assign(static_cast<size_t>(stages), layers / stages);
  std::vector<StageLayers> split;
  int first = 0;
  for (int count : counts) {
    split.push_back({first, count});
    first += count;
  }
  return split;
}

LayerContext layer_context(const Scenario& s) {
  LayerContext c;
  c.model = s.workload.model;
  c.tp = s.parallelism.tp;
  c.cp = s.parallelism.cp;
  c.sequence_parallel = s.parallelism.sequence_parallel && s.parallelism.tp > 1;
  c.microbatch = s.workload.microbatch;
  c.recompute = s.parallelism.recompute;
  c.recompute_layers = s.parallelism.recompute_layers;
  c.activation_bytes = static_cast<int>(bytes_per_element(s.workload.precision));
  c.fp8 = s.workload.fp8_gemms || s.workload.fp4_gemms;
  const FrameworkPreset& framework = framework_preset(s.parallelism.framework);
  c.fp8_scaling = s.workload.fp8_scaling.value_or(framework.fp8_scaling);
  if (s.workload.fp4_gemms) {
    c.fp8_scaling = Fp8Scaling::tensorwise;  // an amax pass before each cast, as current scaling
    c.quantized_bytes = bytes_per_element(Precision::fp4);
  }
  c.pipeline_transfer = s.parallelism.pipeline_transfer;
  c.eager_head = framework.eager_elementwise;
  c.eager_layers = c.eager_head && !s.parallelism.torch_compile;
  c.cross_entropy_fusion = s.parallelism.cross_entropy_fusion;
  c.fused_projections = s.parallelism.fused_projections;
  c.overlap_dgrad_reduce = s.parallelism.overlap_dgrad_reduce;
  c.query_key_layer_scaling = framework.query_key_layer_scaling;
  c.attention_backend = s.workload.attention_backend.value_or(framework.attention_backend);
  c.syncs_before_mlp = s.host.layer_syncs;
  // A weight gradient kept over the step's microbatches: autograd reads and writes `.grad` and
  // reads the new one; Megatron's hook adds the new `.grad` into the main gradient.
  if (!s.parallelism.reduce_every_microbatch) {
    const double e = c.activation_bytes;
    const double main_grad = bytes_per_element(s.parallelism.gradient_reduce_precision);
    switch (s.parallelism.gradient_accumulation) {
      case GradientAccumulation::fused:
        break;
      case GradientAccumulation::main_grad:
        c.gradient_accumulation_bytes = e + 2 * main_grad;
        break;
      case GradientAccumulation::autograd:
        c.gradient_accumulation_bytes = 3 * e;
        break;
    }
  }
  c.lora = s.workload.lora;
  c.lora_gathers_input = c.lora && c.sequence_parallel && s.parallelism.tp_comm_overlap;
  return c;
}

int recomputed_layers(const LayerContext& c, int count) {
  if (c.recompute != Recompute::full || c.recompute_layers == 0) return count;
  return std::min(count, c.recompute_layers);
}

int microbatches_per_replica(const Scenario& s) {
  return static_cast<int>(s.workload.global_batch / (s.parallelism.dp * s.workload.microbatch));
}

int deferred_embedding_wgrads(const Scenario& s) {
  const ParallelismSpec& p = s.parallelism;
  // Under LoRA the output layer is frozen: it has no weight gradient to defer.
  if (!p.defer_embedding_wgrad || s.workload.lora) return 0;
  const int microbatches = microbatches_per_replica(s);
  return p.wgrad_deferral_limit == 0 ? microbatches
                                     : std::min(microbatches, p.wgrad_deferral_limit);
}

double trained_embedding_parameters(const LayerContext& c) {
  return c.lora ? 0.0 : embedding_parameters(c) / c.tp;
}

double fsdp_gathered_bytes(const PassUnit& unit, double element_bytes, bool fp8_all_gather) {
  const double fp8 = fp8_all_gather ? unit.linear_weights : 0;
  return (unit.parameters - fp8) * element_bytes + fp8;
}

std::vector<PassUnit> pass_units(const LayerContext& c, const std::vector<StageLayers>& layers,
                                 bool forward, int vs) {
  std::vector<PassUnit> out;
  const bool first = vs == 0;
  const bool last = vs == static_cast<int>(layers.size()) - 1;
  const double adapter_params = adapter_parameters(c);
  const double layer_params = layer_parameters(c.model) / c.tp + adapter_params;
  const double embedding_params = embedding_parameters(c) / c.tp;
  // A tied head on the embedding's own stage multiplies by the embedding's weight: one tensor,
  // whose gradient, optimizer state and gathers the embedding's unit carries.
  const double head_params = c.model.tied_embeddings && first ? 0.0 : embedding_params;
  const int count = layers[static_cast<size_t>(vs)].count;
  // The unit's module code runs before its first item (`host.layer_launch`).
  // Trained: every weight, or under LoRA the layers' adapters alone.
  const double layer_trained = c.lora ? adapter_params : layer_params;
  const double embedding_trained = trained_embedding_parameters(c);
  const double head_trained = c.model.tied_embeddings && first ? 0.0 : embedding_trained;
  const double layer_linears = layer_linear_parameters(c.model) / c.tp;
  auto add = [&](std::vector<PassItem> items, double parameters, double trained,
                 int module_runs = 1, double linears = 0) {
    if (!items.empty()) items.front().module_runs = module_runs;
    out.push_back({std::move(items), parameters, trained, linears});
  };
  if (forward) {
    if (first) add(embedding_forward(c), embedding_params, embedding_trained);
    for (int l = 0; l < count; ++l) {
      add(layer_forward(c), layer_params, layer_trained, 1, layer_linears);
    }
    if (last) add(head_forward(c), head_params, head_trained);
  } else {
    if (last) add(head_backward(c), head_params, head_trained);
    // The forward's module code again, then the backward's: a full recompute, and torchtitan's
    // per-op one when eager (compiled, the recompute is in the backward graph).
    const bool reruns =
        c.recompute == Recompute::full || (c.recompute == Recompute::per_op && c.eager_layers);
    const int layer_runs = reruns ? 2 : 1;
    // Megatron's block method: the chunk's first layers recompute, the others keep their
    // activations.
    LayerContext kept = c;
    kept.recompute = Recompute::none;
    const int recomputed = recomputed_layers(c, count);
    for (int l = 0; l < count; ++l) {
      const bool recomputes = l < recomputed;
      add(layer_backward(recomputes ? c : kept), layer_params, layer_trained,
          recomputes ? layer_runs : 1, layer_linears);
    }
    // A frozen embedding has no backward: nothing before it needs a gradient.
    if (first && !c.lora) add(embedding_backward(c), embedding_params, embedding_trained);
  }
  return out;
}

namespace {

/// An op of a pass before it is given a rank's groups.
struct CollectiveTemplate {
  CollectiveOp op = CollectiveOp::all_reduce;
  double bytes = 0;
  LayerGroup group = LayerGroup::tp;
};
using OpTemplate = std::variant<SegmentId, CollectiveTemplate>;

/// A rank's tensor- and context-parallel groups. Analytic collectives are charged by group shape:
/// groups with equal keys cost the same.
struct LayerGroups {
  std::optional<GroupId> tp, cp;
  std::string tp_key, cp_key;
  std::string key() const { return tp_key + "|" + cp_key; }
};

/// A rank's data-parallel communicators. A communicator carries one call at a time, so
/// collectives that run concurrently on different streams use different groups of the same ranks.
struct DataParallelGroups {
  GroupId reduce;  ///< gradient all-reduce or reduce-scatter (over the FSDP shard group)
  GroupId gather;  ///< parameter all-gather: FSDP's own communicator, else `reduce`
  std::optional<GroupId> replicate;  ///< HSDP: gradient all-reduce across the model's replicas
  double shard_ranks = 1;            ///< ranks that share the sharded state
};

/// Kernels of one segment as the host issues them: a kernel starts when the host has launched it
/// (kernel_launch_s each, collective_launch_s a collective, after the Python of the layer it
/// opens, one after the other, from `host_lead_s` before the segment's start) and the previous
/// kernel has finished. Where the device would wait for the host, an idle entry of that length
/// goes before the kernel. Returns how far the device is behind the host at the segment's end.
double issue_in_order(Segment& segment, const HostSpec& host, double host_lead_s = 0) {
  double host_s = -host_lead_s, device_s = 0;
  std::vector<Kernel> issued;
  issued.reserve(segment.kernels.size());
  segment.seconds = 0;
  segment.host_wait_s = 0;
  segment.host_waits = false;
  for (Kernel& kernel : segment.kernels) {
    if (kernel.kernel_class == KernelClass::idle) {
      // The host's own work, after which it waits for the device: its Python before a collective
      // it then launches (the segment ends with it), or a blocking copy (`host.layer_syncs`).
      const double end_s = std::max(device_s, host_s + kernel.seconds);
      kernel.seconds = end_s - device_s;
      host_s = device_s = end_s;
      segment.host_waits = true;
      if (kernel.seconds > 0) issued.push_back(std::move(kernel));
      continue;
    }
    host_s += kernel.host_before_s + (kernel.kernel_class == KernelClass::communication
                                          ? host.collective_launch_s
                                          : host.kernel_launch_s);
    if (host_s > device_s) {
      issued.push_back({"host_launch", KernelClass::idle, host_s - device_s});
      if (!segment.host_waits) segment.host_wait_s += host_s - device_s;
      device_s = host_s;
    }
    device_s += kernel.seconds;
    issued.push_back(std::move(kernel));
  }
  segment.kernels.clear();
  for (Kernel& kernel : issued) segment.add(std::move(kernel));
  return device_s - host_s;
}

/// Layer collectives hidden by a GEMM next to them (`hiding_gemm[i]`, as hiding_gemm_offset, for
/// kernel i): each costs only what its GEMM does not hide.
void hide_layer_collectives(Segment& segment, const std::vector<int>& hiding_gemm) {
  auto& k = segment.kernels;
  assert(hiding_gemm.size() == k.size());
  for (size_t i = 0; i < k.size(); ++i) {
    const auto gemm = static_cast<std::ptrdiff_t>(i) + hiding_gemm[i];
    if (hiding_gemm[i] == 0 || gemm < 0 || gemm >= std::ssize(k)) continue;
    const Kernel& hider = k[static_cast<size_t>(gemm)];
    if (hider.kernel_class == KernelClass::gemm) {
      k[i].seconds = std::max(0.0, k[i].seconds - hider.seconds);
    }
  }
}

class TransformerJobBuilder {
 public:
  TransformerJobBuilder(const Scenario& s, const Topology& topology)
      : s_(s),
        p_(s.parallelism),
        topology_(topology),
        grid_(s.parallelism),
        context_(layer_context(s)),
        layers_(split_layers(s.parallelism, s.workload.model.layers)),
        microbatches_(microbatches_per_replica(s)),
        element_bytes_(static_cast<int>(bytes_per_element(s.workload.precision))),
        gradient_bytes_(
            static_cast<int>(bytes_per_element(s.parallelism.gradient_reduce_precision))) {}

  Job build();
  RunShape shape();

 private:
  /// Whether only tensor-parallel position 0 is simulated (see build()), on the network of
  /// quotient_ when shared links can saturate.
  bool symmetric() const { return symmetric_; }
  bool find_symmetry();
  bool layer_collectives_in_network();
  GroupId add_group(std::vector<int> ranks, const char* name);
  std::string group_key(std::optional<GroupId> group) const;
  /// The GPUs of `group`'s members, in group order.
  std::vector<int> gpus_of(GroupId group) const;
  /// What build() and shape() both start from: the collectives' placement, one GPU per rank, the
  /// groups.
  void prepare();
  void build_groups();
  void build_data_parallel_groups();
  const std::vector<PassUnit>& units(bool forward, int vs);
  /// The ops of `items` (kernels fused into segments named `name`), cached under `key`.
  const std::vector<OpTemplate>& templates_of(const std::string& key, const std::string& name,
                                              const std::vector<const PassItem*>& items,
                                              const LayerGroups& groups, double scale = 1);
  /// The factor on compute kernel times that makes a pass of virtual stage `vs` take its
  /// parallelism.stage_times entry (1 without one).
  double stage_time_scale(bool forward, int vs);
  /// The ops of units [begin, end) of a forward or backward pass of virtual stage `vs`; with
  /// `defer_wgrad`, without the output layer's weight gradient; with `first_gradients`, without
  /// the adds into gradients kept from earlier microbatches (autograd's first backward).
  const std::vector<OpTemplate>& templates(bool forward, int vs, size_t begin, size_t end,
                                           const LayerGroups& groups, bool defer_wgrad = false,
                                           bool first_gradients = false);
  /// Whether a backward pass makes the step's first weight gradients, which autograd assigns
  /// to `.grad` rather than adds (the first backward of each chunk is of microbatch 0).
  bool makes_first_gradients(const PipelinePass& pass) const {
    return !pass.forward && pass.microbatch == 0 &&
           p_.gradient_accumulation == GradientAccumulation::autograd;
  }
  /// The output layer's weight gradients of `count` microbatches, one after the other: the
  /// pipeline flush's drain of deferred ones (Megatron-Core's finish_embedding_wgrad_compute).
  const std::vector<OpTemplate>& deferred_wgrads(int count, const LayerGroups& groups);
  /// A segment of its own for one memory-bound kernel (the optimizer's).
  SegmentId single_kernel_segment(const std::string& name, const KernelWork& work);
  double kernel_time(const KernelWork& work) const;
  double analytic_seconds(const PassItem& item, const LayerGroups& groups);
  void emit(std::vector<Op>& stream, const std::vector<OpTemplate>& ops, const LayerGroups& groups,
            int microbatch, PassRef* pass = nullptr) const;
  std::shared_ptr<Program> rank_program(int rank);
  /// Elements of gradients per bucket for this rank's stage and model chunk.
  double bucket_elements(int stage, int chunk) const;

  const Scenario& s_;
  const ParallelismSpec& p_;
  const Topology& topology_;
  RankGrid grid_;
  LayerContext context_;
  std::vector<StageLayers> layers_;
  int microbatches_;
  bool network_ = false;
  bool symmetric_ = false;
  LinkQuotient quotient_;
  int element_bytes_;
  int gradient_bytes_;  ///< per gradient element, as reduced and accumulated
  Job job_;
  std::vector<LayerGroups> layer_groups_;                     ///< per rank
  std::vector<std::optional<DataParallelGroups>> dp_groups_;  ///< per rank
  std::vector<std::optional<GroupId>> norm_group_;            ///< per rank: the gradient-norm group
  std::vector<std::optional<GroupId>> embedding_group_;  ///< per rank: tied embedding gradients
  std::map<std::pair<bool, int>, std::vector<PassUnit>> units_;
  std::map<std::string, std::vector<OpTemplate>> templates_;
  std::map<std::string, SegmentId> single_segments_;
  std::map<std::tuple<int, double, std::string>, double> analytic_;
};

GroupId TransformerJobBuilder::add_group(std::vector<int> ranks, const char* name) {
  job_.groups.push_back({std::move(ranks), name});
  return GroupId(job_.groups.size() - 1);
}

std::vector<int> TransformerJobBuilder::gpus_of(GroupId group) const {
  std::vector<int> gpus;
  for (int rank : job_.groups[group].ranks) {
    gpus.push_back(job_.gpu_of_rank[static_cast<size_t>(rank)]);
  }
  return gpus;
}

/// Groups inside one node with the same slots cost the same; others are keyed by their index.
std::string TransformerJobBuilder::group_key(std::optional<GroupId> group) const {
  if (!group) return "-";
  const GroupLayout layout = layout_of(gpus_of(*group), topology_);
  if (!layout.single_node()) return "g" + std::to_string(group->value());
  std::string key = "n";
  for (int local : layout.local) key += "." + std::to_string(local);
  return key;
}

void TransformerJobBuilder::build_groups() {
  const int ranks = grid_.ranks();
  layer_groups_.assign(static_cast<size_t>(ranks), {});
  norm_group_.assign(static_cast<size_t>(ranks), std::nullopt);
  embedding_group_.assign(static_cast<size_t>(ranks), std::nullopt);
  // Each group is built once, from its leader: its lowest rank, the one whose coordinates along
  // the group's dimensions are 0. O(ranks) in all.
  auto leads = [](const std::array<int, 4>& c, std::initializer_list<ParallelDim> dims) {
    return std::all_of(dims.begin(), dims.end(),
                       [&](ParallelDim dim) { return c[static_cast<size_t>(dim)] == 0; });
  };
  const bool tied = s_.workload.model.tied_embeddings && p_.pp > 1;
  for (int rank = 0; rank < ranks; ++rank) {
    auto c = grid_.coords(rank);
    if (p_.tp > 1 && leads(c, {ParallelDim::tp})) {
      const GroupId g = add_group(grid_.group(rank, {ParallelDim::tp}), "tp");
      for (int r : job_.groups[g].ranks) layer_groups_[static_cast<size_t>(r)].tp = g;
    }
    if (p_.cp > 1 && leads(c, {ParallelDim::cp})) {
      const GroupId g = add_group(grid_.group(rank, {ParallelDim::cp}), "cp");
      for (int r : job_.groups[g].ranks) layer_groups_[static_cast<size_t>(r)].cp = g;
    }
    // The gradient norm for clipping: one number reduced over every stage and replica (the
    // ranks of one tensor/context position; its other positions reduce the same in lockstep).
    if (p_.pp * p_.dp > 1 && leads(c, {ParallelDim::pp, ParallelDim::dp})) {
      const GroupId g = add_group(grid_.group(rank, {ParallelDim::pp, ParallelDim::dp}), "norm");
      for (int r : job_.groups[g].ranks) norm_group_[static_cast<size_t>(r)] = g;
    }
    // Tied embeddings: the first and the last stage hold the same weight.
    if (tied && c[static_cast<size_t>(ParallelDim::pp)] == 0) {
      c[static_cast<size_t>(ParallelDim::pp)] = p_.pp - 1;
      const int last = grid_.rank(c);
      const GroupId g = add_group({rank, last}, "embedding");
      embedding_group_[static_cast<size_t>(rank)] = g;
      embedding_group_[static_cast<size_t>(last)] = g;
    }
  }
  build_data_parallel_groups();
  if (network_) return;
  std::map<std::optional<GroupId>, std::string> keys;
  auto key_of = [&](std::optional<GroupId> group) -> const std::string& {
    auto [it, added] = keys.try_emplace(group);
    if (added) it->second = group_key(group);
    return it->second;
  };
  for (auto& groups : layer_groups_) {
    groups.tp_key = key_of(groups.tp);
    groups.cp_key = key_of(groups.cp);
  }
}

void TransformerJobBuilder::build_data_parallel_groups() {
  const int ranks = grid_.ranks();
  dp_groups_.assign(static_cast<size_t>(ranks), std::nullopt);
  if (p_.dp * p_.cp == 1) return;
  const bool fsdp = p_.data_parallel == DataParallelKind::fsdp;
  // HSDP: data-parallel coordinate d is shard d % shard of replica d / shard.
  const int replicas = fsdp ? p_.fsdp_replicas : 1;
  const int shard = p_.dp / replicas;
  auto dp_of = [&](int rank) { return grid_.coords(rank)[static_cast<size_t>(ParallelDim::dp)]; };
  for (int rank = 0; rank < ranks; ++rank) {
    // Built once, from the group's lowest rank (context and data-parallel coordinates 0).
    const auto c = grid_.coords(rank);
    if (c[static_cast<size_t>(ParallelDim::cp)] + c[static_cast<size_t>(ParallelDim::dp)] > 0) {
      continue;
    }
    const auto all = grid_.group(rank, {ParallelDim::cp, ParallelDim::dp});
    // Every shard group of this tensor/pipeline position, then every replicate group.
    std::vector<std::vector<int>> shards(static_cast<size_t>(replicas));
    std::vector<std::vector<int>> copies(static_cast<size_t>(replicas > 1 ? shard * p_.cp : 0));
    for (int r : all) {
      const int d = dp_of(r);
      shards[static_cast<size_t>(d / shard)].push_back(r);
      if (replicas > 1) {
        const int position =
            grid_.coords(r)[static_cast<size_t>(ParallelDim::cp)] * shard + d % shard;
        copies[static_cast<size_t>(position)].push_back(r);
      }
    }
    for (const auto& members : shards) {
      DataParallelGroups g;
      g.reduce = add_group(members, fsdp ? "dp_reduce" : "dp");
      g.gather = fsdp ? add_group(members, "dp_gather") : g.reduce;
      g.shard_ranks = static_cast<double>(members.size());
      for (int r : members) dp_groups_[static_cast<size_t>(r)] = g;
    }
    for (const auto& members : copies) {
      const GroupId replicate = add_group(members, "dp_replicate");
      for (int r : members) dp_groups_[static_cast<size_t>(r)]->replicate = replicate;
    }
  }
}

const std::vector<PassUnit>& TransformerJobBuilder::units(bool forward, int vs) {
  auto [it, added] = units_.try_emplace({forward, vs});
  if (added) it->second = pass_units(context_, layers_, forward, vs);
  return it->second;
}

double TransformerJobBuilder::kernel_time(const KernelWork& work) const {
  return kernel_seconds(work, s_.platform.gpu, kernel_precision(work, s_.workload));
}

double TransformerJobBuilder::analytic_seconds(const PassItem& item, const LayerGroups& groups) {
  const bool tp = item.group == LayerGroup::tp;
  const auto key =
      std::make_tuple(static_cast<int>(item.op), item.bytes, tp ? groups.tp_key : groups.cp_key);
  auto it = analytic_.find(key);
  if (it != analytic_.end()) return it->second;
  const double seconds =
      predicted_call_seconds(gpus_of(*(tp ? groups.tp : groups.cp)), topology_, s_.platform,
                             item.op, item.bytes, s_.engine.collective_algorithm);
  return analytic_.emplace(key, seconds).first->second;
}

const std::vector<OpTemplate>& TransformerJobBuilder::templates_of(
    const std::string& key, const std::string& name, const std::vector<const PassItem*>& items,
    const LayerGroups& groups, double scale) {
  auto [it, added] = templates_.try_emplace(key);
  if (!added) return it->second;
  std::vector<OpTemplate>& ops = it->second;
  Segment segment;
  // How far the host is ahead of the device when a segment starts. NCCL calls do not block the
  // host: while a collective in the network runs, the host goes on issuing the next segment's
  // kernels, from where it was (the device's backlog) for the collective's predicted time.
  double host_lead_s = 0;
  std::vector<int> hiding_gemm;  // per kernel of the segment, as hiding_gemm_offset
  auto flush = [&] {
    if (segment.kernels.empty()) return;
    segment.name = name;
    hide_layer_collectives(segment, hiding_gemm);
    hiding_gemm.clear();
    host_lead_s = issue_in_order(segment, s_.host, host_lead_s);
    job_.segments.push_back(std::move(segment));
    segment = Segment{};
    ops.push_back(SegmentId(job_.segments.size() - 1));
  };
  const PassItem* previous = nullptr;
  for (const PassItem* item : items) {
    const double host_s = item->module_runs * s_.host.layer_launch_s;
    // A collective hidden by the GEMM before it in its unit (not when that GEMM was left out: a
    // deferred output-layer wgrad) stays in the segment in either engine, charged at flush.
    const bool hidden = item->hidden_by_previous_gemm && previous + 1 == item;
    previous = item;
    if (item->kind == PassItem::Kind::kernel) {
      segment.add({item->work.name, item->work.kernel_class, scale * kernel_time(item->work),
                   CommScope::intra_node, 0, CollectiveOp::all_reduce, host_s});
      hiding_gemm.push_back(0);
    } else if (item->kind == PassItem::Kind::host_sync) {
      // The copy's call, then the host waits for the device (issue_in_order).
      segment.add({item->work.name, KernelClass::idle, s_.host.kernel_launch_s});
      hiding_gemm.push_back(0);
    } else if (!network_ || hidden) {
      const GroupId group = *(item->group == LayerGroup::tp ? groups.tp : groups.cp);
      segment.add({item->name, KernelClass::communication, analytic_seconds(*item, groups),
                   topology_.scope_of(gpus_of(group)), item->bytes, item->op, host_s});
      hiding_gemm.push_back(hiding_gemm_offset(item->op, p_.tp_comm_overlap, hidden));
    } else {
      // A collective in the network cannot wait for the host: its unit's Python goes before it
      // as host time of its own.
      if (host_s > 0) {
        segment.add({"host_python", KernelClass::idle, host_s});
        hiding_gemm.push_back(0);
      }
      flush();
      ops.push_back(CollectiveTemplate{item->op, item->bytes, item->group});
      host_lead_s = std::max(
          0.0, host_lead_s + analytic_seconds(*item, groups) - s_.host.collective_launch_s);
    }
  }
  flush();
  return ops;
}

const std::vector<OpTemplate>& TransformerJobBuilder::templates(bool forward, int vs, size_t begin,
                                                                size_t end,
                                                                const LayerGroups& groups,
                                                                bool defer_wgrad,
                                                                bool first_gradients) {
  const char kind = forward ? 'f' : defer_wgrad ? 'd' : 'b';
  const std::string key = fmt::format("{}{}{}:{}-{}:{}", kind, first_gradients ? "1" : "", vs,
                                      begin, end, groups.key());
  if (auto it = templates_.find(key); it != templates_.end()) return it->second;
  const StageLayers& layers = layers_[static_cast<size_t>(vs)];
  const std::string name = fmt::format("{} layers {}-{}", forward ? "forward" : "backward",
                                       layers.first, layers.first + layers.count - 1);
  std::vector<const PassItem*> items;
  const auto& all = units(forward, vs);
  for (size_t u = begin; u < end; ++u) {
    for (const PassItem& item : all[u].items) {
      if (defer_wgrad && item.embedding_wgrad) continue;
      if (first_gradients && item.gradient_accumulation) continue;
      items.push_back(&item);
    }
  }
  return templates_of(key, name, items, groups, stage_time_scale(forward, vs));
}

const std::vector<OpTemplate>& TransformerJobBuilder::deferred_wgrads(int count,
                                                                      const LayerGroups& groups) {
  const int last_vs = p_.pp * p_.virtual_stages - 1;
  const auto& head = units(false, last_vs).front().items;
  const auto wgrad = std::find_if(head.begin(), head.end(),
                                  [](const PassItem& item) { return item.embedding_wgrad; });
  const std::vector<const PassItem*> items(static_cast<size_t>(count), &*wgrad);
  return templates_of(fmt::format("deferred_wgrad:{}:{}", count, groups.key()),
                      "deferred output-layer wgrad", items, groups,
                      stage_time_scale(false, last_vs));
}

double TransformerJobBuilder::stage_time_scale(bool forward, int vs) {
  if (p_.stage_times.empty()) return 1;
  const auto& target = p_.stage_times[static_cast<size_t>(vs)];
  double model_s = 0;
  for (const PassUnit& unit : units(forward, vs)) {
    for (const PassItem& item : unit.items) {
      if (item.kind == PassItem::Kind::kernel) model_s += kernel_time(item.work);
    }
  }
  return model_s > 0 ? (forward ? target.forward_s : target.backward_s) / model_s : 1;
}

SegmentId TransformerJobBuilder::single_kernel_segment(const std::string& name,
                                                       const KernelWork& work) {
  const std::string key = fmt::format("{}:{}:{}", name, work.name, work.bytes);
  auto [it, added] = single_segments_.try_emplace(key);
  if (added) {
    Segment segment;
    segment.name = name;
    segment.add({work.name, work.kernel_class, kernel_time(work)});
    issue_in_order(segment, s_.host);
    job_.segments.push_back(std::move(segment));
    it->second = SegmentId(job_.segments.size() - 1);
  }
  return it->second;
}

void TransformerJobBuilder::emit(std::vector<Op>& stream, const std::vector<OpTemplate>& ops,
                                 const LayerGroups& groups, int microbatch, PassRef* pass) const {
  const auto mb = microbatch >= 0 ? std::optional<int>(microbatch) : std::nullopt;
  for (const OpTemplate& t : ops) {
    if (const auto* segment = std::get_if<SegmentId>(&t)) {
      // The pass's first segment carries `first`, the others not.
      stream.push_back(ops::RunSegment{
          *segment, mb, pass != nullptr ? std::optional<PassRef>(*pass) : std::nullopt});
      if (pass != nullptr) pass->first = false;
      continue;
    }
    const auto& c = std::get<CollectiveTemplate>(t);
    const GroupId group = *(c.group == LayerGroup::tp ? groups.tp : groups.cp);
    stream.push_back(ops::Collective{c.op, c.bytes, group, 0, mb});
  }
}

double TransformerJobBuilder::bucket_elements(int stage, int chunk) const {
  const FrameworkPreset& f = framework_preset(p_.framework);
  // Megatron buckets only while it overlaps the reduction, and only on the first stage's first
  // chunk ("data-parallel communication on these stages is not on the critical path").
  const bool megatron = p_.framework == Framework::megatron_lm;
  const bool bucketed = !megatron || (p_.overlap_gradient_reduce &&
                                      (p_.buckets_on_every_stage || (stage == 0 && chunk == 0)));
  if (!bucketed) return std::numeric_limits<double>::infinity();
  if (p_.gradient_bucket_bytes > 0) return p_.gradient_bucket_bytes / element_bytes_;
  return std::max(f.bucket_elements,
                  f.bucket_elements_per_rank * static_cast<double>(p_.dp) * p_.cp);
}

std::shared_ptr<Program> TransformerJobBuilder::rank_program(int rank) {
  auto program = std::make_shared<Program>();
  const auto coords = grid_.coords(rank);
  const int stage = coords[static_cast<size_t>(ParallelDim::pp)];
  const int pp = p_.pp;
  const int v = p_.virtual_stages;
  const int last_vs = pp * v - 1;
  const LayerGroups& groups = layer_groups_[static_cast<size_t>(rank)];
  const std::optional<DataParallelGroups>& dp = dp_groups_[static_cast<size_t>(rank)];
  auto collective = [](CollectiveOp op, double bytes, GroupId group) {
    return ops::Collective{op, bytes, group, 0, std::nullopt};
  };
  const auto passes = pipeline_passes(p_.schedule, pp, v, microbatches_, stage);
  const DataParallelKind kind = p_.data_parallel;
  const bool fsdp = dp && kind == DataParallelKind::fsdp;
  const bool zero2 = dp && kind == DataParallelKind::zero2;
  const bool overlap = dp && !fsdp && p_.overlap_gradient_reduce;
  const bool gather_ahead = dp && kind == DataParallelKind::zero1 && p_.overlap_param_gather;
  // Stream 0 computes, with the tensor/context-parallel and pipeline communication (Megatron's
  // default stream); DDP and ZeRO reduce (and gather ahead) on stream 1 while it does; FSDP
  // gathers on stream 1 and reduces on stream 2.
  program->streams.resize(fsdp ? 3 : overlap || gather_ahead ? 2 : 1);
  std::vector<Op>& compute = program->streams[0];
  if (s_.host.step_s > 0) compute.push_back(ops::ComputeFor{s_.host.step_s});

  // The rank that runs virtual stage vs for the same slice of the model and data.
  auto stage_rank = [&](int vs) {
    auto c = coords;
    c[static_cast<size_t>(ParallelDim::pp)] = vs % pp;
    return grid_.rank(c);
  };
  const double transfer_bytes = context_.pipeline_transfer_bytes();
  // A scatter-gather transfer: the receiver all-gathers the activation over its TP group.
  PassItem pipeline_gather;
  pipeline_gather.kind = PassItem::Kind::collective;
  pipeline_gather.op = CollectiveOp::all_gather;
  pipeline_gather.bytes = context_.activation_bytes_per_microbatch();
  pipeline_gather.name = "tp_all_gather_pipeline";
  // The first forward and the last backward pass of each chunk.
  std::vector<size_t> first_forward(static_cast<size_t>(v), passes.size());
  std::vector<size_t> last_backward(static_cast<size_t>(v), 0);
  for (size_t i = passes.size(); i-- > 0;) {
    if (passes[i].forward) first_forward[static_cast<size_t>(passes[i].chunk)] = i;
  }
  for (size_t i = 0; i < passes.size(); ++i) {
    if (!passes[i].forward) last_backward[static_cast<size_t>(passes[i].chunk)] = i;
  }

  const CollectiveOp gradient_op =
      kind == DataParallelKind::ddp ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter;
  // Gradient buckets, in the order they become ready; reduced on stream 1 as they close when
  // overlapped, else after the last backward pass.
  std::vector<double> buckets;
  double pending_elements = 0;
  auto close_bucket = [&](bool inline_reduce) {
    if (pending_elements <= 0) return;
    const double bytes = pending_elements * gradient_bytes_;
    pending_elements = 0;
    if (overlap) {
      const EventId event = program->add_event();
      compute.push_back(ops::Record{event});
      auto& comm = program->streams[1];
      comm.push_back(ops::Wait{event});
      comm.push_back(collective(gradient_op, bytes, dp->reduce));
    } else if (inline_reduce) {
      compute.push_back(collective(gradient_op, bytes, dp->reduce));
    } else {
      buckets.push_back(bytes);
    }
  };
  double rank_trained = 0;  // this rank's trained parameters: gradients, optimizer, gathers
  double rank_linear_weights = 0;
  int rank_layers = 0;
  for (int c = 0; c < v; ++c) {
    for (const PassUnit& unit : units(true, virtual_stage(c, stage, pp))) {
      rank_trained += unit.trainable;
      rank_linear_weights += unit.linear_weights;
      rank_layers += unit.linear_weights > 0;
    }
  }

  // ZeRO-1 with the parameter gather overlapped: at the step's start stream 1 all-gathers each
  // chunk's parameters bucket by bucket in forward order, and the first forward pass of the chunk
  // waits for a bucket before its first layer.
  std::map<std::pair<int, size_t>, EventId> bucket_gathered;  // (chunk, first unit) -> event
  if (gather_ahead) {
    // The gathers of a step wait for the previous step's optimizer (compute starts the step).
    const EventId step_started = program->add_event();
    compute.push_back(ops::Record{step_started});
    program->streams[1].push_back(ops::Wait{step_started});
    for (int c = 0; c < v; ++c) {
      const auto& forward_units = units(true, virtual_stage(c, stage, pp));
      const double per_bucket = bucket_elements(stage, c);
      double elements = 0;
      size_t first = 0;
      for (size_t u = 0; u < forward_units.size(); ++u) {
        elements += forward_units[u].trainable;
        if (elements < per_bucket && u + 1 < forward_units.size()) continue;
        const EventId gathered = program->add_event();
        program->streams[1].push_back(
            collective(CollectiveOp::all_gather, elements * element_bytes_, dp->reduce));
        program->streams[1].push_back(ops::Record{gathered});
        bucket_gathered[{c, first}] = gathered;
        elements = 0;
        first = u + 1;
      }
    }
  }

  // FSDP: parameters gathered from the first forward to the last backward when neither the
  // forward frees them nor a gradient reduction per microbatch does.
  const bool keep_gathered = !p_.reshard_after_forward && !p_.reduce_every_microbatch;
  std::optional<EventId> previous_started;  // FSDP: a unit's gather waits for the previous unit
  const int deferrals = deferred_embedding_wgrads(s_);
  int deferred = 0;  // output-layer weight gradients left for the pipeline flush so far
  // The peer pass `i` receives from, if any.
  auto source_of = [&](size_t i) -> std::optional<int> {
    const PipelinePass& pass = passes[i];
    const int vs = virtual_stage(pass.chunk, stage, pp);
    if (pass.forward ? vs == 0 : vs == last_vs) return std::nullopt;
    return stage_rank(pass.forward ? vs - 1 : vs + 1);
  };
  // Receives posted ahead (Megatron's overlap_p2p_comm): each pass's receive right after this
  // rank's previous pass of the same direction, the first of each direction's at the step start.
  auto post_receive_of = [&](size_t i) {
    if (const auto peer = source_of(i)) compute.push_back(ops::PostRecv{*peer, !passes[i].forward});
  };
  auto next_of_direction = [&](size_t after, bool forward) {
    size_t j = after;
    while (j < passes.size() && passes[j].forward != forward) ++j;
    return j;
  };
  if (p_.pipeline_receives_ahead) {
    for (bool forward : {true, false}) {
      if (const size_t j = next_of_direction(0, forward); j < passes.size()) post_receive_of(j);
    }
  }
  for (size_t i = 0; i < passes.size(); ++i) {
    const PipelinePass& pass = passes[i];
    const int vs = virtual_stage(pass.chunk, stage, pp);
    // Megatron-Core buffers the output gradients of the first wgrad_deferral_limit backward
    // passes (0: all) and computes their weight gradients in the flush.
    const bool defer_wgrad = !pass.forward && vs == last_vs && deferred < deferrals;
    deferred += defer_wgrad;
    const size_t chunk = static_cast<size_t>(pass.chunk);
    const bool sends = pass.forward ? vs < last_vs : vs > 0;
    PassRef ref{static_cast<int>(i), pass.forward, true};
    if (const auto peer = source_of(i)) {
      compute.push_back(ops::Recv{*peer, transfer_bytes, pass.microbatch, !pass.forward,
                                  p_.pipeline_receives_ahead});
      if (context_.pipeline_gathers()) {
        emit(compute,
             templates_of(fmt::format("gather:{}", groups.key()), "pipeline all-gather",
                          {&pipeline_gather}, groups),
             groups, pass.microbatch);
      }
    }
    const auto& pass_units = units(pass.forward, vs);
    if (fsdp) {
      // Each unit's weights are gathered just before use (the next gather overlaps this unit),
      // and its gradients reduce-scattered after its backward, on two more streams. FSDP2
      // copies them out of and into its communication buffers on the compute stream.
      const bool copies = framework_preset(p_.framework).fsdp_buffer_copies;
      const bool gathers =
          pass.forward ? !keep_gathered || i == first_forward[chunk] : p_.reshard_after_forward;
      const bool reduces =
          !pass.forward && (p_.reduce_every_microbatch || i == last_backward[chunk]);
      for (size_t u = 0; u < pass_units.size(); ++u) {
        const double unit_gradients = pass_units[u].trainable;
        const double unit_bytes =
            fsdp_gathered_bytes(pass_units[u], element_bytes_, p_.fsdp_float8_all_gather);
        if (gathers) {
          const EventId gathered = program->add_event();
          const EventId started = program->add_event();
          auto& gather = program->streams[1];
          if (previous_started) gather.push_back(ops::Wait{*previous_started});
          previous_started = started;
          gather.push_back(collective(CollectiveOp::all_gather, unit_bytes, dp->gather));
          gather.push_back(ops::Record{gathered});
          compute.push_back(ops::Wait{gathered});
          compute.push_back(ops::Record{started});
          if (copies && unit_bytes > 0) {
            emit(compute, {single_kernel_segment("fsdp copy", fsdp_gather_copy_out(unit_bytes))},
                 groups, pass.microbatch);
          }
        }
        emit(
            compute,
            templates(pass.forward, vs, u, u + 1, groups, defer_wgrad, makes_first_gradients(pass)),
            groups, pass.microbatch, &ref);
        if (reduces) {
          if (copies && unit_gradients > 0) {
            emit(compute,
                 {single_kernel_segment(
                     "fsdp copy",
                     fsdp_reduce_copy_in(unit_gradients, element_bytes_, gradient_bytes_))},
                 groups, pass.microbatch);
          }
          const EventId ready = program->add_event();
          compute.push_back(ops::Record{ready});
          auto& reduce = program->streams[2];
          reduce.push_back(ops::Wait{ready});
          reduce.push_back(collective(CollectiveOp::reduce_scatter,
                                      unit_gradients * gradient_bytes_, dp->reduce));
          if (dp->replicate) {
            reduce.push_back(collective(CollectiveOp::all_reduce,
                                        unit_gradients * gradient_bytes_ / dp->shard_ranks,
                                        *dp->replicate));
          }
        }
      }
    } else if (dp && !pass.forward && (zero2 || i == last_backward[chunk])) {
      // Gradients become final unit by unit: fill buckets as they become ready (ZeRO-2 reduces
      // every microbatch's, at once when not overlapped).
      const double per_bucket = bucket_elements(stage, pass.chunk);
      size_t begin = 0;
      for (size_t u = 0; u < pass_units.size(); ++u) {
        pending_elements += pass_units[u].trainable;
        if (pending_elements >= per_bucket || u + 1 == pass_units.size()) {
          emit(compute,
               templates(false, vs, begin, u + 1, groups, defer_wgrad, makes_first_gradients(pass)),
               groups, pass.microbatch, &ref);
          begin = u + 1;
          close_bucket(zero2);
        }
      }
    } else if (gather_ahead && i == first_forward[chunk]) {
      size_t begin = 0;
      for (size_t u = 0; u <= pass_units.size(); ++u) {
        const auto it = bucket_gathered.find({pass.chunk, u});
        if (it == bucket_gathered.end() && u < pass_units.size()) continue;
        if (u > begin) {
          emit(compute, templates(true, vs, begin, u, groups), groups, pass.microbatch, &ref);
        }
        if (it != bucket_gathered.end()) compute.push_back(ops::Wait{it->second});
        begin = u;
      }
    } else {
      emit(compute,
           templates(pass.forward, vs, 0, pass_units.size(), groups, defer_wgrad,
                     makes_first_gradients(pass)),
           groups, pass.microbatch, &ref);
    }
    if (sends) {
      compute.push_back(ops::Send{stage_rank(pass.forward ? vs + 1 : vs - 1), transfer_bytes,
                                  pass.microbatch, p_.blocking_pipeline_sends, !pass.forward});
    }
    if (p_.pipeline_receives_ahead) {
      if (const size_t j = next_of_direction(i + 1, pass.forward); j < passes.size()) {
        post_receive_of(j);
      }
    }
  }

  // The deferred weight gradients, after the stage's last backward pass (Megatron-Core's
  // finish_embedding_wgrad_compute runs before finalize_model_grads_func).
  if (deferred > 0) emit(compute, deferred_wgrads(deferred, groups), groups, -1);
  // Gradients reduced; the tied embedding's gradient summed over the first and last stages; the
  // gradient norm; then the optimizer on this rank's share of the parameters.
  double optimizer_parameters = rank_trained;
  if (fsdp) {
    const EventId reduced = program->add_event();
    program->streams[2].push_back(ops::Record{reduced});
    compute.push_back(ops::Wait{reduced});
    optimizer_parameters /= dp->shard_ranks;
  } else if (dp) {
    if (overlap) {
      const EventId reduced = program->add_event();
      program->streams[1].push_back(ops::Record{reduced});
      compute.push_back(ops::Wait{reduced});
    }
    for (double bytes : buckets) compute.push_back(collective(gradient_op, bytes, dp->reduce));
    if (kind != DataParallelKind::ddp) optimizer_parameters /= dp->shard_ranks;
  }
  const auto& embedding = embedding_group_[static_cast<size_t>(rank)];
  const double embedding_gradient = trained_embedding_parameters(context_) * gradient_bytes_;
  if (embedding && embedding_gradient > 0) {
    compute.push_back(collective(CollectiveOp::all_reduce, embedding_gradient, *embedding));
  }
  if (const auto& norm = norm_group_[static_cast<size_t>(rank)]) {
    compute.push_back(collective(CollectiveOp::all_reduce, 8, *norm));
  }
  std::vector<OpTemplate> step_end = {single_kernel_segment(
      "optimizer", optimizer_step(optimizer_parameters, gradient_bytes_, element_bytes_))};
  // Megatron zeroes its gradient buffer for the next step; autograd's frameworks set `.grad`
  // to None instead (zero_grad(set_to_none=True)).
  if (p_.gradient_accumulation != GradientAccumulation::autograd) {
    step_end.push_back(
        single_kernel_segment("optimizer", zero_gradients(rank_trained, gradient_bytes_)));
  }
  emit(compute, step_end, groups, -1);
  if (fsdp && p_.fsdp_float8_all_gather) {
    // torchtitan's precompute_float8_dynamic_scale_for_fsdp: the amax of every FP8 linear's
    // shard, then one all-reduce (max) of them over the shard group, for the next step's gathers.
    emit(compute,
         {single_kernel_segment("optimizer",
                                float8_weight_amax(rank_linear_weights / dp->shard_ranks))},
         groups, -1);
    compute.push_back(collective(CollectiveOp::all_reduce,
                                 4.0 * rank_layers * linear_layers_per_layer(context_),
                                 dp->gather));
  }
  if (dp && (kind == DataParallelKind::zero1 || zero2) && !gather_ahead) {
    // Every replica needs the updated parameters of every shard.
    compute.push_back(
        collective(CollectiveOp::all_gather, rank_trained * element_bytes_, dp->reduce));
  }
  return program;
}

/// Network or analytic, as the engine says; automatic counts the calls of a step first.
bool TransformerJobBuilder::layer_collectives_in_network() {
  switch (s_.engine.layer_collectives) {
    case EngineSpec::LayerComm::network:
      return true;
    case EngineSpec::LayerComm::analytic:
      return false;
    case EngineSpec::LayerComm::automatic:
      break;
  }
  int64_t calls = 0;
  const int ranks_per_stage = grid_.ranks() / p_.pp;
  for (int stage = 0; stage < p_.pp; ++stage) {
    for (const PipelinePass& pass :
         pipeline_passes(p_.schedule, p_.pp, p_.virtual_stages, microbatches_, stage)) {
      for (const PassUnit& unit : units(pass.forward, virtual_stage(pass.chunk, stage, p_.pp))) {
        for (const PassItem& item : unit.items) {
          const bool in_network =
              item.kind == PassItem::Kind::collective && !item.hidden_by_previous_gemm;
          calls += in_network * ranks_per_stage;
        }
      }
    }
    if (calls > s_.engine.network_layer_collectives_max_calls) return false;
  }
  return true;
}

bool TransformerJobBuilder::find_symmetry() {
  if (!s_.engine.tensor_parallel_symmetry || network_ || p_.tp == 1) return false;
  // Positions run alike when moving every TP group's ranks one position on is a symmetry of the
  // network (same links and latencies along the moved routes). Where links above the GPUs' own
  // can saturate, positions also share them, and stay exact only if their flows start together:
  // collective jitter draws per group copy, so positions would drift apart.
  const bool shared = !topology_.only_gpu_links_saturate();
  if (shared && (!s_.variability.jitter.empty() || !s_.variability.jitter_by_op.empty())) {
    return false;
  }
  std::vector<int> image(static_cast<size_t>(topology_.gpu_count()));
  std::iota(image.begin(), image.end(), 0);
  for (int rank = 0; rank < grid_.ranks(); ++rank) {
    auto c = grid_.coords(rank);
    auto& position = c[static_cast<size_t>(ParallelDim::tp)];
    position = (position + 1) % p_.tp;
    image[static_cast<size_t>(job_.gpu_of_rank[static_cast<size_t>(rank)])] =
        job_.gpu_of_rank[static_cast<size_t>(grid_.rank(c))];
  }
  auto quotient = topology_.quotient(image);
  if (!quotient) return false;
  // Without shared links each position's flows cross only its own links: nothing to divide.
  if (shared) quotient_ = std::move(*quotient);
  return true;
}

void TransformerJobBuilder::prepare() {
  network_ = layer_collectives_in_network();
  job_.gpu_of_rank.resize(static_cast<size_t>(grid_.ranks()));
  std::iota(job_.gpu_of_rank.begin(), job_.gpu_of_rank.end(), 0);
  build_groups();
  symmetric_ = find_symmetry();
}

RunShape TransformerJobBuilder::shape() {
  const int ranks = grid_.ranks();
  prepare();
  RunShape shape;
  shape.ranks = ranks;
  const int64_t per_stage = ranks / p_.pp / (symmetric() ? p_.tp : 1);
  for (int stage = 0; stage < p_.pp; ++stage) {
    std::array<int, 4> c{};
    c[static_cast<size_t>(ParallelDim::pp)] = stage;
    add_program(shape, *rank_program(grid_.rank(c)), per_stage, false);
  }
  return shape;
}

Job TransformerJobBuilder::build() {
  const int ranks = grid_.ranks();
  prepare();
  // With analytic TP collectives, the ranks of a TP group run the same program in lockstep, and
  // their transfers and data-parallel calls go to the same-position ranks of other groups. When
  // no link outside the GPUs' own can limit a flow, different positions never share a
  // constraint: every position runs exactly like position 0, so only position 0 is simulated.
  // On shared links the same holds on the network's quotient by the positions' symmetry.
  if (symmetric()) {
    job_.link_quotient = std::move(quotient_);
    job_.representative.resize(static_cast<size_t>(ranks));
    for (int rank = 0; rank < ranks; ++rank) {
      auto c = grid_.coords(rank);
      c[static_cast<size_t>(ParallelDim::tp)] = 0;
      job_.representative[static_cast<size_t>(rank)] = grid_.rank(c);
    }
  }
  if (!network_ && p_.tp * p_.cp > 1) {
    job_.lockstep_of_rank.assign(static_cast<size_t>(ranks), -1);
    for (int rank = 0; rank < ranks; ++rank) {
      if (job_.lockstep_of_rank[static_cast<size_t>(rank)] >= 0) continue;
      job_.lockstep.push_back(grid_.group(rank, {ParallelDim::tp, ParallelDim::cp}));
      for (int member : job_.lockstep.back()) {
        job_.lockstep_of_rank[static_cast<size_t>(member)] =
            static_cast<int>(job_.lockstep.size()) - 1;
      }
    }
  }
  job_.program_of_rank.reserve(static_cast<size_t>(ranks));
  for (int rank = 0; rank < ranks; ++rank) {
    job_.program_of_rank.push_back(job_.simulated(rank) ? rank_program(rank) : nullptr);
  }
  return std::move(job_);
}

}  // namespace

Job build_transformer_job(const Scenario& scenario, const Topology& topology) {
  return TransformerJobBuilder(scenario, topology).build();
}

RunShape transformer_job_shape(const Scenario& scenario, const Topology& topology) {
  return TransformerJobBuilder(scenario, topology).shape();
}

}  // namespace prismsim
