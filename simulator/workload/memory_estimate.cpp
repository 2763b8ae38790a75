#include "workload/memory_estimate.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/diagnostics.hpp"
#include "workload/pipeline_schedule.hpp"
#include "workload/transformer_job.hpp"
#include "workload/transformer_model.hpp"

namespace prismsim {
namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}  // namespace

std::string MemoryEstimate::str() const {
  return fmt::format(
      "{:.1f} GiB (weights {:.1f}, gradients {:.1f}, optimizer {:.1f}, "
      "activations {:.1f}, transient {:.1f})",
      total() / kGiB, weights / kGiB, gradients / kGiB, optimizer / kGiB, activations / kGiB,
      transient / kGiB);
}

double layer_activation_bytes(const Scenario& scenario) {
  const LayerContext c = layer_context(scenario);
  const auto& m = c.model;
  const double t = c.tp;
  const double e = c.activation_bytes;
  const double sb = c.tokens();  // s x b on this rank
  const double h = static_cast<double>(m.hidden);
  const double kv = static_cast<double>(m.kv_heads * m.head_dim());
  const double ffn = static_cast<double>(m.ffn);
  const double mlp_in = m.mlp == MlpKind::swiglu ? 2 * ffn : ffn;
  if (c.recompute == Recompute::full) {
    return sb * h * e / (c.sequence_parallel ? t : 1.0);  // the layer's input only
  }
  const double heads = static_cast<double>(m.heads);
  const double q_len = static_cast<double>(m.sequence / c.cp);
  const double scores =
      static_cast<double>(c.microbatch) * heads * q_len * static_cast<double>(m.sequence);
  if (c.recompute == Recompute::per_op) {
    // The layer's input and what the policy saves (transformer_model.cpp, op_recompute): the
    // odd linears' outputs that the backward reads (queries, values, the MLP gate), the attention
    // output and its softmax statistics.
    const double input = sb * h * e / (c.sequence_parallel ? t : 1.0);
    const double saved =
        sb * (h + kv * c.cp + h + ffn) * e + scores / static_cast<double>(m.sequence) * 4;
    return input + saved / t;
  }
  // Replicated across TP ranks unless sequence parallel: the two norms' inputs, the inputs of
  // the QKV and MLP-up projections, the two dropout masks (1 byte).
  const double replicated = sb * h * (4 * e + 2);
  // Split across TP ranks: Q, K, V (all ranks' keys and values with context parallelism); the
  // output projection's input; the MLP activations.
  double split = sb * (h + 2 * kv * c.cp) * e + sb * h * e + sb * (mlp_in + ffn) * e;
  if (m.attention == AttentionKernel::flash) {
    split += scores / static_cast<double>(m.sequence) * 4;  // fp32 softmax statistics per query
  } else if (c.recompute == Recompute::none) {
    split += scores * (2 * e + 1);  // softmax output, dropout mask, dropout output
  }
  return (c.sequence_parallel ? replicated / t : replicated) + split / t;
}

std::vector<MemoryEstimate> estimate_memory(const Scenario& scenario) {
  const auto& p = scenario.parallelism;
  const LayerContext c = layer_context(scenario);
  const double e = c.activation_bytes;
  const auto layers = split_layers(p, c.model.layers);
  const int v = p.virtual_stages;
  const int chunks = p.pp * v;
  const bool fsdp = p.data_parallel == DataParallelKind::fsdp;
  // Ranks one copy of the sharded state is spread over (HSDP: within one replica).
  const double shards = static_cast<double>(fsdp ? p.dp / p.fsdp_replicas : p.dp) * p.cp;
  // Gradients are kept (accumulated) in the precision they are reduced in: Megatron's fp32
  // main_grad buffers, torchtitan's reduce_dtype.
  const double g = bytes_per_element(p.gradient_reduce_precision);
  const double per_layer = layer_activation_bytes(scenario);
  Scenario no_recompute = scenario;
  no_recompute.parallelism.recompute = Recompute::none;
  const double full_layer = layer_activation_bytes(no_recompute);
  const double vocab = c.padded_vocab() / p.tp;
  std::vector<MemoryEstimate> out;
  for (int stage = 0; stage < p.pp; ++stage) {
    MemoryEstimate m;
    m.stage = stage;
    double params = 0, trained = 0;
    double gathered_bytes = 0, largest_gathered = 0, largest_trained = 0;
    std::vector<double> chunk_bytes;  // activations a forward of each chunk holds
    for (int chunk = 0; chunk < v; ++chunk) {
      const int vs = virtual_stage(chunk, stage, p.pp);
      // The chunk's layers, with the embedding on the first virtual stage and the output head
      // on the last (no weight of its own when tied to the embedding on the same stage).
      for (const PassUnit& unit : pass_units(c, layers, true, vs)) {
        params += unit.parameters;
        trained += unit.trainable;
        const double unit_bytes = fsdp_gathered_bytes(unit, e, fsdp && p.fsdp_float8_all_gather);
        gathered_bytes += unit_bytes;
        largest_gathered = std::max(largest_gathered, unit_bytes);
        largest_trained = std::max(largest_trained, unit.trainable);
      }
      const int count = layers[static_cast<size_t>(vs)].count;
      const int recomputed = recomputed_layers(c, count);
      chunk_bytes.push_back(recomputed * per_layer + (count - recomputed) * full_layer);
    }
    // FSDP holds its shard plus the gathered units in use (two: one computing, one prefetched);
    // without resharding after the forward pass, every unit's gathered weights until backward.
    const double gathered = p.reshard_after_forward ? 2 * largest_gathered : gathered_bytes;
    m.weights = fsdp ? params / shards * e + gathered : params * e;
    // ZeRO-2 and FSDP keep the gradient shard plus the unit being reduced.
    const bool sharded_gradients = fsdp || p.data_parallel == DataParallelKind::zero2;
    // Gradients and optimizer state for the trained weights alone (under LoRA, the adapters').
    m.gradients = sharded_gradients ? trained / shards * g + largest_trained * g : trained * g;
    m.optimizer = 12 * trained / (p.data_parallel == DataParallelKind::ddp ? 1.0 : shards);
    // Walk the schedule: a forward saves its chunk's activations until its backward.
    m.activations =
        peak_held(pipeline_passes(p.schedule, p.pp, v, microbatches_per_replica(scenario), stage),
                  chunk_bytes);
    if (p.recompute == Recompute::full) m.transient = full_layer;
    const bool last = (chunks - 1) % p.pp == stage;
    if (last) m.transient = std::max(m.transient, c.tokens() * vocab * (e + 4));
    if (last) {
      // Until the flush: each deferred microbatch's output gradient (tokens x vocabulary / tp)
      // and the output layer's input (its sequence-parallel shard).
      const double input = c.tokens() * c.model.hidden * e / (c.sequence_parallel ? p.tp : 1);
      m.activations += deferred_embedding_wgrads(scenario) * (c.tokens() * vocab * e + input);
    }
    out.push_back(m);
  }
  return out;
}

void check_memory(const Scenario& scenario) {
  if (scenario.workload.kind != WorkloadKind::transformer || !scenario.engine.check_memory) return;
  const auto estimates = estimate_memory(scenario);
  const auto worst =
      std::max_element(estimates.begin(), estimates.end(),
                       [](const auto& a, const auto& b) { return a.total() < b.total(); });
  const double capacity = scenario.platform.gpu.memory_bytes;
  if (worst->total() <= capacity) return;
  throw InputError({Diagnostic{
      scenario.parallelism_loc,
      fmt::format("estimated memory per GPU on pipeline stage {} is {}, more than the {:.1f} GiB "
                  "of {}; use more tensor or pipeline parallelism, a smaller microbatch, "
                  "recompute, or a sharded optimizer (or set engine.check_memory: false)",
                  worst->stage, worst->str(), capacity / kGiB, scenario.platform.gpu.model)}});
}

}  // namespace prismsim
