#include "config/framework.hpp"

#include <cassert>

namespace prismsim {
namespace {

using DP = DataParallelKind;
using PD = ParallelDim;
using GA = GradientAccumulation;

FrameworkPreset megatron_lm() {
  FrameworkPreset f;
  f.framework = Framework::megatron_lm;
  f.name = "megatron-lm";
  f.order = {PD::tp, PD::cp, PD::dp, PD::pp};  // Megatron-Core's "tp-cp-ep-dp-pp"
  f.data_parallel_modes = {DP::ddp, DP::zero1, DP::fsdp};
  f.pipeline_transfers = {PipelineTransfer::full};
  // --gradient-accumulation-fusion (on unless --no-gradient-accumulation-fusion): the wgrad GEMM
  // accumulates into main_grad; without it DDP's backward hook adds .grad into main_grad.
  f.gradient_accumulations = {GA::fused, GA::main_grad};
  f.blocking_pipeline_sends = true;     // batched isend/irecv, waited for
  f.interleaved_receives_ahead = true;  // overlap_p2p_comm, on by default
  f.reduce_16bit_in_fp32 = true;        // accumulate_allreduce_grads_in_fp32 for bf16
  f.buckets_on_every_stage = false;     // bucketing only on pp rank 0, first chunk
  f.bucket_elements = 40e6;
  f.bucket_elements_per_rank = 1e6;
  f.has_tp_comm_overlap = true;    // Transformer Engine userbuffers
  f.overlaps_dgrad_reduce = true;  // async_tensor_model_parallel_allreduce; TE's column layers
  f.has_defer_embedding_wgrad = true;
  f.has_cross_entropy_fusion = true;              // --cross-entropy-loss-fusion, off by default
  f.attention_backend = AttentionBackend::cudnn;  // Transformer Engine's fused attention
  f.host = {8e-6, 8e-6, 0};
  return f;
}

FrameworkPreset megatron_deepspeed() {
  FrameworkPreset f;
  f.framework = Framework::megatron_deepspeed;
  f.name = "megatron-deepspeed";
  f.order = {PD::tp, PD::cp, PD::dp, PD::pp};  // DeepSpeed's axes [pipe, data, model]
  f.data_parallel_modes = {DP::ddp, DP::zero1, DP::zero2, DP::fsdp};
  f.pipeline_transfers = {PipelineTransfer::scatter_gather, PipelineTransfer::full};
  // The fused branch of LinearWithGradAccumulationAndAsyncCommunication.backward is commented
  // out (since c2ea914f): autograd adds each weight gradient into .grad, which DeepSpeed's
  // optimizers set to None after the step (zero_grad(set_to_none=True)).
  f.gradient_accumulations = {GA::autograd};
  f.blocking_pipeline_sends = true;  // DeepSpeed's pipeline engine: dist.send / dist.recv
  f.bucket_elements = 5e8;           // MEMORY_OPT_ALLREDUCE_SIZE, reduce_bucket_size
  f.overlaps_dgrad_reduce = true;    // Megatron's ColumnParallelLinear (async_grad_allreduce)
  f.query_key_layer_scaling = true;  // apply_query_key_layer_scaling, on unless turned off
  f.attention_backend = AttentionBackend::flash2;  // --use-flash-attn-v2: the flash_attn package
  // Fitted on vTrain's 1,440 single-node rows (prismsim-calibrate-compute, calibration/README.md).
  f.host = {68.11e-6, 2.426e-6, 0};
  // ParallelTransformerLayer.forward makes its `moe_loss` and `mlp_bias` placeholders with
  // torch.tensor(0.0, device=...) before the MLP: two blocking copies (docs/frameworks.md).
  f.host.layer_syncs = 2;
  return f;
}

FrameworkPreset torchtitan() {
  FrameworkPreset f;
  f.framework = Framework::torchtitan;
  f.name = "torchtitan";
  f.order = {PD::tp, PD::cp, PD::dp, PD::pp};  // mesh (pp, dp_replicate, dp_shard, cp, tp)
  f.data_parallel_modes = {DP::fsdp, DP::ddp};
  f.pipeline_transfers = {PipelineTransfer::full};
  f.gradient_accumulations = {GA::autograd};  // PyTorch's .grad; zero_grad sets it to None
  f.blocking_pipeline_sends = true;
  f.sequence_parallel = true;        // enable_sequence_parallel
  f.overlap_gradient_reduce = true;  // torch DDP reduces buckets during the backward pass
  f.reduce_16bit_in_fp32 = true;     // mixed_precision_reduce = float32
  f.bucket_elements = 25e6 / 2;      // torch DDP's 25 MiB buckets of bf16 gradients
  f.chooses_reshard_after_forward = true;
  f.reshard_after_forward = true;  // "default": not pp_enabled
  f.reshard_after_forward_with_pp = false;
  f.fsdp_buffer_copies = true;  // split_with_sizes_copy after each gather, chunk_cat before RS
  f.has_hsdp = true;
  f.has_fsdp_float8_all_gather = true;     // float8.enable_fsdp_float8_all_gather
  f.has_tp_comm_overlap = true;            // async TP
  f.eager_elementwise = true;              // training.compile = false
  f.fused_projections = false;             // models/llama3 Attention and FeedForward
  f.has_per_op_recompute = true;           // activation_checkpoint.selective_ac_option = "op"
  f.fp8_scaling = Fp8Scaling::tensorwise;  // torchao Float8Linear's default recipe
  f.has_rowwise_fp8 = true;                // torchao's rowwise recipe
  f.attention_backend = AttentionBackend::flash2;  // F.scaled_dot_product_attention's flash
  f.host = {8e-6, 8e-6, 0};
  return f;
}

}  // namespace

const std::vector<std::string>& framework_names() {
  static const std::vector<std::string> names = {"megatron-lm", "megatron-deepspeed", "torchtitan"};
  return names;
}

const FrameworkPreset& framework_preset(Framework framework) {
  static const FrameworkPreset presets[] = {megatron_lm(), megatron_deepspeed(), torchtitan()};
  const FrameworkPreset& preset = presets[static_cast<size_t>(framework)];
  assert(preset.framework == framework && "presets are in the order of the enum");
  return preset;
}

const char* to_string(Framework framework) {
  return framework_names()[static_cast<size_t>(framework)].c_str();
}

const char* to_string(DataParallelKind kind) {
  switch (kind) {
    case DP::ddp:
      return "ddp";
    case DP::zero1:
      return "zero1";
    case DP::zero2:
      return "zero2";
    case DP::fsdp:
      return "fsdp";
  }
  return "?";
}

const char* to_string(PipelineTransfer transfer) {
  return transfer == PipelineTransfer::full ? "full" : "scatter_gather";
}

const std::vector<std::string>& gradient_accumulation_names() {
  static const std::vector<std::string> names = {"fused", "main_grad", "autograd"};
  return names;
}

const char* to_string(GradientAccumulation accumulation) {
  return gradient_accumulation_names()[static_cast<size_t>(accumulation)].c_str();
}

}  // namespace prismsim
