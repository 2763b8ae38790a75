#include "config/framework_loader.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "config/limits.hpp"
#include "core/units.hpp"

namespace prismsim {
namespace {

/// The host's time per step: up to an hour.
constexpr ValueRange kHostStep{0, 3600, "0s", "1h"};

/// Reports `key` as a setting `framework` does not have, when it was written.
void refuse(MapReader& p, std::string_view key, const std::string& why) {
  if (const ConfigNode* node = p.get(key, false)) p.diags().error(node->loc, why);
}

/// Whether `framework` offers `value` for `key`; if not, reports it with the values it offers.
template <class Mode>
bool offered(MapReader& p, std::string_view key, const std::string& framework, Mode value,
             const std::vector<Mode>& modes) {
  if (std::find(modes.begin(), modes.end(), value) != modes.end()) return true;
  std::vector<std::string> names;
  for (Mode mode : modes) names.emplace_back(to_string(mode));
  refuse(p, key,
         fmt::format("{} has no {} '{}'; it has {}", framework, key, to_string(value),
                     alternatives(names)));
  return false;
}

}  // namespace

void read_framework_mechanics(MapReader& p, Scenario& s) {
  ParallelismSpec& par = s.parallelism;
  const FrameworkPreset& f = framework_preset(par.framework);
  const std::string framework = fmt::format("framework '{}'", f.name);
  const bool fsdp = par.data_parallel == DataParallelKind::fsdp;

  offered(p, "data_parallel", framework, par.data_parallel, f.data_parallel_modes);

  par.pipeline_transfer = f.pipeline_transfers.front();
  assign(par.pipeline_transfer, p.choice("pipeline_transfer", false, {"full", "scatter_gather"}));
  if (std::find(f.pipeline_transfers.begin(), f.pipeline_transfers.end(), par.pipeline_transfer) ==
      f.pipeline_transfers.end()) {
    refuse(p, "pipeline_transfer",
           fmt::format("{} sends whole activations between pipeline stages (full); "
                       "'scatter_gather' is Megatron-DeepSpeed's (framework: megatron-deepspeed)",
                       framework));
  }

  // The interleaved schedule's sends are asynchronous in every framework: prismsim's blocking
  // send, waited for with the receive right after it, deadlocks there (two neighbouring stages
  // each wait for the other to take its send), where Megatron without overlap_p2p_comm and
  // PyTorch's pipelining post each exchange's sends and receives as one batch (docs/frameworks.md).
  const bool interleaved = par.schedule == PipelineSchedule::interleaved;
  par.blocking_pipeline_sends = !interleaved && f.blocking_pipeline_sends;
  if (auto sends = p.choice("pipeline_sends", false, {"async", "blocking"})) {
    par.blocking_pipeline_sends = *sends == 1;
    if (par.blocking_pipeline_sends && interleaved) {
      refuse(p, "pipeline_sends",
             "the interleaved schedule's sends are async: blocking sends, which prismsim waits "
             "for with the next receive only, would deadlock it (batched exchanges are not "
             "modelled)");
    }
  }

  par.pipeline_receives_ahead = interleaved && f.interleaved_receives_ahead;
  if (auto receives = p.choice("pipeline_receives", false, {"on_use", "ahead"})) {
    par.pipeline_receives_ahead = *receives == 1;
    if (par.pipeline_receives_ahead && !interleaved) {
      refuse(p, "pipeline_receives",
             "receives posted ahead are the interleaved schedule's (Megatron's "
             "overlap_p2p_comm); 1F1B and GPipe receive on reaching the pass");
    }
  }

  par.overlap_param_gather = f.overlap_param_gather;
  assign(par.overlap_param_gather, p.boolean("overlap_param_gather", false));
  if (par.data_parallel != DataParallelKind::zero1) {
    refuse(p, "overlap_param_gather",
           fmt::format("'{}' applies to data_parallel zero1 (the distributed optimizer), not {}",
                       p.path_of("overlap_param_gather"), to_string(par.data_parallel)));
  }

  par.reshard_after_forward =
      s.parallelism.pp > 1 ? f.reshard_after_forward_with_pp : f.reshard_after_forward;
  // A key of FSDP's given without it: refused. True when FSDP runs.
  auto fsdp_key = [&](std::string_view key) {
    if (!fsdp) refuse(p, key, fmt::format("'{}' applies to data_parallel fsdp", p.path_of(key)));
    return fsdp;
  };
  assign(par.reshard_after_forward, p.boolean("reshard_after_forward", false));
  if (fsdp_key("reshard_after_forward") && !f.chooses_reshard_after_forward) {
    refuse(p, "reshard_after_forward",
           fmt::format("{} always frees gathered parameters after the forward pass; "
                       "reshard_after_forward is FSDP2's (framework: torchtitan)",
                       framework));
  }

  assign(par.fsdp_replicas, p.integer("fsdp_replicas", false, 1, 1 << 20));
  if (fsdp_key("fsdp_replicas")) {
    if (!f.has_hsdp) {
      refuse(p, "fsdp_replicas",
             fmt::format("{} has no hybrid sharding (HSDP); fsdp_replicas is torchtitan's "
                         "data_parallel_replicate_degree (framework: torchtitan)",
                         framework));
    } else if (par.dp % par.fsdp_replicas != 0) {
      refuse(p, "fsdp_replicas",
             fmt::format("'{}' {} does not divide dp {}", p.path_of("fsdp_replicas"),
                         par.fsdp_replicas, par.dp));
    }
  }

  assign(par.fsdp_float8_all_gather, p.boolean("fsdp_float8_all_gather", false));
  if (fsdp_key("fsdp_float8_all_gather")) {
    const bool fp8_gather = par.fsdp_float8_all_gather;
    if (!f.has_fsdp_float8_all_gather) {
      refuse(p, "fsdp_float8_all_gather",
             fmt::format("{} gathers parameters in their precision; fsdp_float8_all_gather is "
                         "torchao's float8 with FSDP2 (framework: torchtitan)",
                         framework));
    } else if (fp8_gather && !s.workload.fp8_gemms) {
      refuse(p, "fsdp_float8_all_gather",
             "FP8 all-gathers gather the weights of FP8 linear layers: they need "
             "'workload.fp8_gemms: true'");
    } else if (fp8_gather &&
               s.workload.fp8_scaling.value_or(f.fp8_scaling) != Fp8Scaling::tensorwise) {
      refuse(p, "fsdp_float8_all_gather",
             "torchao gathers FP8 weights with one scale per tensor only: "
             "fsdp_float8_all_gather needs fp8_scaling tensorwise, not rowwise");
    }
  }

  const Precision precision = s.workload.precision;
  par.gradient_reduce_precision =
      f.reduce_16bit_in_fp32 && precision == Precision::bf16 ? Precision::fp32 : precision;
  assign(par.gradient_reduce_precision,
         p.choice("gradient_reduce_precision", false, {"fp32", "tf32", "bf16", "fp16", "fp8"}));

  par.reduce_every_microbatch =
      (fsdp || par.data_parallel == DataParallelKind::zero2) && f.fsdp_reduce_every_microbatch;
  if (auto sync = p.choice("gradient_sync", false, {"last_microbatch", "every_microbatch"})) {
    par.reduce_every_microbatch = *sync == 1;
  }
  if (par.data_parallel == DataParallelKind::zero2 && !par.reduce_every_microbatch) {
    refuse(p, "gradient_sync",
           "data_parallel zero2 keeps only its shard of the gradients: it reduces every "
           "microbatch");
  }

  par.buckets_on_every_stage = f.buckets_on_every_stage;
  if (auto buckets = p.choice("gradient_buckets", false, {"every_stage", "first_stage"})) {
    par.buckets_on_every_stage = *buckets == 0;
  }

  assign(par.tp_comm_overlap, p.boolean("tp_comm_overlap", false));
  if (par.tp_comm_overlap && !f.has_tp_comm_overlap) {
    refuse(p, "tp_comm_overlap",
           fmt::format("{} does not overlap tensor-parallel collectives with GEMMs", framework));
  } else if (par.tp_comm_overlap && par.tp < 2) {
    refuse(p, "tp_comm_overlap", fmt::format("'{}' needs tp > 1", p.path_of("tp_comm_overlap")));
  }

  par.overlap_dgrad_reduce = f.overlaps_dgrad_reduce;
  assign(par.overlap_dgrad_reduce, p.boolean("overlap_dgrad_reduce", false));
  if (par.overlap_dgrad_reduce && !f.overlaps_dgrad_reduce) {
    refuse(p, "overlap_dgrad_reduce",
           fmt::format("{} reduces a layer's input gradient after its backward (DTensor's "
                       "redistribution); overlap_dgrad_reduce is Megatron's and Transformer "
                       "Engine's (framework: megatron-lm or megatron-deepspeed); async TP is "
                       "tp_comm_overlap",
                       framework));
  }

  assign(par.defer_embedding_wgrad, p.boolean("defer_embedding_wgrad", false));
  if (par.defer_embedding_wgrad && !f.has_defer_embedding_wgrad) {
    refuse(p, "defer_embedding_wgrad",
           fmt::format("{} does not defer the output layer's weight gradients; "
                       "defer_embedding_wgrad is Megatron-Core's defer_embedding_wgrad_compute "
                       "(framework: megatron-lm)",
                       framework));
  } else if (par.defer_embedding_wgrad && par.pp < 2) {
    refuse(p, "defer_embedding_wgrad",
           fmt::format("'{}' needs pp > 1: the weight gradients go into the pipeline flush "
                       "(Megatron-Core refuses it without pipeline parallelism)",
                       p.path_of("defer_embedding_wgrad")));
  }
  assign(par.wgrad_deferral_limit, p.integer("wgrad_deferral_limit", false, 0, 1 << 20));
  if (!par.defer_embedding_wgrad) {
    refuse(p, "wgrad_deferral_limit",
           fmt::format("'{}' applies with defer_embedding_wgrad: true",
                       p.path_of("wgrad_deferral_limit")));
  }

  par.gradient_accumulation = f.gradient_accumulations.front();
  assign(par.gradient_accumulation,
         p.choice("gradient_accumulation", false, gradient_accumulation_names()));
  if (offered(p, "gradient_accumulation", framework, par.gradient_accumulation,
              f.gradient_accumulations)) {
    if (par.defer_embedding_wgrad && par.gradient_accumulation != GradientAccumulation::fused) {
      refuse(p, "gradient_accumulation",
             "defer_embedding_wgrad needs gradient_accumulation fused (Megatron-Core refuses "
             "defer_embedding_wgrad_compute without gradient_accumulation_fusion)");
    } else if (par.reduce_every_microbatch) {
      refuse(p, "gradient_accumulation",
             fmt::format("'{}' applies where a rank keeps its gradients over the step's "
                         "microbatches; with gradient_sync every_microbatch ({}) they are "
                         "reduced after each one",
                         p.path_of("gradient_accumulation"), to_string(par.data_parallel)));
    }
  }

  if (par.recompute == Recompute::per_op && !f.has_per_op_recompute) {
    refuse(p, "recompute",
           fmt::format("{} has no per-op selective checkpointing; recompute per_op is "
                       "torchtitan's selective_ac_option op (framework: torchtitan); it has "
                       "none, selective or full",
                       framework));
  }
  par.fused_projections = f.fused_projections;
  assign(par.fused_projections, p.boolean("fused_projections", false));
  assign(par.cross_entropy_fusion, p.boolean("cross_entropy_fusion", false));
  if (par.cross_entropy_fusion && !f.has_cross_entropy_fusion) {
    refuse(p, "cross_entropy_fusion",
           fmt::format("{} has no fused loss ({}); cross_entropy_fusion is Megatron-Core's "
                       "cross_entropy_loss_fusion (framework: megatron-lm)",
                       framework,
                       f.eager_elementwise ? "PyTorch's cross_entropy on fp32 logits"
                                           : "vocab_parallel_cross_entropy on fp32 logits"));
  }
  assign(par.torch_compile, p.boolean("torch_compile", false));
  if (!f.eager_elementwise) {
    refuse(p, "torch_compile",
           fmt::format("{} runs fused element-wise kernels (Transformer Engine, Apex); "
                       "torch_compile is torchtitan's training.compile (framework: torchtitan)",
                       framework));
  }
}

void read_host(MapReader& r, Scenario& s) {
  s.host = framework_preset(s.parallelism.framework).host;
  const ConfigNode* node = r.map("host", false);
  if (node == nullptr) return;
  MapReader h(*node, "host", r.diags());
  assign(s.host.kernel_launch_s,
         h.quantity("kernel_launch", false, units::parse_duration, limits::kLatency));
  assign(s.host.collective_launch_s,
         h.quantity("collective_launch", false, units::parse_duration, limits::kLatency));
  assign(s.host.layer_launch_s,
         h.quantity("layer_launch", false, units::parse_duration, limits::kLatency));
  assign(s.host.step_s, h.quantity("step", false, units::parse_duration, kHostStep));
  assign(s.host.layer_syncs, h.integer("layer_syncs", false, 0, 64));
  h.finish();
}

}  // namespace prismsim
