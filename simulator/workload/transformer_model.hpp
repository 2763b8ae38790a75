#pragma once

#include <vector>

#include "config/scenario.hpp"
#include "workload/compute_model.hpp"

namespace prismsim {

/// The collective groups a layer uses inside a pass.
enum class LayerGroup { tp, cp };

/// One step of a pass: a kernel, a collective on the rank's tensor- or context-parallel group, or
/// a blocking host-to-device copy after which the host waits for the device (`host.layer_syncs`).
struct PassItem {
  enum class Kind { kernel, collective, host_sync };
  Kind kind = Kind::kernel;
  KernelWork work;
  CollectiveOp op = CollectiveOp::all_reduce;
  double bytes = 0;  ///< nccl-tests convention
  LayerGroup group = LayerGroup::tp;
  std::string name;  ///< collective: "tp_all_reduce", ...
  /// Runs of its unit's module code (a layer's Python) before this item, the unit's first: 1,
  /// 2 in a fully recomputed layer's backward; 0 for the other items (`host.layer_launch`).
  int module_runs = 0;
  /// The output layer's weight gradient, which Megatron can defer to the pipeline flush
  /// (`parallelism.defer_embedding_wgrad`).
  bool embedding_wgrad = false;
  /// A collective issued before the GEMM that precedes it here and waited for after it, so
  /// that it costs only what that GEMM does not hide: a column layer's input-gradient
  /// reduction beside its wgrad GEMM (`parallelism.overlap_dgrad_reduce`).
  bool hidden_by_previous_gemm = false;
  /// Adds a weight gradient into the one kept from the step's earlier microbatches
  /// (`parallelism.gradient_accumulation`); autograd's runs from the second microbatch on.
  bool gradient_accumulation = false;
};

/// One rank's share of a transformer: its tensor- and context-parallel slice of one microbatch.
struct LayerContext {
  TransformerSpec model;
  int tp = 1;
  int cp = 1;
  bool sequence_parallel = false;
  int64_t microbatch = 1;
  Recompute recompute = Recompute::none;
  int recompute_layers = 0;  ///< full recompute of the first N layers of each chunk; 0: all
  int activation_bytes = 2;  ///< per element of activations and weights (the workload precision)
  /// Whether the layers' linear GEMMs run quantized, each input and output gradient cast by a
  /// kernel of its own: in FP8 (`workload.fp8_gemms`) or NVFP4 (`workload.fp4_gemms`, whose
  /// casts, gathers and copies are FP8 current scaling's at `quantized_bytes` an element).
  bool fp8 = false;
  /// Bytes an element of a quantized copy: 1 (FP8), 0.5625 (NVFP4: a 16-value block's E4M3 scale).
  double quantized_bytes = 1;
  /// How the FP8 casts are scaled (`workload.fp8_scaling`, else the framework's).
  Fp8Scaling fp8_scaling = Fp8Scaling::delayed;
  /// torchao's rowwise scaling: each GEMM casts its operands from their bf16 copies along its
  /// own axis (six casts a linear layer), and tensor-parallel gathers move bf16.
  bool fp8_rowwise() const { return fp8 && fp8_scaling == Fp8Scaling::rowwise; }
  /// Per-tensor scales from the current tensor (torchao's tensorwise): each cast reads its
  /// tensor once more for the amax first, so the norms cannot write FP8.
  bool fp8_amax() const { return fp8 && fp8_scaling == Fp8Scaling::tensorwise; }
  /// Element-wise ops as PyTorch eager runs them, one kernel per op of the model's code: in the
  /// layers without torch.compile (torchtitan's `training.compile` false), and in the final norm
  /// and loss of every torchtitan job (it compiles only the transformer blocks).
  bool eager_layers = false;
  bool eager_head = false;
  /// The loss as one fused kernel a pass (`parallelism.cross_entropy_fusion`); else Megatron's
  /// `vocab_parallel_cross_entropy`, a kernel per tensor op (ignored with `eager_head`).
  bool cross_entropy_fusion = false;
  /// One GEMM for the projections that read one input, as Megatron fuses them; false: a linear
  /// layer each, as torchtitan's Llama writes them (`wq`, `wk`, `wv`; `w1`, `w3`).
  bool fused_projections = true;
  /// A column layer's input-gradient reduction runs while its wgrad GEMM does
  /// (`parallelism.overlap_dgrad_reduce`).
  bool overlap_dgrad_reduce = false;
  /// Megatron's apply_query_key_layer_scaling (Megatron-DeepSpeed's default; off in
  /// Megatron-Core): unfused attention without the softmax kernel scales the fp32 scores in a
  /// kernel of its own.
  bool query_key_layer_scaling = false;
  /// Bytes moved per weight element to add a weight gradient into the one the rank keeps over a
  /// step's microbatches: 0 when the wgrad GEMM accumulates itself (fused) or gradients are
  /// reduced every microbatch; else as `parallelism.gradient_accumulation` does it.
  double gradient_accumulation_bytes = 0;
  /// Blocking host-device synchronisations before the MLP of every forward run of a layer
  /// (`host.layer_syncs`).
  int syncs_before_mlp = 0;
  /// The library of the fused attention kernels (`workload.attention_backend`, else the
  /// framework's).
  AttentionBackend attention_backend = AttentionBackend::cudnn;
  /// Whether a pipeline stage sends 1/tp of its activation and the receiver all-gathers it.
  PipelineTransfer pipeline_transfer = PipelineTransfer::full;
  /// LoRA (`workload.lora`): no linear layer computes a weight gradient (the model's weights are
  /// frozen); adapters beside the modules it names.
  std::optional<LoraSpec> lora;
  /// Whether a column layer's adapter all-gathers its sequence-parallel input itself: when
  /// Transformer Engine overlaps the layer's own gather (`tp_comm_overlap`), it cannot return
  /// the gathered norm output, so Megatron-Bridge gathers it again
  /// (`get_adapter_attributes_from_linear`).
  bool lora_gathers_input = false;

  /// Tokens of one microbatch on this rank (its context-parallel share of the sequence).
  double tokens() const {
    return static_cast<double>(microbatch) * static_cast<double>(model.sequence) / cp;
  }
  /// Tokens of element-wise work (divided among TP ranks with sequence parallelism).
  double elementwise_tokens() const { return sequence_parallel ? tokens() / tp : tokens(); }
  /// The b x s x h activation of the microbatch on this rank (its context-parallel share).
  double activation_bytes_per_microbatch() const {
    return tokens() * static_cast<double>(model.hidden) * activation_bytes;
  }
  /// Whether the receiving stage all-gathers the activation over its tensor-parallel group.
  bool pipeline_gathers() const {
    return tp > 1 && !sequence_parallel && pipeline_transfer == PipelineTransfer::scatter_gather;
  }
  /// Bytes one rank sends to the next pipeline stage per microbatch: the b x s x h activation,
  /// or its 1/tp share with sequence parallelism or a scatter-gather transfer.
  double pipeline_transfer_bytes() const {
    return activation_bytes_per_microbatch() / (sequence_parallel || pipeline_gathers() ? tp : 1);
  }
  /// The vocabulary padded to a multiple of 128 x tp, as Megatron pads it.
  double padded_vocab() const;
};

/// Whether unfused attention's scale-mask-softmax runs as Megatron's fused kernel, which needs
/// the microbatch x local heads to be a multiple of 4 and 16 < sequence <= 16384
/// (`FusedScaleMaskSoftmax.is_kernel_available`); otherwise PyTorch's softmax runs, in fp32.
bool fused_softmax(const LayerContext& c);

/// Where the GEMM that hides a layer collective sits, relative to it: +1 the next item (with
/// tp_comm_overlap, an all-gather behind the GEMM that consumes it), -1 the previous one (with
/// tp_comm_overlap, the reduce-scatter or all-reduce of the GEMM that produced it; a column
/// layer's input-gradient reduction behind its wgrad, `hidden_by_previous_gemm`), 0 none. The
/// collective then costs what that GEMM does not hide.
int hiding_gemm_offset(CollectiveOp op, bool tp_comm_overlap, bool hidden_by_previous_gemm);

/// Forward of one transformer layer.
std::vector<PassItem> layer_forward(const LayerContext& c);
/// Backward of one layer, preceded by the recomputation the context asks for.
std::vector<PassItem> layer_backward(const LayerContext& c);
/// The token embedding (first virtual stage) and the output head with the loss (last one).
std::vector<PassItem> embedding_forward(const LayerContext& c);
std::vector<PassItem> embedding_backward(const LayerContext& c);
std::vector<PassItem> head_forward(const LayerContext& c);
std::vector<PassItem> head_backward(const LayerContext& c);
/// Adam over `parameters` in mixed precision, memory-bound: read the fp32 master weight, the
/// gradient (`gradient_bytes` per element) and the two fp32 moments, write the weight and the
/// moments back (16 + 12 bytes; with 4-byte gradients), read the gradient once more for its norm,
/// copy the master weight into the model's (`model_bytes` per element).
KernelWork optimizer_step(double parameters, double gradient_bytes, double model_bytes);
/// Zeroing the gradient buffer of `parameters` before the next step.
KernelWork zero_gradients(double parameters, double gradient_bytes);
/// PyTorch FSDP2's copies between its communication buffers and the parameters, on the compute
/// stream: after an all-gather, every gathered parameter read from the buffer and written to its
/// own tensor (`split_with_sizes_copy`); before a reduce-scatter, every unsharded gradient read in
/// the model's precision and written into the buffer in the reduction's (`chunk_cat`).
KernelWork fsdp_gather_copy_out(double gathered_bytes);
KernelWork fsdp_reduce_copy_in(double parameters, double model_bytes, double gradient_bytes);

/// torchao's precompute_float8_dynamic_scale_for_fsdp: the amax of every FP8 linear layer's
/// sharded fp32 weight (`fp32_weights` of them on the rank), read once after the optimizer step.
KernelWork float8_weight_amax(double fp32_weights);
/// Linear layers (modules, each a GEMM of its own in the forward) of one transformer layer.
int linear_layers_per_layer(const LayerContext& c);

/// Parameters of one layer (whole, before tensor parallelism): attention and MLP weights and the
/// two norms; biases are left out (under 0.1%).
double layer_parameters(const TransformerSpec& model);
/// Of those, the weights of its linear layers (all but the two norms).
double layer_linear_parameters(const TransformerSpec& model);
/// Parameters of one layer's LoRA adapters on one rank: rank x (in + out) per adapted module,
/// split over the tensor-parallel ranks.
double adapter_parameters(const LayerContext& c);
/// Parameters of the embedding table, and of an untied output head (as in Llama).
double embedding_parameters(const LayerContext& c);
/// Every parameter of the model: one table if tied (GPT), two if not.
double model_parameters(const LayerContext& c);
/// Flops of one training pass of one sequence through the whole model (forward + backward,
/// without recomputation), the usual 6 N s + attention count: for tests and MFU.
double model_flops_per_sequence(const TransformerSpec& model);

}  // namespace prismsim
