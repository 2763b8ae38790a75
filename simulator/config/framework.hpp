#pragma once

#include <string>
#include <vector>

#include "config/scenario.hpp"

namespace prismsim {

/// What a training framework does unless told otherwise, and what it lets a job choose. The
/// sources each default follows are cited in docs/frameworks.md.
struct FrameworkPreset {
  Framework framework = Framework::megatron_lm;
  const char* name = "";
  /// Rank placement, innermost first (every framework puts data parallelism inside pipeline).
  std::vector<ParallelDim> order;
  std::vector<DataParallelKind> data_parallel_modes;         ///< the first is the default
  std::vector<PipelineTransfer> pipeline_transfers;          ///< the first is the default
  std::vector<GradientAccumulation> gradient_accumulations;  ///< the first is the default
  bool blocking_pipeline_sends = true;                       ///< 1F1B and GPipe
  /// Interleaved: each pass's receive posted after the rank's previous pass of its direction
  /// (Megatron's overlap_p2p_comm), not on reaching the pass.
  bool interleaved_receives_ahead = false;
  bool sequence_parallel = false;  ///< default when tp > 1
  bool overlap_gradient_reduce = false;
  bool overlap_param_gather = false;
  /// Gradients of a 16-bit model reduced in fp32 (else in the workload precision).
  bool reduce_16bit_in_fp32 = false;
  bool buckets_on_every_stage = true;
  /// Default bucket in elements: max(bucket_elements, bucket_elements_per_rank x dp).
  double bucket_elements = 0;
  double bucket_elements_per_rank = 0;
  bool fsdp_reduce_every_microbatch = true;
  /// FSDP copies parameters out of the all-gather buffer and gradients into the reduce-scatter
  /// buffer on the compute stream (PyTorch FSDP2's per-parameter sharding); false: parameters and
  /// gradients are views of the communication buffers (Megatron-FSDP, ZeRO-3's flat partitions).
  bool fsdp_buffer_copies = false;
  bool chooses_reshard_after_forward = false;  ///< FSDP2's reshard_after_forward is a choice
  bool reshard_after_forward = true;           ///< default without pipeline parallelism
  bool reshard_after_forward_with_pp = true;   ///< default with it
  bool has_hsdp = false;
  /// FSDP all-gathers FP8 linear layers' weights in FP8 (torchao's float8 with FSDP2).
  bool has_fsdp_float8_all_gather = false;
  bool has_tp_comm_overlap = false;
  /// Column layers reduce their input gradient while computing their weight gradient
  /// (`overlap_dgrad_reduce`); a framework without it cannot be told to.
  bool overlaps_dgrad_reduce = false;
  /// Megatron's apply_query_key_layer_scaling: the unfused softmax path scales the fp32 scores
  /// in a kernel of its own (`--no-query-key-layer-scaling` turns it off).
  bool query_key_layer_scaling = false;
  bool has_defer_embedding_wgrad = false;  ///< Megatron-Core's defer_embedding_wgrad_compute
  /// Element-wise ops run as PyTorch eager's kernels, one per op (torchtitan), unless
  /// `torch_compile` fuses those of the transformer blocks; else as fused kernels (Transformer
  /// Engine's, Apex's, Megatron's).
  bool eager_elementwise = false;
  /// One GEMM for the projections that read one input (Megatron's `linear_qkv`, `linear_fc1`);
  /// false: a linear layer each (torchtitan's `wq`, `wk`, `wv` and `w1`, `w3`).
  bool fused_projections = true;
  /// Whether a job can choose Megatron-Core's fused loss (`cross_entropy_loss_fusion`, off by
  /// default in every framework that has it).
  bool has_cross_entropy_fusion = false;
  /// Per-op selective activation checkpointing (`recompute: per_op`, torchtitan's).
  bool has_per_op_recompute = false;
  /// FP8 scaling unless `workload.fp8_scaling` says otherwise; whether `rowwise` (torchao's) is
  /// one of its choices.
  Fp8Scaling fp8_scaling = Fp8Scaling::delayed;
  bool has_rowwise_fp8 = false;
  /// The library of the fused attention kernel unless `workload.attention_backend` says otherwise.
  AttentionBackend attention_backend = AttentionBackend::cudnn;
  HostSpec host;  ///< fitted host costs (docs/frameworks.md)
};

/// The names of the frameworks, in the order of the enum.
const std::vector<std::string>& framework_names();
const FrameworkPreset& framework_preset(Framework framework);
const char* to_string(Framework framework);
const char* to_string(DataParallelKind kind);
const char* to_string(PipelineTransfer transfer);
/// The names of the gradient accumulation modes, in the order of the enum.
const std::vector<std::string>& gradient_accumulation_names();
const char* to_string(GradientAccumulation accumulation);

}  // namespace prismsim
