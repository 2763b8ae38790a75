#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "collectives/nccl_tuner.hpp"
#include "config/training_spec.hpp"
#include "config/variability_spec.hpp"
#include "core/diagnostics.hpp"

namespace prismsim {

/// Numeric precision of a workload's math.
/// fp4 is NVFP4: 4-bit values with an E4M3 scale per 16 (Blackwell's block-scaled tensor cores).
enum class Precision { fp32, tf32, bf16, fp16, fp8, fp4 };

/// Name of a precision as written in YAML ("bf16").
const char* to_string(Precision precision);
/// Bytes per element of a precision (fp4: half a byte and its share of the block scale).
double bytes_per_element(Precision precision);

/// The library a fused attention kernel comes from (docs/frameworks.md, "The attention
/// kernel's library"): Transformer Engine's fused attention, which runs cuDNN's kernels, or
/// FlashAttention-2's, which PyTorch's scaled_dot_product_attention runs.
enum class AttentionBackend { cudnn, flash2 };

/// How fast a GPU runs the kernels of a transformer (fitted by calibration; see
/// workload/compute_model.hpp for the formula).
struct ComputeModelSpec {
  double gemm_efficiency = 0.8;  ///< fraction of peak a large GEMM reaches
  /// The same for given precisions (others use gemm_efficiency).
  std::map<Precision, double> gemm_efficiency_by_precision;
  double gemm_half_size = 64;         ///< GEMM dimension at which that dimension halves efficiency
  double gemm_latency_s = 0;          ///< fixed time of a GEMM on the GPU (setup, tails)
  double attention_efficiency = 0.5;  ///< fraction of peak of fused (flash) attention
  /// The same per attention backend (the platform gives every backend or none of them).
  std::map<AttentionBackend, double> attention_efficiency_by_backend;
  /// Fraction of its FP8 rate that a GEMM with split accumulation keeps: Transformer Engine and
  /// torchao run dgrad and wgrad without cuBLASLt's fast accumulation (Hopper then promotes the
  /// partial sums to FP32 registers every few K steps). 1: no cost.
  double fp8_split_accumulation = 1;
  double memory_efficiency = 0.8;   ///< fraction of HBM bandwidth of memory-bound kernels
  double kernel_overhead_s = 2e-6;  ///< the shortest time a kernel occupies the GPU

  /// gemm_efficiency for `precision`.
  double gemm_efficiency_for(Precision precision) const {
    return entry_or(gemm_efficiency_by_precision, precision, gemm_efficiency);
  }
  /// attention_efficiency for kernels of `backend`.
  double attention_efficiency_for(AttentionBackend backend) const {
    return entry_or(attention_efficiency_by_backend, backend, attention_efficiency);
  }
  /// The value of `key` in `by_key` if it has one, else `every` (writable through a mutable map).
  template <typename Map, typename Key, typename Value>
  static Value& entry_or(Map& by_key, const Key& key, Value& every) {
    auto it = by_key.find(key);
    return it == by_key.end() ? every : it->second;
  }
};

/// One GPU model.
struct GpuSpec {
  std::string model;
  std::map<Precision, double> peak_flops;  ///< dense peak per precision, flop/s
  double memory_bytes = 0;
  double memory_bandwidth_Bps = 0;
  double efficiency = 1.0;  ///< achieved fraction of peak for the layer-stack workload
  ComputeModelSpec compute;
};

/// A point-to-point resource: bandwidth per direction and one-way latency.
struct LinkSpec {
  double bandwidth_Bps = 0;
  double latency_s = 0;
  double efficiency = 1.0;  ///< achievable fraction of `bandwidth_Bps`

  double effective_bandwidth_Bps() const { return bandwidth_Bps * efficiency; }
};

/// How NICs attach to leaf switches: a node's NICs on one leaf (fat_tree) or NIC i of every node
/// on the leaves of rail i (rail_optimized; rails meet at the upper tiers).
enum class FabricKind { fat_tree, rail_optimized };

/// Scale-out fabric of one datacenter: a fat-tree of `levels` switch tiers of `radix` ports.
struct FabricSpec {
  FabricKind kind = FabricKind::fat_tree;
  int levels = 2;
  int radix = 64;
  /// Down:up port ratio of each tier below the top (levels - 1 values; 1 = full bisection).
  std::vector<double> oversubscription;
  double port_bandwidth_Bps = 0;  ///< speed of one switch port; defaults to the NIC speed
  double hop_latency_s = 0;       ///< latency added by each switch crossed

  /// Ports facing down on a switch of `tier` (1 = leaf; the top tier has all ports down).
  int64_t down_ports(int tier) const;
  /// NICs on one leaf for nodes of `gpus_per_node` NICs: whole nodes on a fat_tree (a node's
  /// NICs share its leaf; down ports left over stay unused) unless a node has more NICs than a
  /// leaf has down ports; every down port on a rail-optimised fabric (one NIC per node).
  int64_t leaf_nics(int gpus_per_node) const;
  /// NICs below one switch of `tier`; at the top tier, the most the fabric can hold.
  int64_t nics_below(int tier, int gpus_per_node) const;
  int64_t capacity(int gpus_per_node) const { return nics_below(levels, gpus_per_node); }
};

struct DatacenterSpec {
  std::string name;
  int nodes = 0;
};

/// One-way latency of fibre per km (light at ~2/3 c) and the default route inflation (fibre paths
/// are 1.2-1.5x the great-circle distance); used when a WAN link gives a distance.
constexpr double kFibreSecondsPerKm = 5e-6;
constexpr double kDefaultRouteInflation = 1.3;

/// A wide-area link between two datacenters (one link per direction).
struct WanLinkSpec {
  std::string from;
  std::string to;
  LinkSpec link;
  /// > 0: each GPU also reaches the other datacenter over its own path of this bandwidth per
  /// direction (out of its datacenter, and into the other), besides the shared link.
  double path_bandwidth_Bps = 0;
};

/// One NCCL protocol: achievable fraction of link bandwidth, a fixed latency per collective and a
/// latency per algorithm step.
struct ProtocolSpec {
  std::string name;
  double bandwidth_efficiency = 1.0;
  double base_latency_s = 0;
  double step_latency_s = 0;
  /// Forwards data as it arrives (NCCL's LL and LL128 lines): a ring's steps overlap, so a phase
  /// pays the protocol's rate (bandwidth_efficiency x link) for one step's chunk, and its links
  /// carry the bytes at full speed. Otherwise every step pays it: bytes / efficiency on the wire.
  bool streamed = false;
};

/// How collectives behave on this platform (NCCL-like tuning), fitted by calibration.
struct CollectiveTuning {
  int channels = 0;                    ///< rings per collective; 0 = GPUs per node
  int p2p_channels = 0;                ///< all-to-all exchanges at once; 0 = channels
  double launch_latency_s = 0;         ///< fixed cost of every collective
  double local_copy_efficiency = 1.0;  ///< one-GPU collectives copy at this fraction of HBM speed
  std::vector<ProtocolSpec> protocols = {{"simple", 1.0, 0.0, 0.0}};
  /// Fraction of NVLink's line rate an NVLS (NVLink SHARP) all-reduce moves data at through the
  /// switch; 0: node.nvlink.efficiency.
  double nvls_efficiency = 0;
  /// NCCL's NVLS tree across nodes among the automatic choices (with node.nvls). Off by default:
  /// no InfiniBand measurement validates it, and its coarse form's flows (a node's NVLS exchange
  /// beside each slot's trees) cost the engine far more than a ring's (docs/design.md).
  bool nvls_tree = false;
  /// NVLS's own kernel (NCCL runs it with Simple only): its fixed cost per call is base_latency.
  ProtocolSpec nvls = {"NVLS", 1.0, 0.0, 0.0};
  /// Who picks each call's algorithm and protocol: NCCL's built-in tuner (its estimates, from the
  /// nominal link bandwidths; protocols named LL, LL128, Simple) or the fastest by the cost model.
  TunerKind tuner = TunerKind::nccl;
  /// The channels NCCL's topology search gives ("N coll channels" under NCCL_DEBUG=INFO), as its
  /// tuner counts them; 0: `channels`. The simulated rings and trees (one per GPU of a node,
  /// covering every NIC) carry the same bytes over the same links whatever this count.
  int tuner_channels = 0;
  /// What the tuner decides: the algorithm only (the protocol is then the fastest by the cost
  /// model, whose fitted protocol latencies and rates put the crossovers where measurements do),
  /// or the algorithm and the protocol.
  bool tuner_picks_protocol = false;
};

/// What a platform's fitted parameters rest on: the data and command each part was fitted with,
/// or "uncalibrated" (assumed values).
struct PlatformCalibration {
  static constexpr const char* kUncalibrated = "uncalibrated";
  std::string compute = kUncalibrated;      ///< gpu.compute and gpu.efficiency
  std::string collectives = kUncalibrated;  ///< node link efficiencies and latencies, collectives

  bool compute_calibrated() const { return compute != kUncalibrated; }
  bool collectives_calibrated() const { return collectives != kUncalibrated; }
};

/// The hardware: GPUs, nodes, fabric, datacenters and the WAN between them.
struct PlatformSpec {
  std::string name;
  GpuSpec gpu;
  int gpus_per_node = 8;
  LinkSpec nvlink;       ///< per GPU, per direction, to the node's NVSwitch
  LinkSpec nic;          ///< one NIC per GPU, per direction
  bool nvls = false;     ///< the NVSwitch can reduce in the switch (NVLink SHARP)
  bool amd_cpu = false;  ///< node.cpu: amd (NCCL's tuner limits LL by the CPU vendor)
  FabricSpec fabric;
  std::vector<DatacenterSpec> datacenters;
  std::vector<WanLinkSpec> wan;
  CollectiveTuning collectives;
  PlatformCalibration calibration;

  int total_gpus() const;
  /// Rings a collective uses: collectives.channels, or one per GPU of a node when unset.
  int collective_channels() const {
    return collectives.channels > 0 ? collectives.channels : gpus_per_node;
  }
  /// Point-to-point exchanges of an all-to-all in flight at once: collectives.p2p_channels, or
  /// the rings' count when unset.
  int collective_p2p_channels() const {
    return collectives.p2p_channels > 0 ? collectives.p2p_channels : collective_channels();
  }
};

/// One stderr warning line per part of `platform` (compute, collectives: those asked for) whose
/// parameters are uncalibrated, so that a user knows what a prediction rests on.
std::vector<std::string> calibration_warnings(const PlatformSpec& platform, bool compute = true,
                                              bool collectives = true);

enum class MlpKind { gelu, swiglu };
/// unfused: attention as batched GEMMs plus a softmax in memory (Megatron without flash);
/// flash: one fused kernel.
enum class AttentionKernel { flash, unfused };

/// A dense decoder-only transformer.
struct TransformerSpec {
  int layers = 0;
  int64_t hidden = 0;
  int64_t ffn = 0;  ///< MLP inner size; default 4 x hidden
  MlpKind mlp = MlpKind::gelu;
  int64_t heads = 0;
  int64_t kv_heads = 0;  ///< default: heads (multi-head attention); fewer: grouped-query
  int64_t vocab = 0;
  int64_t sequence = 0;
  AttentionKernel attention = AttentionKernel::flash;
  bool causal = true;  ///< causal attention kernels skip the masked half
  /// The output head shares the embedding's weights (GPT): on one stage a single weight; with
  /// pipeline parallelism the first and last stages each hold it and all-reduce its gradient.
  bool tied_embeddings = false;

  int64_t head_dim() const { return hidden / heads; }
};

enum class WorkloadKind { layer_stack, transformer };

/// How FP8 GEMM operands are scaled (docs/frameworks.md): one scale per tensor from the amax of
/// earlier steps (Transformer Engine's DelayedScaling: no pass of its own), one per tensor from
/// the tensor itself (torchao's `tensorwise`: an amax read before each cast), or one per row,
/// each operand cast again for each GEMM along that GEMM's axis (torchao's `rowwise`).
enum class Fp8Scaling { delayed, tensorwise, rowwise };

/// The linear layers of a transformer layer, by Megatron's names: linear_qkv, linear_proj,
/// linear_fc1, linear_fc2.
enum class LinearModule { qkv, attention_output, mlp_up, mlp_down };

/// LoRA fine-tuning as Megatron-Bridge runs it (`peft: lora`, docs/frameworks.md): every weight of
/// the model frozen, a rank-`rank` adapter (A: in x rank, B: rank x out) beside each linear layer
/// in `modules`, the adapters the only weights trained.
struct LoraSpec {
  int rank = 32;                                        ///< Megatron-Bridge's `LoRA.dim`
  std::array<bool, 4> modules{true, true, true, true};  ///< by LinearModule; Bridge's default
  bool adapts(LinearModule m) const { return modules[static_cast<size_t>(m)]; }
};

/// What is trained: a layer stack (identical layers given by their cost) or a transformer.
struct WorkloadSpec {
  std::string name;
  WorkloadKind kind = WorkloadKind::layer_stack;
  int layers = 0;                                 ///< layer_stack
  double parameters_per_layer = 0;                ///< layer_stack
  double forward_flops_per_sample_per_layer = 0;  ///< layer_stack, flop
  TransformerSpec model;                          ///< transformer
  Precision precision = Precision::bf16;
  bool fp8_gemms = false;  ///< transformer: the layers' linear GEMMs in FP8, with their casts
  std::optional<Fp8Scaling> fp8_scaling;  ///< with fp8_gemms; unset: the framework's
  /// transformer with fused attention: its kernels' library; unset: the framework's
  std::optional<AttentionBackend> attention_backend;
  /// transformer: the layers' linear GEMMs in NVFP4 (Transformer Engine's NVFP4BlockScaling),
  /// with its casts (an amax pass each, as FP8's per-tensor current scaling)
  bool fp4_gemms = false;
  std::optional<LoraSpec> lora;  ///< transformer: LoRA fine-tuning; unset: every weight trained
  int64_t global_batch = 0;      ///< samples per training step, over all data-parallel replicas
  int64_t microbatch = 1;        ///< samples per forward/backward pass
};

/// How data-parallel replicas share gradients and state: plain DDP (gradient all-reduce), ZeRO-1
/// (Megatron's distributed optimizer: optimizer state sharded, gradient reduce-scatter, parameter
/// all-gather), ZeRO-2 (gradients sharded too: reduce-scattered every microbatch) or FSDP / ZeRO-3
/// (parameters sharded too: per-layer all-gather before use, gradient reduce-scatter after).
enum class DataParallelKind { ddp, zero1, zero2, fsdp };
/// The training framework whose mechanics a job follows (docs/frameworks.md): it sets the
/// defaults of the mechanics below and which of them a job may choose.
enum class Framework { megatron_lm, megatron_deepspeed, torchtitan };
/// What a pipeline stage sends per tensor-parallel rank: its whole activation, or 1/tp of it
/// that the receiver all-gathers over its tensor-parallel group (Megatron-DeepSpeed's
/// partitioned pipe and older Megatron-LM's scatter_gather_tensors_in_pipeline). With sequence
/// parallelism the activation is already 1/tp.
enum class PipelineTransfer { full, scatter_gather };
enum class PipelineSchedule { gpipe, one_f_one_b, interleaved };
/// Where a weight gradient goes while a step's microbatches accumulate it: fused: the wgrad GEMM
/// adds it into the fp32 main gradient itself (Megatron's gradient_accumulation_fusion);
/// main_grad: a backward hook adds each `.grad` into the main gradient, every microbatch
/// (Megatron without the fusion); autograd: PyTorch's autograd adds it into `.grad` from the
/// step's second microbatch on, `.grad` being set to None after the optimizer (DeepSpeed,
/// PyTorch DDP).
enum class GradientAccumulation { fused, main_grad, autograd };
/// none; selective: the attention core (Megatron's `--recompute-granularity selective`); full: the
/// whole layer; per_op: torchtitan's per-op selective checkpointing (`selective_ac_option: op`).
enum class Recompute { none, selective, full, per_op };
/// The parallel dimensions, as they can be ordered onto GPUs.
enum class ParallelDim { tp, cp, pp, dp };

struct ParallelismSpec {
  int gpus = 0;  ///< total GPUs used; the product of the degrees
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int cp = 1;
  bool sequence_parallel = false;
  DataParallelKind data_parallel = DataParallelKind::ddp;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int virtual_stages = 1;         ///< model chunks per pipeline rank (interleaved)
  std::vector<int> stage_layers;  ///< layers per (virtual) stage; empty: even split
  /// Compute time of one microbatch's forward and backward pass per (virtual) stage, s: the
  /// stage's compute kernels are scaled to sum to it (communication and host gaps keep their
  /// time). Empty: the kernel model's times.
  struct StageTime {
    double forward_s = 0;
    double backward_s = 0;
  };
  std::vector<StageTime> stage_times;
  Recompute recompute = Recompute::none;
  /// With full recompute: how many layers of each pipeline chunk are recomputed, the first ones
  /// (Megatron's `--recompute-method block --recompute-num-layers N`); 0: every layer.
  int recompute_layers = 0;
  /// Innermost first: consecutive ranks differ in order[0] (Megatron: tp, cp, pp, dp).
  std::vector<ParallelDim> order = {ParallelDim::tp, ParallelDim::cp, ParallelDim::pp,
                                    ParallelDim::dp};
  double gradient_bucket_bytes = 0;     ///< 0: the framework's default
  bool overlap_gradient_reduce = true;  ///< reduce buckets during the last backward pass

  // The mechanics a framework sets (config/framework.hpp gives each framework's defaults).
  Framework framework = Framework::megatron_lm;
  PipelineTransfer pipeline_transfer = PipelineTransfer::full;
  /// A stage's pipeline sends complete before it computes on (batched send/receive pairs,
  /// waited for, as Megatron and DeepSpeed's pipeline engine do); false: sends run on their own.
  bool blocking_pipeline_sends = false;
  /// A stage posts each pass's receive after its previous pass of the same direction, so that
  /// the transfer runs while it computes (Megatron's interleaved schedule with overlap_p2p_comm);
  /// false: on reaching the pass.
  bool pipeline_receives_ahead = false;
  /// ZeRO-1: the parameter all-gather of the next step overlaps its first forward pass, bucket
  /// by bucket (Megatron's overlap_param_gather); false: after the optimizer, exposed.
  bool overlap_param_gather = false;
  /// FSDP: parameters are freed after the forward pass and gathered again for the backward one.
  bool reshard_after_forward = true;
  /// FSDP: replicas of the sharded model (HSDP): parameters are sharded over dp / replicas ranks
  /// and gradients all-reduced across the replicas after their reduce-scatter.
  int fsdp_replicas = 1;
  /// FSDP (torchtitan): the weights of the FP8 linear layers all-gathered in FP8 (torchao's
  /// enable_fsdp_float8_all_gather), their scales from one amax over the shards a step.
  bool fsdp_float8_all_gather = false;
  /// Precision in which gradients are reduced (Megatron reduces bf16 gradients in fp32 by
  /// default; torchtitan too).
  Precision gradient_reduce_precision = Precision::bf16;
  /// Gradients are reduced after every microbatch's backward pass (FSDP2 in torchtitan, ZeRO-2
  /// and -3) rather than after the last one only.
  bool reduce_every_microbatch = false;
  /// Buckets of gradients on every pipeline stage (DeepSpeed); false: Megatron buckets only the
  /// first stage's first model chunk, the others reduce in one bucket.
  bool buckets_on_every_stage = true;
  /// Tensor-parallel collectives overlapped with the GEMMs next to them (Transformer Engine's
  /// userbuffers, torchtitan's async TP): a collective costs only what its GEMM does not hide.
  bool tp_comm_overlap = false;
  /// A column-parallel layer's input-gradient reduction (all-reduce, or reduce-scatter under
  /// sequence parallelism) issued right after its dgrad GEMM and waited for after its wgrad GEMM
  /// (Megatron's LinearWithGradAccumulationAndAsyncCommunication, Transformer Engine's "Overlap
  /// dgrad-RS/AR with wgrad"): it costs only what the wgrad GEMM does not hide.
  bool overlap_dgrad_reduce = false;
  /// The output layer's weight gradients of the first `wgrad_deferral_limit` backward passes
  /// (0: all) computed after the stage's last backward pass, in the pipeline flush (Megatron-Core's
  /// defer_embedding_wgrad_compute and wgrad_deferral_limit).
  bool defer_embedding_wgrad = false;
  int wgrad_deferral_limit = 0;
  /// torchtitan's `training.compile`: Inductor fuses each transformer block's element-wise ops
  /// (the final norm and the loss stay eager); false: one eager kernel per op.
  bool torch_compile = false;
  /// Each group of projections that read one input fused into one GEMM (Megatron's `linear_qkv`,
  /// `linear_fc1`); false: a linear layer each (torchtitan's `wq`, `wk`, `wv`; `w1`, `w3`).
  bool fused_projections = true;
  /// Megatron-Core's `cross_entropy_loss_fusion`: the loss's forward and backward one fused
  /// kernel each; false: a kernel per tensor op of `vocab_parallel_cross_entropy`.
  bool cross_entropy_fusion = false;
  /// How weight gradients accumulate over a step's microbatches, while the rank keeps them
  /// (not with `reduce_every_microbatch`).
  GradientAccumulation gradient_accumulation = GradientAccumulation::fused;

  int ranks() const { return dp * tp * pp * cp; }
};

/// The host (CPU) side of the training loop: what the framework's Python and launch code cost.
/// Fitted per framework; see docs/frameworks.md.
struct HostSpec {
  /// Host time to issue one modelled kernel: the GPU runs kernels as they are issued and idles
  /// when they are shorter than this (0: CUDA graphs).
  double kernel_launch_s = 0;
  /// Host time to issue one collective (NCCL's and the process group's host work; analytic
  /// tensor/context-parallel collectives take it in place of kernel_launch).
  double collective_launch_s = 0;
  /// Host time to run one unit's module code (a layer, the embedding or the output head) in a
  /// pass, before its first kernel: the framework's Python, hooks and autograd functions, beyond
  /// the launches. Twice in the backward of a fully recomputed layer.
  double layer_launch_s = 0;
  /// Host time per training step outside kernels (data loading, logging, bookkeeping).
  double step_s = 0;
  /// Blocking host-to-device copies in every forward run of a transformer layer, before its
  /// MLP: each costs one kernel_launch, then the host waits until the device has run all it
  /// was given (cudaStreamSynchronize), so the MLP's launches start from an idle device.
  int layer_syncs = 0;
};

struct SimulationSpec {
  int runs = 1;
  int steps = 1;
  uint64_t seed = 1;
  std::vector<double> deadlines_s;  ///< job-time deadlines whose miss probability is reported
  /// Deadlines as multiples of the deterministic job time (the scenario without variation).
  std::vector<double> relative_deadlines;
};

struct EngineSpec {
  CollectiveFidelity collective_fidelity = CollectiveFidelity::automatic;
  Algorithm collective_algorithm = Algorithm::automatic;
  int step_fidelity_max_ranks = 64;  ///< largest group simulated step by step in automatic mode
  /// automatic: calls of more transfers (steps x lanes x members) run coarse; a training step
  /// makes thousands of calls (prismsim collective, one call at a time, sets no limit)
  int64_t step_fidelity_max_transfers = 256;
  /// Tensor- and context-parallel collectives: simulated in the network, or charged analytically
  /// (cost model, no contention, group in lockstep) inside the fused compute.
  enum class LayerComm { automatic, network, analytic } layer_collectives = LayerComm::automatic;
  /// automatic: in the network while all ranks together make at most this many such calls a step
  int64_t network_layer_collectives_max_calls = 4096;
  bool check_memory = true;  ///< refuse transformer configurations that do not fit the GPU
  /// Simulate only the first rank of each tensor-parallel group when the others must run exactly
  /// like it (analytic TP collectives, a fabric that never saturates; see docs/design.md).
  bool tensor_parallel_symmetry = true;
};

/// A fully validated scenario: everything a run needs, read once from YAML.
struct Scenario {
  std::string name;
  std::string source;                  ///< path of the scenario file
  std::vector<std::string> overrides;  ///< the --set values applied to it, in order
  std::vector<InputFile> inputs;       ///< every file it was read from, in reading order
  SourceLoc parallelism_loc;           ///< for checks made after loading (memory)
  PlatformSpec platform;
  WorkloadSpec workload;
  ParallelismSpec parallelism;
  SimulationSpec simulation;
  EngineSpec engine;
  HostSpec host;
  VariabilitySpec variability;
  TrainLengthSpec train;      ///< simulation.train: the whole run's length (docs/training.md)
  ResilienceSpec resilience;  ///< failures, recovery, checkpointing of the whole run
};

}  // namespace prismsim
