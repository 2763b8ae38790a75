#include "workload/transformer_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>

namespace prismsim {
namespace {

PassItem kernel(KernelWork work) {
  PassItem item;
  item.work = std::move(work);
  return item;
}

PassItem collective(CollectiveOp op, double bytes, LayerGroup group, const char* name) {
  PassItem item;
  item.kind = PassItem::Kind::collective;
  item.op = op;
  item.bytes = bytes;
  item.group = group;
  item.name = name;
  return item;
}

/// The blocking copies before a layer's MLP (`host.layer_syncs`).
void host_syncs(std::vector<PassItem>& items, const LayerContext& c) {
  for (int i = 0; i < c.syncs_before_mlp; ++i) {
    PassItem item;
    item.kind = PassItem::Kind::host_sync;
    item.work.name = "host_sync";
    items.push_back(std::move(item));
  }
}

/// The add of a weight gradient of `elements` into the one kept from the step's earlier
/// microbatches, after the kernels that computed it (none when the wgrad GEMM accumulates).
void accumulate_gradient(std::vector<PassItem>& items, const LayerContext& c,
                         const std::string& weight, double elements) {
  if (c.gradient_accumulation_bytes <= 0) return;
  PassItem item =
      kernel(memory_bound(weight + "_grad_accumulate", elements * c.gradient_accumulation_bytes));
  item.gradient_accumulation = true;
  items.push_back(std::move(item));
}

/// Sizes of one rank's slice of a layer.
struct Shape {
  double tokens, elementwise_tokens, hidden, qkv_out, q_out, kv_out, mlp_in_out, ffn, heads,
      kv_heads, head_dim, e;

  explicit Shape(const LayerContext& c) {
    const auto& m = c.model;
    tokens = c.tokens();
    elementwise_tokens = c.elementwise_tokens();
    hidden = static_cast<double>(m.hidden);
    head_dim = static_cast<double>(m.head_dim());
    heads = static_cast<double>(m.heads / c.tp);
    kv_heads = static_cast<double>(m.kv_heads / c.tp);
    q_out = static_cast<double>(m.heads) * head_dim / c.tp;
    kv_out = static_cast<double>(m.kv_heads) * head_dim / c.tp;
    qkv_out = q_out + 2 * kv_out;
    ffn = static_cast<double>(m.ffn) / c.tp;
    mlp_in_out = m.mlp == MlpKind::swiglu ? 2 * ffn : ffn;
    e = c.activation_bytes;
  }
  /// b x s x h activations of the microbatch on this rank: what TP collectives move.
  double activation_bytes() const { return tokens * hidden * e; }
};

/// Bytes of a sequence-parallel all-gather: the activations, or their quantized copy
/// (`quantized_bytes` an element) when they feed an FP8 or NVFP4 linear layer: Transformer Engine
/// casts before it gathers.
double gather_bytes(const LayerContext& c, const Shape& s, bool quantized) {
  return quantized ? s.tokens * s.hidden * c.quantized_bytes : s.activation_bytes();
}

/// Tensor-parallel entry of a region (f in Megatron's notation): identity forward, all-reduce
/// backward; with sequence parallelism, all-gather forward (of FP8 data with `fp8`) and
/// reduce-scatter backward.
void region_entry(std::vector<PassItem>& items, const LayerContext& c, const Shape& s, bool forward,
                  bool fp8 = false) {
  if (c.tp == 1) return;
  if (forward) {
    if (c.sequence_parallel) {
      items.push_back(collective(CollectiveOp::all_gather, gather_bytes(c, s, fp8), LayerGroup::tp,
                                 "tp_all_gather"));
    }
    return;
  }
  // Backward, the reduction of the column layers' input gradient: Megatron and Transformer
  // Engine issue it after the dgrad GEMM and wait for it after the wgrad GEMM, which the item
  // before it is when the layers' projections are one GEMM (and the weights are not frozen).
  // The layer's function returns after the wait; autograd then adds its weight gradient.
  auto at = items.end();
  while (at != items.begin() && std::prev(at)->gradient_accumulation) --at;
  at = items.insert(at, c.sequence_parallel
                            ? collective(CollectiveOp::reduce_scatter, s.activation_bytes(),
                                         LayerGroup::tp, "tp_reduce_scatter")
                            : collective(CollectiveOp::all_reduce, s.activation_bytes(),
                                         LayerGroup::tp, "tp_all_reduce"));
  if (c.overlap_dgrad_reduce && !c.lora && at != items.begin()) {
    const PassItem& previous = *std::prev(at);
    at->hidden_by_previous_gemm =
        previous.kind == PassItem::Kind::kernel && previous.work.kernel_class == KernelClass::gemm;
  }
}

/// Tensor-parallel exit of a region (g): all-reduce forward, identity backward; with sequence
/// parallelism, reduce-scatter forward and all-gather backward (of FP8 data with `fp8`).
void region_exit(std::vector<PassItem>& items, const LayerContext& c, const Shape& s, bool forward,
                 bool fp8 = false) {
  if (c.tp == 1) return;
  if (c.sequence_parallel) {
    items.push_back(forward ? collective(CollectiveOp::reduce_scatter, s.activation_bytes(),
                                         LayerGroup::tp, "tp_reduce_scatter")
                            : collective(CollectiveOp::all_gather, gather_bytes(c, s, fp8),
                                         LayerGroup::tp, "tp_all_gather"));
  } else if (forward) {
    items.push_back(collective(CollectiveOp::all_reduce, s.activation_bytes(), LayerGroup::tp,
                               "tp_all_reduce"));
  }
}

/// Normalisation: read and write the activations; with `fp8_output` (before an FP8 layer:
/// Transformer Engine's LayerNormLinear) write them in FP8, one byte an element.
KernelWork norm(const char* name, const Shape& s, bool fp8_output = false) {
  return memory_bound(name, s.elementwise_tokens * s.hidden * (s.e + (fp8_output ? 1 : s.e)));
}

// PyTorch eager (torchtitan without torch.compile; docs/frameworks.md, "Eager and compiled
// element-wise ops"): each element-wise op of the model's Python code is a kernel of its own,
// reading its inputs from memory and writing its output, in fp32 where the code upcasts.

/// One eager op: the bytes its kernel reads and writes per element; 0 for a per-token op
/// (a reduction's scalar), which costs its launch.
struct EagerOp {
  const char* op;
  double bytes_per_element;
};

void eager_ops(std::vector<PassItem>& items, const std::string& name, double elements,
               std::initializer_list<EagerOp> ops) {
  for (const EagerOp& op : ops) {
    items.push_back(kernel(memory_bound(name + "_" + op.op, elements * op.bytes_per_element)));
  }
}

/// torchtitan's RMSNorm, `_norm(x.float()).type_as(x) * weight` with `_norm(x) = x *
/// rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)`; an FP8 layer after it casts its output.
void eager_norm_forward(std::vector<PassItem>& items, const char* name, const Shape& s,
                        bool fp8_output) {
  const double e = s.e;
  eager_ops(items, name, s.elementwise_tokens * s.hidden,
            {{"to_fp32", e + 4},
             {"pow", 8},
             {"mean", 4},
             {"add_eps", 0},
             {"rsqrt", 0},
             {"scale", 8},
             {"to_input_dtype", 4 + e},
             {"weight", 2 * e}});
  if (fp8_output) eager_ops(items, name, s.elementwise_tokens * s.hidden, {{"to_fp8", e + 1}});
}

/// Autograd's backward of the same ops, last first: the weight's product (and its gradient,
/// a product summed over tokens), the casts, the scale's two products, the mean's expansion,
/// pow's backward and the sum of the input's two gradients.
void eager_norm_backward(std::vector<PassItem>& items, const char* name, const Shape& s) {
  const double e = s.e;
  eager_ops(items, name, s.elementwise_tokens * s.hidden,
            {{"weight_backward", 2 * e},
             {"weight_grad", 3 * e},
             {"weight_grad_sum", e},
             {"to_input_dtype_backward", e + 4},
             {"scale_backward", 8},
             {"rsqrt_grad", 12},
             {"rsqrt_grad_sum", 4},
             {"rsqrt_backward", 0},
             {"mean_backward", 4},
             {"pow_backward", 12},
             {"accumulate_grad", 12},
             {"to_fp32_backward", 4 + e}});
}

/// A norm: fused (one pass each way), or the eager ops.
void norm_forward(std::vector<PassItem>& items, const char* name, const Shape& s, bool eager,
                  bool fp8_output) {
  if (eager) {
    eager_norm_forward(items, name, s, fp8_output);
  } else {
    items.push_back(kernel(norm(name, s, fp8_output)));
  }
}

void norm_backward(std::vector<PassItem>& items, const char* name, const Shape& s, bool eager) {
  if (eager) {
    eager_norm_backward(items, name, s);
  } else {
    items.push_back(kernel(
        memory_bound(std::string(name) + "_backward", 3 * s.elementwise_tokens * s.hidden * s.e)));
  }
}

/// torchtitan's rotary embedding of the queries and keys: `view_as_complex(x.float())`, a
/// complex product with the frequencies, `type_as(x)`, three kernels per tensor each way.
/// (Fused, as Transformer Engine's or Inductor's kernel, it is not modelled.)
void eager_rope(std::vector<PassItem>& items, const Shape& s, bool forward) {
  const double e = s.e;
  for (const auto& [name, heads] : {std::pair{"rope_q", s.heads}, {"rope_k", s.kv_heads}}) {
    const double elements = s.tokens * heads * s.head_dim;
    if (forward) {
      eager_ops(items, name, elements,
                {{"to_fp32", e + 4}, {"rotate", 8}, {"to_input_dtype", 4 + e}});
    } else {
      eager_ops(items, name, elements,
                {{"to_input_dtype_backward", e + 4},
                 {"rotate_backward", 8},
                 {"to_fp32_backward", 4 + e}});
    }
  }
}

/// torchtitan's `repeat_kv`: grouped keys and values expanded to every query head, a copy
/// (the reshape of an expanded view; its backward sums the copies). None without GQA.
void eager_repeat_kv(std::vector<PassItem>& items, const Shape& s, const char* name) {
  if (s.kv_heads >= s.heads) return;
  const double expanded = s.tokens * s.heads * s.head_dim;
  items.push_back(kernel(memory_bound(name, 2 * expanded * (s.e + s.e * s.kv_heads / s.heads))));
}

/// The attention output's `transpose(1, 2).contiguous()`, a copy each way.
void eager_output_copy(std::vector<PassItem>& items, const Shape& s, const char* name) {
  items.push_back(kernel(memory_bound(name, 2 * s.tokens * s.heads * s.head_dim * s.e)));
}

/// The MLP's activation: fused (SwiGLU reads gate and up and writes their product), or as
/// torchtitan writes it eagerly, `silu(w1(x)) * w3(x)`: two kernels forward, three backward.
void activation_forward(std::vector<PassItem>& items, const LayerContext& c, const Shape& s) {
  const bool swiglu = c.model.mlp == MlpKind::swiglu;
  if (c.eager_layers && swiglu) {
    eager_ops(items, "swiglu", s.tokens * s.ffn, {{"silu", 2 * s.e}, {"mul", 3 * s.e}});
    return;
  }
  const double passes = swiglu ? 3 : 2;
  items.push_back(
      kernel(memory_bound(swiglu ? "swiglu" : "gelu", passes * s.tokens * s.ffn * s.e)));
}

void activation_backward(std::vector<PassItem>& items, const LayerContext& c, const Shape& s) {
  const bool swiglu = c.model.mlp == MlpKind::swiglu;
  if (c.eager_layers && swiglu) {
    eager_ops(
        items, "swiglu", s.tokens * s.ffn,
        {{"mul_backward_gate", 3 * s.e}, {"mul_backward_up", 3 * s.e}, {"silu_backward", 3 * s.e}});
    return;
  }
  const double passes = swiglu ? 4 : 3;
  items.push_back(kernel(
      memory_bound(swiglu ? "swiglu_backward" : "gelu_backward", passes * s.tokens * s.ffn * s.e)));
}

/// Bias, dropout and residual add: read two tensors and a mask, write one.
KernelWork residual(const char* name, const Shape& s) {
  return memory_bound(name, s.elementwise_tokens * s.hidden * (3 * s.e + 1));
}

/// The attention core of one rank's heads: fused (flash) or as batched GEMMs and a softmax.
void attention_forward(std::vector<PassItem>& items, const LayerContext& c, const Shape& s) {
  const auto& m = c.model;
  const double b = static_cast<double>(c.microbatch);
  const double q_len = static_cast<double>(m.sequence / c.cp);
  const double kv_len = static_cast<double>(m.sequence);
  if (c.cp > 1) {
    // Each rank needs every rank's keys and values.
    const double kv_bytes =
        b * kv_len * 2.0 * static_cast<double>(m.kv_heads / c.tp) * s.head_dim * s.e;
    items.push_back(
        collective(CollectiveOp::all_gather, kv_bytes, LayerGroup::cp, "cp_all_gather_kv"));
  }
  if (m.attention == AttentionKernel::flash) {
    KernelWork work;
    work.name = "flash_attention";
    work.kernel_class = KernelClass::attention;
    work.attention_backend = c.attention_backend;
    work.flops = 4.0 * b * s.heads * q_len * kv_len * s.head_dim * (m.causal ? 0.5 : 1.0);
    work.bytes = b * (2 * q_len + 2 * kv_len) * s.heads * s.head_dim * s.e;
    items.push_back(kernel(work));
    return;
  }
  const double batch = b * s.heads;
  const double scores = batch * q_len * kv_len;
  items.push_back(kernel(gemm("attention_scores", q_len, kv_len, s.head_dim, s.e, batch)));
  if (fused_softmax(c)) {
    // Scale, mask and softmax in one kernel, then dropout.
    items.push_back(kernel(memory_bound("softmax", 2 * scores * s.e)));
    items.push_back(kernel(memory_bound("dropout", scores * (2 * s.e + 1))));
  } else {
    // Megatron's FusedScaleMaskSoftmax without its kernel (forward_torch_softmax), one PyTorch
    // kernel per op: the scores cast to fp32, scaled by the layer's coefficient (query-key layer
    // scaling), masked in place, softmax, cast back; then the dropout.
    eager_ops(items, "softmax", scores, {{"to_fp32", s.e + 4}});
    if (c.query_key_layer_scaling) eager_ops(items, "softmax", scores, {{"scale", 8}});
    eager_ops(items, "softmax", scores, {{"mask", 8}, {"fp32", 8}, {"to_input_dtype", 4 + s.e}});
    items.push_back(kernel(memory_bound("dropout", scores * (2 * s.e + 1))));
  }
  items.push_back(kernel(gemm("attention_values", q_len, s.head_dim, kv_len, s.e, batch)));
}

void attention_backward(std::vector<PassItem>& items, const LayerContext& c, const Shape& s) {
  const auto& m = c.model;
  const double b = static_cast<double>(c.microbatch);
  const double q_len = static_cast<double>(m.sequence / c.cp);
  const double kv_len = static_cast<double>(m.sequence);
  if (m.attention == AttentionKernel::flash) {
    KernelWork work;
    work.name = "flash_attention_backward";
    work.kernel_class = KernelClass::attention;
    work.attention_backend = c.attention_backend;
    // Recomputes the scores: 5 products of the forward's 2.
    work.flops = 2.5 * 4.0 * b * s.heads * q_len * kv_len * s.head_dim * (m.causal ? 0.5 : 1.0);
    work.bytes = 2 * b * (2 * q_len + 2 * kv_len) * s.heads * s.head_dim * s.e;
    items.push_back(kernel(work));
  } else {
    const double batch = b * s.heads;
    items.push_back(kernel(gemm("attention_values_dgrad", q_len, kv_len, s.head_dim, s.e, batch)));
    items.push_back(kernel(gemm("attention_values_wgrad", kv_len, s.head_dim, q_len, s.e, batch)));
    const double scores = batch * q_len * kv_len;
    items.push_back(kernel(memory_bound("dropout_backward", scores * (2 * s.e + 1))));
    if (fused_softmax(c)) {
      items.push_back(kernel(memory_bound("softmax_backward", scores * 3 * s.e)));
    } else {
      // Autograd through the ops above, last first: each cast, the softmax's backward (output
      // and gradient read), the mask's and the scale's.
      eager_ops(
          items, "softmax", scores,
          {{"to_input_dtype_backward", s.e + 4}, {"fp32_backward", 12}, {"mask_backward", 8}});
      if (c.query_key_layer_scaling) eager_ops(items, "softmax", scores, {{"scale_backward", 8}});
      eager_ops(items, "softmax", scores, {{"to_fp32_backward", 4 + s.e}});
    }
    items.push_back(
        kernel(gemm("attention_scores_dgrad_q", q_len, s.head_dim, kv_len, s.e, batch)));
    items.push_back(
        kernel(gemm("attention_scores_dgrad_k", kv_len, s.head_dim, q_len, s.e, batch)));
  }
  if (c.cp > 1) {
    const double kv_bytes =
        b * kv_len * 2.0 * static_cast<double>(m.kv_heads / c.tp) * s.head_dim * s.e;
    items.push_back(collective(CollectiveOp::reduce_scatter, kv_bytes, LayerGroup::cp,
                               "cp_reduce_scatter_dkv"));
  }
}

/// How tensor parallelism splits a linear layer: column (qkv, MLP up: Transformer Engine's
/// LayerNormLinear, whose input under sequence parallelism is all-gathered) or row (attention
/// output, MLP down: its Linear, whose output gradient is all-gathered in backward).
enum class Split { column, row };

// FP8 casts as Transformer Engine runs them (module/linear.py `_Linear`, layernorm_linear.py
// `_LayerNormLinear`, base.py `grad_output_preprocess`; docs/frameworks.md). Hopper's FP8 GEMMs
// take only the TN layout, so each operand of a weight gradient needs a transposed copy: a cast
// writes it beside the row-major one (`fp8_cast_transpose_fused`: e + 2 bytes an element), or a
// later `fp8_transpose` makes it (2 bytes). A column layer's input needs no cast of its own:
// the layer norm before it writes FP8.

/// Whether sequence parallelism all-gathers a column layer's input and a row layer's gradient.
bool gathered(const LayerContext& c) { return c.sequence_parallel && c.tp > 1; }

/// Whether the layers cast to FP8 per tensor, as above: tensor-parallel all-gathers move FP8.
bool fp8_tensorwise(const LayerContext& c) { return c.fp8 && !c.fp8_rowwise(); }

/// Whether the norms write FP8 for the column layers: only with delayed scaling, whose scale is
/// known before the tensor is. With the current tensor's amax (torchao's tensorwise), the norm
/// writes bf16 and a cast follows it.
bool norm_writes_fp8(const LayerContext& c) {
  return c.fp8 && c.fp8_scaling == Fp8Scaling::delayed;
}

// torchao's rowwise recipe (pytorch/ao `torchao/float8/float8_linear.py`, the axiswise path of
// `Float8Linear.forward`; docs/frameworks.md) saves the layer's bf16 input and weight for
// backward and casts every GEMM operand from them, scaled along the axis the GEMM keeps: the
// input and the weight for the output, the output gradient and the weight again (other axis)
// for dgrad, the output gradient and the input again (along the tokens) for wgrad.

/// An axiswise cast of `elements` from bf16: along the contiguous axis one kernel reads e bytes
/// and writes 1; along the other the amax is a reduction kernel of its own (2e + 1).
KernelWork axiswise_cast(std::string name, double elements, double e, bool contiguous_axis) {
  return memory_bound(std::move(name), elements * ((contiguous_axis ? 1 : 2) * e + 1));
}

/// A cast of `elements` to FP8 (NVFP4): e bytes read, one copy of `q` bytes an element written,
/// two with `transposed`; with `amax`, e bytes more for the amax reduction over the tensor that
/// gives its scale (charged to the cast: torch.compile may fuse it into the producer).
KernelWork cast(std::string name, double elements, double e, double q, bool transposed, bool amax) {
  return memory_bound(std::move(name), elements * (e + (transposed ? 2 : 1) * q + (amax ? e : 0)));
}

/// torchao's rescale of a rowwise backward GEMM's output. Its dgrad and wgrad run without fast
/// accumulation, for which PyTorch's rowwise CUTLASS kernel is slow, so torchao runs cuBLAS's
/// per-tensor kernel with unit scales and multiplies the output by the row and column scales
/// afterwards (`addmm_float8_unwrapped`): a kernel of its own that reads and writes the output.
KernelWork rescale(std::string name, double elements, double e) {
  return memory_bound(std::move(name), elements * 2 * e);
}

/// The transposed copy of a quantized operand: `q` bytes read and `q` written an element.
KernelWork transpose(std::string name, double elements, double q) {
  return memory_bound(std::move(name), 2 * q * elements);
}

/// A transformer layer's GEMM: FP8 with `workload.fp8_gemms`, FP4 with `fp4_gemms`.
KernelWork linear_gemm(std::string name, double m, double n, double k, double e) {
  KernelWork work = gemm(std::move(name), m, n, k, e);
  work.fp8_eligible = true;
  return work;
}

/// dgrad or wgrad of a transformer layer's linear layer. In FP8 both accumulate in split mode:
/// Transformer Engine's `_2X_ACC_DGRAD` and `_2X_ACC_WGRAD`, torchao's default
/// `gemm_config_grad_input` and `gemm_config_grad_weight` (no fast accumulation).
KernelWork backward_gemm(std::string name, double m, double n, double k, double e,
                         bool fp8_eligible = true) {
  KernelWork work = linear_gemm(std::move(name), m, n, k, e);
  work.fp8_eligible = fp8_eligible;
  work.split_accumulation = true;
  return work;
}

/// Forward of a transformer layer's linear layer, tokens x in -> tokens x out. In FP8 a row
/// layer's input is cast first; under sequence parallelism without the transposed copy, which
/// the backward pass makes. Rowwise, the input and the weight are cast before every layer.
void linear_forward(std::vector<PassItem>& items, const LayerContext& c, const char* name,
                    Split split, double tokens, double out, double in, double e) {
  const std::string prefix = name;
  if (c.fp8_rowwise()) {
    items.push_back(kernel(axiswise_cast(prefix + "_quantize", tokens * in, e, true)));
    items.push_back(kernel(axiswise_cast(prefix + "_weight_quantize", out * in, e, true)));
  } else if (c.fp8 && split == Split::row) {
    const bool transposed = !gathered(c) && !c.lora;  // the copy only a weight gradient reads
    items.push_back(kernel(
        cast(prefix + "_quantize", tokens * in, e, c.quantized_bytes, transposed, c.fp8_amax())));
  }
  items.push_back(kernel(linear_gemm(name, tokens, out, in, e)));
}

/// dgrad and wgrad of a linear layer whose forward was tokens x in -> tokens x out. A
/// transformer layer's (`fp8_eligible`) runs in FP8 with the workload's fp8_gemms: its output
/// gradient is cast first (a gathered one on the rank's shard, before the all-gather that the
/// region just queued, so that the gather stays next to the GEMM that consumes it), and the
/// operands of the weight gradient that have no transposed copy get one before it. Rowwise, each
/// GEMM's two operands are cast from bf16 right before it. Under LoRA the weight is frozen: the
/// dgrad alone (Transformer Engine skips the wgrad and the copies that feed it).
void linear_backward(std::vector<PassItem>& items, const LayerContext& c, const char* name,
                     Split split, double tokens, double in, double out, double e,
                     bool fp8_eligible = true) {
  const bool fp8 = c.fp8 && fp8_eligible;
  const bool trained = !c.lora;
  const std::string prefix = name;
  if (fp8 && c.fp8_rowwise()) {
    items.push_back(kernel(axiswise_cast(prefix + "_grad_quantize", tokens * out, e, true)));
    items.push_back(kernel(axiswise_cast(prefix + "_weight_quantize_t", out * in, e, false)));
    items.push_back(kernel(backward_gemm(prefix + "_dgrad", tokens, in, out, e)));
    items.push_back(kernel(rescale(prefix + "_dgrad_rescale", tokens * in, e)));
    if (!trained) return;
    items.push_back(kernel(axiswise_cast(prefix + "_grad_quantize_t", tokens * out, e, false)));
    items.push_back(kernel(axiswise_cast(prefix + "_input_quantize_t", tokens * in, e, false)));
    items.push_back(kernel(backward_gemm(prefix + "_wgrad", in, out, tokens, e)));
    items.push_back(kernel(rescale(prefix + "_wgrad_rescale", in * out, e)));
    accumulate_gradient(items, c, prefix, in * out);
    return;
  }
  const bool gathered_grad = split == Split::row && gathered(c);
  if (fp8 && gathered_grad) {
    auto at = items.end();
    if (!items.empty() && items.back().kind == PassItem::Kind::collective &&
        items.back().op == CollectiveOp::all_gather) {
      --at;
    }
    items.insert(at, kernel(cast(prefix + "_grad_quantize", tokens * out / c.tp, e,
                                 c.quantized_bytes, false, c.fp8_amax())));
  } else if (fp8) {
    items.push_back(kernel(cast(prefix + "_grad_quantize", tokens * out, e, c.quantized_bytes,
                                trained, c.fp8_amax())));
  }
  items.push_back(kernel(backward_gemm(prefix + "_dgrad", tokens, in, out, e, fp8_eligible)));
  if (!trained) return;
  if (fp8 && (split == Split::column || gathered(c))) {
    // The norm's FP8 output (column) or the cast without its copy (row, sequence-parallel).
    items.push_back(kernel(transpose(prefix + "_input_transpose", tokens * in, c.quantized_bytes)));
  }
  if (fp8 && gathered_grad) {
    items.push_back(kernel(transpose(prefix + "_grad_transpose", tokens * out, c.quantized_bytes)));
  }
  items.push_back(kernel(backward_gemm(prefix + "_wgrad", in, out, tokens, e, fp8_eligible)));
  accumulate_gradient(items, c, prefix, in * out);
}

/// With the current tensor's amax, a column layer's input (the norm's bf16 output) is cast on
/// its own, on the rank's shard before a sequence-parallel gather; the transposed copy comes
/// before the weight gradient, as with delayed scaling.
void column_input_cast(std::vector<PassItem>& items, const LayerContext& c, const Shape& s,
                       const char* linear) {
  if (!c.fp8_amax()) return;
  items.push_back(kernel(cast(std::string(linear) + "_quantize", s.elementwise_tokens * s.hidden,
                              s.e, c.quantized_bytes, false, true)));
}

/// One linear layer of the model's code, by its output width on this rank.
struct Projection {
  const char* name;
  double out;
};

/// The column layers that read the attention's input: Megatron's fused `linear_qkv`, or
/// torchtitan's `wq`, `wk` and `wv`, each a module and a GEMM of its own.
std::vector<Projection> attention_projections(const LayerContext& c, const Shape& s) {
  if (c.fused_projections) return {{"qkv_projection", s.qkv_out}};
  return {{"q_projection", s.q_out}, {"k_projection", s.kv_out}, {"v_projection", s.kv_out}};
}

/// The MLP's column layers: Megatron's fused `linear_fc1` (SwiGLU's gate and up together), or
/// torchtitan's `w1` and `w3`.
std::vector<Projection> mlp_projections(const LayerContext& c, const Shape& s) {
  if (c.fused_projections || c.model.mlp != MlpKind::swiglu) return {{"mlp_up", s.mlp_in_out}};
  return {{"mlp_gate", s.ffn}, {"mlp_up", s.ffn}};
}

/// The column layers of one normalised input: its FP8 casts, the sequence-parallel gather, the
/// GEMMs. Under tensor parallelism the input is cast once and gathered for all of them
/// (torchtitan's `PrepareFloat8ModuleInput`); without it each of torchtitan's Float8 linears
/// casts its own input.
void column_forward(std::vector<PassItem>& items, const LayerContext& c, const Shape& s,
                    const std::vector<Projection>& projections) {
  const size_t casts = c.tp > 1 ? 1 : projections.size();
  for (size_t i = 0; i < casts; ++i) column_input_cast(items, c, s, projections[i].name);
  region_entry(items, c, s, true, fp8_tensorwise(c));
  for (const Projection& p : projections) {
    linear_forward(items, c, p.name, Split::column, s.tokens, p.out, s.hidden, s.e);
  }
}

/// The column layers' backward, last first, and the sum of their input gradients: autograd
/// adds the dgrads of an input that several layers read. Eagerly, one add a layer after the
/// first (two tensors read, one written); under torch.compile one kernel reads them all.
void column_backward(std::vector<PassItem>& items, const LayerContext& c, const Shape& s,
                     const std::vector<Projection>& projections, const char* sum_name) {
  for (auto p = projections.rbegin(); p != projections.rend(); ++p) {
    linear_backward(items, c, p->name, Split::column, s.tokens, s.hidden, p->out, s.e);
  }
  const double readers = static_cast<double>(projections.size());
  if (readers < 2) return;
  const double elements = s.tokens * s.hidden;
  if (c.eager_layers) {
    for (size_t i = 1; i < projections.size(); ++i) {
      items.push_back(kernel(memory_bound(sum_name, 3 * elements * s.e)));
    }
  } else {
    items.push_back(kernel(memory_bound(sum_name, (readers + 1) * elements * s.e)));
  }
}

// LoRA as Megatron-Bridge builds it (`ParallelLinearAdapter` in src/megatron/bridge/peft/utils.py,
// `LoRALinear` in lora_layers.py @067f987d): beside a frozen linear layer, linear_in (A) maps its
// input to the rank and linear_out (B) maps that to the layer's output; the result is scaled by
// alpha / rank and added to the layer's. Both are Megatron-Core's own parallel linears (bf16,
// not Transformer Engine's). For a column layer, A is column-parallel over the rank with its
// output gathered and B column-parallel like the layer; for a row layer, A is row-parallel over
// the layer's input (its rank-wide output all-reduced) and B column-parallel with its output
// gathered, then split along the sequence under sequence parallelism. The adapter's autograd
// nodes come after the layer's, so the backward runs them first.

/// One adapted linear layer: its name, how it is split, its widths on this rank.
struct Adapted {
  const char* name;
  Split split;
  double in, out;  ///< column: the whole input, the rank's output; row: the rank's input, whole
  /// A's output on this rank: a column layer's A splits the rank over the TP ranks.
  double a_out(double rank, double tp) const { return split == Split::column ? rank / tp : rank; }
  /// B's output on this rank: a row layer's B splits the layer's output.
  double b_out(double tp) const { return split == Split::column ? out : out / tp; }
};

/// Whether LoRA adapts `module`.
bool adapts(const LayerContext& c, LinearModule module) { return c.lora && c.lora->adapts(module); }

/// Tokens of the adapter's scale and sum: a row layer's output is the rank's sequence shard
/// under sequence parallelism.
double adapter_output_tokens(const Adapted& a, const Shape& s) {
  return a.split == Split::row ? s.elementwise_tokens : s.tokens;
}

void adapter_forward(std::vector<PassItem>& items, const LayerContext& c, const Shape& s,
                     const Adapted& a) {
  const std::string prefix = std::string(a.name) + "_lora";
  const double r = c.lora->rank;
  const double bytes = s.tokens * s.e;  // an element of the full sequence
  if (a.split == Split::column) {
    if (c.lora_gathers_input) {
      items.push_back(
          collective(CollectiveOp::all_gather, bytes * a.in, LayerGroup::tp, "lora_tp_all_gather"));
    }
    items.push_back(kernel(gemm(prefix + "_a", s.tokens, a.a_out(r, c.tp), a.in, s.e)));
    if (c.tp > 1) {
      items.push_back(collective(CollectiveOp::all_gather, bytes * r, LayerGroup::tp,
                                 "lora_tp_all_gather_rank"));
    }
    items.push_back(kernel(gemm(prefix + "_b", s.tokens, a.b_out(c.tp), r, s.e)));
  } else {
    items.push_back(kernel(gemm(prefix + "_a", s.tokens, a.a_out(r, c.tp), a.in, s.e)));
    if (c.tp > 1) {
      items.push_back(collective(CollectiveOp::all_reduce, bytes * r, LayerGroup::tp,
                                 "lora_tp_all_reduce_rank"));
    }
    items.push_back(kernel(gemm(prefix + "_b", s.tokens, a.b_out(c.tp), r, s.e)));
    if (c.tp > 1) {
      items.push_back(collective(CollectiveOp::all_gather, bytes * a.out, LayerGroup::tp,
                                 "lora_tp_all_gather"));
    }
  }
  const double elements = adapter_output_tokens(a, s) * a.out;
  items.push_back(kernel(memory_bound(prefix + "_scale", 2 * elements * s.e)));
  items.push_back(kernel(memory_bound(prefix + "_add", 3 * elements * s.e)));
}

/// The adapter's backward: the scale's, then B's and A's dgrad and wgrad, and the reductions of
/// their input gradients.
void adapter_backward(std::vector<PassItem>& items, const LayerContext& c, const Shape& s,
                      const Adapted& a) {
  const std::string prefix = std::string(a.name) + "_lora";
  const double r = c.lora->rank;
  const double bytes = s.tokens * s.e;
  const double b_out = a.b_out(c.tp);
  const double a_rank = a.a_out(r, c.tp);
  items.push_back(kernel(
      memory_bound(prefix + "_scale_backward", 2 * adapter_output_tokens(a, s) * a.out * s.e)));
  if (a.split == Split::row && c.sequence_parallel) {
    // The sequence split's backward gathers the output gradient.
    items.push_back(
        collective(CollectiveOp::all_gather, bytes * a.out, LayerGroup::tp, "lora_tp_all_gather"));
  }
  items.push_back(kernel(gemm(prefix + "_b_dgrad", s.tokens, r, b_out, s.e)));
  items.push_back(kernel(gemm(prefix + "_b_wgrad", r, b_out, s.tokens, s.e)));
  if (c.tp > 1) {
    // B's input is the same on every rank: its gradient is summed over them.
    items.push_back(
        collective(CollectiveOp::all_reduce, bytes * r, LayerGroup::tp, "lora_tp_all_reduce_rank"));
  }
  items.push_back(kernel(gemm(prefix + "_a_dgrad", s.tokens, a.in, a_rank, s.e)));
  items.push_back(kernel(gemm(prefix + "_a_wgrad", a_rank, a.in, s.tokens, s.e)));
  if (a.split == Split::column && c.lora_gathers_input) {
    items.push_back(collective(CollectiveOp::reduce_scatter, bytes * a.in, LayerGroup::tp,
                               "lora_tp_reduce_scatter"));
  } else if (a.split == Split::column && c.tp > 1 && !c.sequence_parallel) {
    items.push_back(
        collective(CollectiveOp::all_reduce, bytes * a.in, LayerGroup::tp, "lora_tp_all_reduce"));
  }
}

/// The sum of the adapter's input gradient and the layer's, after the layer's backward and its
/// input-gradient reduction: on the rank's shard when the adapter gathered its input itself,
/// else on every token (under sequence parallelism Transformer Engine adds the gradient of the
/// gathered norm output it returned before its reduce-scatter).
void adapter_gradient_sum(std::vector<PassItem>& items, const LayerContext& c, const Shape& s,
                          const Adapted& a) {
  const double tokens =
      a.split == Split::column && c.lora_gathers_input ? s.elementwise_tokens : s.tokens;
  items.push_back(
      kernel(memory_bound(std::string(a.name) + "_lora_input_grad_sum", 3 * tokens * a.in * s.e)));
}

/// The layer's four adaptable linears, in LinearModule order.
std::array<Adapted, 4> adapted_linears(const Shape& s, double tp) {
  return {Adapted{"qkv_projection", Split::column, s.hidden, s.qkv_out},
          Adapted{"attention_output", Split::row, s.hidden / tp, s.hidden},
          Adapted{"mlp_up", Split::column, s.hidden, s.mlp_in_out},
          Adapted{"mlp_down", Split::row, s.ffn, s.hidden}};
}

/// What torchtitan's per-op selective checkpointing runs again before a layer's backward
/// (`_apply_op_sac` in `torchtitan/models/llama3/infra/parallelize.py`). Its policy saves the
/// output of every matmul but every second one in the order the forward calls them, of the
/// attention kernel and of reduce-scatters; every other op is recomputed where the backward
/// needs its output. So: the norms, the residual add between them, the activation and (eager)
/// the rotary embedding and copies; the all-gathers (with the cast before them); and the
/// unsaved linears whose outputs the backward reads, the column layers'. Under torch.compile
/// the partitioner recomputes only those; eagerly the checkpoint reruns the forward up to the
/// last of them, so an unsaved row layer before it (`wo`) runs again too.
std::vector<PassItem> op_recompute(const LayerContext& c) {
  const Shape s(c);
  std::vector<PassItem> items;
  int linears = 0;  // the layer's matmuls in call order
  auto columns = [&](const std::vector<Projection>& projections) {
    column_input_cast(items, c, s, projections.front().name);
    region_entry(items, c, s, true, fp8_tensorwise(c));
    for (const Projection& p : projections) {
      if (++linears % 2 == 0) {
        linear_forward(items, c, p.name, Split::column, s.tokens, p.out, s.hidden, s.e);
      }
    }
  };
  norm_forward(items, "attention_norm", s, c.eager_layers, norm_writes_fp8(c));
  columns(attention_projections(c, s));
  if (c.eager_layers) {
    eager_rope(items, s, true);
    eager_repeat_kv(items, s, "repeat_kv");
    eager_output_copy(items, s, "attention_output_contiguous");
  }
  if (++linears % 2 == 0 && c.eager_layers) {
    linear_forward(items, c, "attention_output", Split::row, s.tokens, s.hidden, s.hidden / c.tp,
                   s.e);
  }
  items.push_back(kernel(residual("attention_residual", s)));
  norm_forward(items, "mlp_norm", s, c.eager_layers, norm_writes_fp8(c));
  // Eagerly the layer's Python reruns up to the MLP's column layers, its copies too.
  if (c.eager_layers) host_syncs(items, c);
  columns(mlp_projections(c, s));
  activation_forward(items, c, s);
  return items;
}

}  // namespace

bool fused_softmax(const LayerContext& c) {
  const int64_t local_heads = c.model.heads / c.tp;
  return c.microbatch * local_heads % 4 == 0 && c.model.sequence > 16 && c.model.sequence <= 16384;
}

int hiding_gemm_offset(CollectiveOp op, bool tp_comm_overlap, bool hidden_by_previous_gemm) {
  if (tp_comm_overlap) return op == CollectiveOp::all_gather ? 1 : -1;
  return hidden_by_previous_gemm ? -1 : 0;
}

double LayerContext::padded_vocab() const {
  const double multiple = 128.0 * tp;
  return std::ceil(static_cast<double>(model.vocab) / multiple) * multiple;
}

std::vector<PassItem> layer_forward(const LayerContext& c) {
  const Shape s(c);
  const auto linears = adapted_linears(s, c.tp);
  std::vector<PassItem> items;
  auto adapter = [&](LinearModule m) {
    if (adapts(c, m)) adapter_forward(items, c, s, linears[static_cast<size_t>(m)]);
  };
  norm_forward(items, "attention_norm", s, c.eager_layers, norm_writes_fp8(c));
  column_forward(items, c, s, attention_projections(c, s));
  adapter(LinearModule::qkv);
  if (c.eager_layers) {
    eager_rope(items, s, true);
    eager_repeat_kv(items, s, "repeat_kv");
  }
  attention_forward(items, c, s);
  if (c.eager_layers) eager_output_copy(items, s, "attention_output_contiguous");
  linear_forward(items, c, "attention_output", Split::row, s.tokens, s.hidden, s.hidden / c.tp,
                 s.e);
  region_exit(items, c, s, true);
  adapter(LinearModule::attention_output);
  items.push_back(kernel(residual("attention_residual", s)));
  norm_forward(items, "mlp_norm", s, c.eager_layers, norm_writes_fp8(c));
  host_syncs(items, c);
  column_forward(items, c, s, mlp_projections(c, s));
  adapter(LinearModule::mlp_up);
  activation_forward(items, c, s);
  linear_forward(items, c, "mlp_down", Split::row, s.tokens, s.hidden, s.ffn, s.e);
  region_exit(items, c, s, true);
  adapter(LinearModule::mlp_down);
  items.push_back(kernel(residual("mlp_residual", s)));
  return items;
}

std::vector<PassItem> layer_backward(const LayerContext& c) {
  const Shape s(c);
  std::vector<PassItem> items;
  if (c.recompute == Recompute::full) {
    items = layer_forward(c);
  } else if (c.recompute == Recompute::per_op) {
    items = op_recompute(c);
  } else if (c.recompute == Recompute::selective) {
    std::vector<PassItem> core;
    attention_forward(core, c, s);
    for (auto& item : core) {
      if (item.kind == PassItem::Kind::kernel) items.push_back(std::move(item));
    }
  }
  for (auto& item : items) item.work.name = "recompute_" + item.work.name;
  for (auto& item : items) {
    if (item.kind == PassItem::Kind::collective) item.name = "recompute_" + item.name;
  }
  // A LoRA adapter's backward before its layer's, their input gradients summed after it.
  const auto linears = adapted_linears(s, c.tp);
  auto adapter = [&](LinearModule m) {
    if (adapts(c, m)) adapter_backward(items, c, s, linears[static_cast<size_t>(m)]);
  };
  auto adapter_sum = [&](LinearModule m) {
    if (adapts(c, m)) adapter_gradient_sum(items, c, s, linears[static_cast<size_t>(m)]);
  };
  items.push_back(
      kernel(memory_bound("mlp_residual_backward", 2 * s.elementwise_tokens * s.hidden * s.e)));
  adapter(LinearModule::mlp_down);
  region_exit(items, c, s, false, fp8_tensorwise(c));
  linear_backward(items, c, "mlp_down", Split::row, s.tokens, s.ffn, s.hidden, s.e);
  adapter_sum(LinearModule::mlp_down);
  activation_backward(items, c, s);
  adapter(LinearModule::mlp_up);
  column_backward(items, c, s, mlp_projections(c, s), "mlp_input_grad_sum");
  region_entry(items, c, s, false);
  adapter_sum(LinearModule::mlp_up);
  norm_backward(items, "mlp_norm", s, c.eager_layers);
  items.push_back(kernel(
      memory_bound("attention_residual_backward", 2 * s.elementwise_tokens * s.hidden * s.e)));
  adapter(LinearModule::attention_output);
  region_exit(items, c, s, false, fp8_tensorwise(c));
  linear_backward(items, c, "attention_output", Split::row, s.tokens, s.hidden / c.tp, s.hidden,
                  s.e);
  adapter_sum(LinearModule::attention_output);
  if (c.eager_layers) eager_output_copy(items, s, "attention_output_contiguous_backward");
  attention_backward(items, c, s);
  if (c.eager_layers) {
    eager_repeat_kv(items, s, "repeat_kv_backward");
    eager_rope(items, s, false);
  }
  adapter(LinearModule::qkv);
  column_backward(items, c, s, attention_projections(c, s), "attention_input_grad_sum");
  region_entry(items, c, s, false);
  adapter_sum(LinearModule::qkv);
  norm_backward(items, "attention_norm", s, c.eager_layers);
  return items;
}

std::vector<PassItem> embedding_forward(const LayerContext& c) {
  const Shape s(c);
  std::vector<PassItem> items;
  // Each TP rank looks up its slice of the vocabulary; the partial rows are summed.
  items.push_back(kernel(memory_bound("embedding", 3 * s.tokens * s.hidden * s.e)));
  region_exit(items, c, s, true);
  return items;
}

std::vector<PassItem> embedding_backward(const LayerContext& c) {
  const Shape s(c);
  std::vector<PassItem> items;
  region_exit(items, c, s, false);
  // Scatter-add the rows into the rank's dense slice of the table gradient.
  const double table = c.padded_vocab() / c.tp * s.hidden;
  items.push_back(
      kernel(memory_bound("embedding_backward", 2 * s.tokens * s.hidden * s.e + table * s.e)));
  accumulate_gradient(items, c, "embedding", table);
  return items;
}

std::vector<PassItem> head_forward(const LayerContext& c) {
  const Shape s(c);
  const double vocab = c.padded_vocab() / c.tp;
  std::vector<PassItem> items;
  norm_forward(items, "final_norm", s, c.eager_head, false);
  region_entry(items, c, s, true);
  items.push_back(kernel(gemm("output_head", s.tokens, vocab, s.hidden, s.e)));
  if (c.eager_head) {
    // torchtitan: `cross_entropy(pred.float(), labels)`; PyTorch's log-softmax over rows longer
    // than shared memory reads its input three times (max, sum, output).
    eager_ops(items, "cross_entropy", s.tokens * vocab,
              {{"logits_to_fp32", s.e + 4}, {"log_softmax", 16}, {"nll_loss", 0}});
  } else if (c.cross_entropy_fusion) {
    // Megatron-Core's fused loss: max, sum of exponentials, target logit over fp32 logits.
    items.push_back(kernel(memory_bound("cross_entropy", s.tokens * vocab * (s.e + 8))));
  } else {
    // Megatron's vocab_parallel_cross_entropy (megatron/core/tensor_parallel/cross_entropy.py;
    // Megatron-DeepSpeed's copy runs the same ops): the logits cast to fp32, then each tensor op a
    // pass over them; the softmax stays for the backward. The per-token ops (target mask, target
    // logit, log) cost a launch each and are left out.
    eager_ops(items, "cross_entropy", s.tokens * vocab,
              {{"logits_to_fp32", s.e + 4},
               {"logits_max", 4},
               {"subtract_max", 8},
               {"exp", 8},
               {"sum_exp", 4},
               {"softmax_divide", 8}});
  }
  if (c.tp > 1) {
    // Megatron's vocab-parallel cross-entropy: the logits' maximum, the target logit and the sum
    // of exponentials are all-reduced one after the other, one fp32 value per token each.
    for (const char* name :
         {"tp_all_reduce_logits_max", "tp_all_reduce_target_logit", "tp_all_reduce_exp_sum"}) {
      items.push_back(collective(CollectiveOp::all_reduce, 4 * s.tokens, LayerGroup::tp, name));
    }
  }
  return items;
}

std::vector<PassItem> head_backward(const LayerContext& c) {
  const Shape s(c);
  const double vocab = c.padded_vocab() / c.tp;
  std::vector<PassItem> items;
  if (c.eager_head) {
    // The zero-filled gradient of the target logits, log-softmax's backward (a sum, then the
    // product), the cast back.
    eager_ops(items, "cross_entropy", s.tokens * vocab,
              {{"nll_loss_backward", 4},
               {"log_softmax_backward", 16},
               {"logits_to_fp32_backward", 4 + s.e}});
  } else if (c.cross_entropy_fusion) {
    items.push_back(kernel(memory_bound("cross_entropy_backward", s.tokens * vocab * (s.e + 4))));
  } else {
    // The softmax minus the one-hot target (a per-token update), times the loss gradient in
    // place, cast back to the logits' precision.
    eager_ops(items, "cross_entropy", s.tokens * vocab,
              {{"subtract_target", 0}, {"grad_scale", 8}, {"logits_to_fp32_backward", 4 + s.e}});
  }
  // The output layer is not a Transformer Engine module (Megatron-Core's ColumnParallelLinear;
  // torchtitan's float8 conversion skips `output`): it stays in the workload's precision.
  linear_backward(items, c, "output_head", Split::column, s.tokens, s.hidden, vocab, s.e, false);
  // Not FP8: the wgrad, when there is one (not under LoRA), is the last GEMM. Deferring it needs
  // fused accumulation, so no add follows it then.
  if (!c.lora) {
    auto wgrad = std::find_if(items.rbegin(), items.rend(), [](const PassItem& item) {
      return item.kind == PassItem::Kind::kernel && item.work.kernel_class == KernelClass::gemm;
    });
    wgrad->embedding_wgrad = true;
  }
  region_entry(items, c, s, false);
  norm_backward(items, "final_norm", s, c.eager_head);
  return items;
}

KernelWork optimizer_step(double parameters, double gradient_bytes, double model_bytes) {
  const double bytes = 4 + gradient_bytes + 8 + 12 + gradient_bytes + 4 + model_bytes;
  return memory_bound("adam_step", bytes * parameters, KernelClass::optimizer);
}

KernelWork zero_gradients(double parameters, double gradient_bytes) {
  return memory_bound("zero_gradients", gradient_bytes * parameters, KernelClass::optimizer);
}

KernelWork fsdp_gather_copy_out(double gathered_bytes) {
  return memory_bound("fsdp_gather_copy_out", 2 * gathered_bytes, KernelClass::elementwise);
}

KernelWork fsdp_reduce_copy_in(double parameters, double model_bytes, double gradient_bytes) {
  return memory_bound("fsdp_reduce_copy_in", (model_bytes + gradient_bytes) * parameters,
                      KernelClass::elementwise);
}

KernelWork float8_weight_amax(double fp32_weights) {
  return memory_bound("float8_weight_amax", 4 * fp32_weights, KernelClass::optimizer);
}

int linear_layers_per_layer(const LayerContext& c) {
  const Shape s(c);
  // The attention's input projections and its output; the MLP's input projections and its down.
  return static_cast<int>(attention_projections(c, s).size() + mlp_projections(c, s).size()) + 2;
}

double layer_linear_parameters(const TransformerSpec& m) {
  const double h = static_cast<double>(m.hidden);
  const double qkv =
      static_cast<double>(m.heads + 2 * m.kv_heads) * static_cast<double>(m.head_dim());
  const double mlp = static_cast<double>(m.ffn) * h * (m.mlp == MlpKind::swiglu ? 3 : 2);
  return h * qkv + h * h + mlp;
}

double layer_parameters(const TransformerSpec& m) {
  return layer_linear_parameters(m) + 2 * static_cast<double>(m.hidden);
}

double adapter_parameters(const LayerContext& c) {
  if (!c.lora) return 0;
  const Shape s(c);
  const auto linears = adapted_linears(s, c.tp);
  const double r = c.lora->rank;
  double parameters = 0;
  for (size_t m = 0; m < linears.size(); ++m) {
    if (!c.lora->modules[m]) continue;
    // The rank's A (in x its share of the rank) and B (rank x its share of the output).
    const Adapted& a = linears[m];
    parameters += a.a_out(r, c.tp) * a.in + r * a.b_out(c.tp);
  }
  return parameters;
}

double embedding_parameters(const LayerContext& c) {
  return c.padded_vocab() * static_cast<double>(c.model.hidden);
}

double model_parameters(const LayerContext& c) {
  const double tables = c.model.tied_embeddings ? 1 : 2;
  return c.model.layers * layer_parameters(c.model) + tables * embedding_parameters(c) +
         static_cast<double>(c.model.hidden);
}

double model_flops_per_sequence(const TransformerSpec& m) {
  const double s = static_cast<double>(m.sequence);
  const double h = static_cast<double>(m.hidden);
  const double linear = m.layers * layer_linear_parameters(m) + static_cast<double>(m.vocab) * h;
  const double attention = m.layers * 4.0 * s * s * h * (m.causal ? 0.5 : 1.0);
  return 3.0 * (2.0 * s * linear + attention);
}

}  // namespace prismsim
