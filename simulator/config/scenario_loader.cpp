#include "config/scenario_loader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <utility>

#include "config/config_tree.hpp"
#include "config/framework_loader.hpp"
#include "config/map_reader.hpp"
#include "config/training_loader.hpp"
#include "config/variability_loader.hpp"
#include "core/units.hpp"

namespace prismsim {
namespace {

/// The largest platform prismsim accepts (memory grows linearly with GPUs).
constexpr int kMaxGpus = 1 << 22;
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
/// The most kernels one rank may run per step (programs are held in memory).
constexpr int64_t kMaxOpsPerStep = 10'000'000;
/// The most pipeline passes all ranks of a transformer job may run per step (a few ops each).
constexpr double kMaxPassesPerStep = 1e8;
/// Parallelism keys that only transformer workloads read.
const std::vector<std::string> kTransformerOnlyKeys = {"sequence_parallel",
                                                       "data_parallel",
                                                       "schedule",
                                                       "virtual_stages",
                                                       "stage_layers",
                                                       "stage_times",
                                                       "recompute",
                                                       "recompute_layers",
                                                       "order",
                                                       "gradient_bucket",
                                                       "overlap_gradient_reduce",
                                                       "framework",
                                                       "pipeline_transfer",
                                                       "pipeline_sends",
                                                       "pipeline_receives",
                                                       "overlap_param_gather",
                                                       "reshard_after_forward",
                                                       "fsdp_replicas",
                                                       "fsdp_float8_all_gather",
                                                       "gradient_reduce_precision",
                                                       "gradient_sync",
                                                       "gradient_buckets",
                                                       "tp_comm_overlap",
                                                       "overlap_dgrad_reduce",
                                                       "defer_embedding_wgrad",
                                                       "wgrad_deferral_limit",
                                                       "torch_compile",
                                                       "fused_projections",
                                                       "cross_entropy_fusion",
                                                       "gradient_accumulation"};

const std::vector<std::string> kPrecisionNames = {"fp32", "tf32", "bf16", "fp16", "fp8", "fp4"};
/// In the order of AttentionBackend.
const std::vector<std::string> kAttentionBackendNames = {"cudnn", "flash2"};
/// What a workload's math may run in: every precision but fp4, which only GEMMs use.
const std::vector<std::string> kWorkloadPrecisionNames(kPrecisionNames.begin(),
                                                       kPrecisionNames.end() - 1);

/// An achievable fraction of a peak, in [0.001, 1].
std::optional<double> read_fraction(MapReader& r, std::string_view key) {
  return r.number(key, false, limits::kFraction);
}

/// Reads bandwidth, latency and efficiency from `r`; `latency` may be replaced by a distance.
LinkSpec read_link_fields(MapReader& r, bool allow_distance) {
  LinkSpec link;
  assign(link.bandwidth_Bps,
         r.quantity("bandwidth", true, units::parse_bandwidth, limits::kBandwidth));
  assign(link.efficiency, read_fraction(r, "efficiency"));
  if (!allow_distance) {
    assign(link.latency_s, r.quantity("latency", true, units::parse_duration, limits::kLatency));
    return link;
  }
  const bool has_distance = r.get("distance", false) != nullptr;
  const bool has_latency = r.get("latency", false) != nullptr;
  if (has_distance == has_latency) {
    r.diags().error(r.loc(), fmt::format("'{}' needs one of 'latency' and 'distance'", r.path()));
  }
  if (has_latency) {
    assign(link.latency_s, r.quantity("latency", true, units::parse_duration, limits::kLatency));
  }
  if (has_distance) {
    auto km = r.quantity("distance", true, units::parse_distance_km, limits::kDistance);
    double inflation = kDefaultRouteInflation;
    if (auto given = r.number("route_inflation", false, limits::kRouteInflation)) {
      inflation = *given;
    }
    if (km) link.latency_s = *km * kFibreSecondsPerKm * inflation;
  } else if (r.get("route_inflation", false) != nullptr) {
    r.diags().error(r.get("route_inflation", false)->loc,
                    fmt::format("'{}' applies only with 'distance'", r.path_of("route_inflation")));
  }
  return link;
}

LinkSpec read_link(MapReader& parent, std::string_view key) {
  const ConfigNode* node = parent.map(key, true);
  if (node == nullptr) return {};
  MapReader r(*node, parent.path_of(key), parent.diags());
  LinkSpec link = read_link_fields(r, false);
  r.finish();
  return link;
}

CollectiveTuning read_collectives(MapReader& parent) {
  CollectiveTuning tuning;
  const ConfigNode* node = parent.map("collectives", false);
  if (node == nullptr) return tuning;
  MapReader r(*node, parent.path_of("collectives"), parent.diags());
  assign(tuning.channels, r.integer("channels", false, 1, 64));
  assign(tuning.p2p_channels, r.integer("p2p_channels", false, 1, 64));
  assign(tuning.launch_latency_s,
         r.quantity("launch_latency", false, units::parse_duration, limits::kLatency));
  assign(tuning.local_copy_efficiency, read_fraction(r, "local_copy_efficiency"));
  if (const ConfigNode* list = r.list("protocols", false)) {
    tuning.protocols.clear();
    if (list->items.empty())
      r.diags().error(list->loc, fmt::format("'{}' is empty", r.path_of("protocols")));
    for (size_t i = 0; i < list->items.size(); ++i) {
      MapReader p(list->items[i], fmt::format("{}.{}", r.path_of("protocols"), i), r.diags());
      ProtocolSpec protocol;
      assign(protocol.name, p.string("name", true));
      assign(protocol.bandwidth_efficiency, read_fraction(p, "bandwidth_efficiency"));
      assign(protocol.base_latency_s,
             p.quantity("base_latency", false, units::parse_duration, limits::kLatency));
      assign(protocol.step_latency_s,
             p.quantity("step_latency", false, units::parse_duration, limits::kLatency));
      assign(protocol.streamed, p.boolean("streamed", false));
      p.finish();
      tuning.protocols.push_back(protocol);
    }
  }
  assign(tuning.tuner_channels, r.integer("tuner_channels", false, 1, 64));
  assign(tuning.nvls_tree, r.boolean("nvls_tree", false));
  if (auto tuner = r.choice("tuner", false, {"nccl", "nccl-2.8", "fastest"})) {
    tuning.tuner = *tuner == 0   ? TunerKind::nccl
                   : *tuner == 1 ? TunerKind::nccl_2_8
                                 : TunerKind::fastest;
  }
  if (auto picks = r.choice("tuner_picks", false, {"algorithm", "algorithm_and_protocol"})) {
    tuning.tuner_picks_protocol = *picks == 1;
  }
  if (const ConfigNode* nvls = r.map("nvls", false)) {
    MapReader n(*nvls, r.path_of("nvls"), r.diags());
    assign(tuning.nvls_efficiency, read_fraction(n, "efficiency"));
    assign(tuning.nvls.base_latency_s,
           n.quantity("latency", false, units::parse_duration, limits::kLatency));
    n.finish();
  }
  r.finish();
  return tuning;
}

/// What a platform's parameters were fitted on: `calibration: {compute: TEXT, collectives: TEXT}`,
/// each 'uncalibrated' when absent.
PlatformCalibration read_calibration(MapReader& parent) {
  PlatformCalibration calibration;
  const ConfigNode* node = parent.map("calibration", false);
  if (node == nullptr) return calibration;
  MapReader r(*node, parent.path_of("calibration"), parent.diags());
  for (auto [key, field] : {std::pair{"compute", &calibration.compute},
                            std::pair{"collectives", &calibration.collectives}}) {
    const auto text = r.string(key, false);
    if (!text) continue;
    if (text->find_first_not_of(" \t") == std::string::npos) {
      r.diags().error(r.get(key, false)->loc,
                      fmt::format("'{}' is empty: say what the parameters were fitted on, or "
                                  "'{}'",
                                  r.path_of(key), PlatformCalibration::kUncalibrated));
      continue;
    }
    *field = *text;
  }
  r.finish();
  return calibration;
}

/// `key` as one fraction (into `every`) or as a map of fractions by `names` (into `by_name`, keyed
/// by the enum whose order `names` follows); `each_required`: a map must give every name.
template <typename Key>
void read_fraction_or_map(MapReader& r, std::string_view key, const std::vector<std::string>& names,
                          bool each_required, double& every, std::map<Key, double>& by_name) {
  const ConfigNode* node = r.get(key, false);
  if (node == nullptr || !node->is_map()) {
    assign(every, read_fraction(r, key));
    return;
  }
  MapReader m(*node, r.path_of(key), r.diags());
  for (size_t i = 0; i < names.size(); ++i) {
    if (auto value = m.number(names[i], each_required, limits::kFraction)) {
      by_name[static_cast<Key>(i)] = *value;
    }
  }
  m.finish();
}

GpuSpec read_gpu(MapReader& parent) {
  GpuSpec gpu;
  const ConfigNode* node = parent.map("gpu", true);
  if (node == nullptr) return gpu;
  MapReader r(*node, parent.path_of("gpu"), parent.diags());
  assign(gpu.model, r.string("model", true));
  if (const ConfigNode* peaks = r.map("peak_flops", true)) {
    for (const auto& entry : peaks->entries) {
      const std::string path = r.path_of("peak_flops") + "." + entry.key;
      auto it = std::find(kPrecisionNames.begin(), kPrecisionNames.end(), entry.key);
      if (it == kPrecisionNames.end()) {
        const std::string near = closest_match(entry.key, kPrecisionNames);
        r.diags().error(
            entry.key_loc,
            fmt::format("unknown precision '{}' in '{}'{}", entry.key, r.path_of("peak_flops"),
                        near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
        continue;
      }
      if (auto rate = in_range(entry.value, path,
                               read_quantity(entry.value, path, units::parse_flop_rate, r.diags()),
                               limits::kFlopRate, r.diags())) {
        gpu.peak_flops[static_cast<Precision>(it - kPrecisionNames.begin())] = *rate;
      }
    }
    if (peaks->entries.empty()) r.diags().error(peaks->loc, "'platform.gpu.peak_flops' is empty");
  }
  assign(gpu.memory_bytes, r.quantity("memory", true, units::parse_bytes, limits::kGpuMemory));
  assign(gpu.memory_bandwidth_Bps,
         r.quantity("memory_bandwidth", true, units::parse_bandwidth, limits::kBandwidth));
  assign(gpu.efficiency, read_fraction(r, "efficiency"));
  if (const ConfigNode* compute = r.map("compute", false)) {
    MapReader c(*compute, r.path_of("compute"), r.diags());
    ComputeModelSpec& m = gpu.compute;
    // A fraction for every precision, or a map of them by precision.
    read_fraction_or_map(c, "gemm_efficiency", kPrecisionNames, false, m.gemm_efficiency,
                         m.gemm_efficiency_by_precision);
    assign(m.gemm_half_size, c.number("gemm_half_size", false, limits::kGemmHalfSize));
    assign(m.gemm_latency_s,
           c.quantity("gemm_latency", false, units::parse_duration, limits::kLatency));
    // A fraction for every attention backend, or a map giving each backend's.
    read_fraction_or_map(c, "attention_efficiency", kAttentionBackendNames, true,
                         m.attention_efficiency, m.attention_efficiency_by_backend);
    assign(m.fp8_split_accumulation, read_fraction(c, "fp8_split_accumulation"));
    assign(m.memory_efficiency, read_fraction(c, "memory_efficiency"));
    assign(m.kernel_overhead_s,
           c.quantity("kernel_overhead", false, units::parse_duration, limits::kLatency));
    c.finish();
  }
  r.finish();
  return gpu;
}

FabricSpec read_fabric(MapReader& parent, const LinkSpec& nic) {
  FabricSpec fabric;
  fabric.port_bandwidth_Bps = nic.bandwidth_Bps;
  const ConfigNode* node = parent.map("fabric", true);
  if (node == nullptr) return fabric;
  MapReader r(*node, parent.path_of("fabric"), parent.diags());
  assign(fabric.kind, r.choice("type", true, {"fat_tree", "rail_optimized"}));
  assign(fabric.levels, r.integer("levels", true, 1));
  if (fabric.levels > 3) {
    r.diags().error(r.get("levels", false)->loc, fmt::format("'{}' must be 1, 2 or 3, got {}",
                                                             r.path_of("levels"), fabric.levels));
    fabric.levels = 3;
  }
  assign(fabric.radix, r.integer("radix", true, 2, 65536));
  fabric.oversubscription.assign(static_cast<size_t>(fabric.levels - 1), 1.0);
  if (const ConfigNode* ratios = r.get("oversubscription", false)) {
    const std::string path = r.path_of("oversubscription");
    std::vector<const ConfigNode*> values;
    if (ratios->is_sequence()) {
      for (const auto& item : ratios->items) values.push_back(&item);
    } else {
      values.push_back(ratios);
    }
    if (values.size() != fabric.oversubscription.size()) {
      r.diags().error(ratios->loc,
                      fmt::format("'{}' needs {} value(s), one per switch tier below the top, "
                                  "got {}",
                                  path, fabric.oversubscription.size(), values.size()));
    } else {
      for (size_t i = 0; i < values.size(); ++i) {
        // (A down:up port ratio.)
        auto ratio = read_quantity(*values[i], path, units::parse_count, r.diags());
        if (auto kept = in_range(*values[i], path, ratio, limits::kOversubscription, r.diags())) {
          fabric.oversubscription[i] = *kept;
        }
      }
    }
  }
  assign(fabric.port_bandwidth_Bps,
         r.quantity("port_bandwidth", false, units::parse_bandwidth, limits::kBandwidth));
  assign(fabric.hop_latency_s,
         r.quantity("hop_latency", false, units::parse_duration, limits::kLatency));
  r.finish();
  return fabric;
}

PlatformSpec read_platform(const ConfigNode& node, Diagnostics& diags) {
  PlatformSpec platform;
  MapReader r(node, "platform", diags);
  assign(platform.name, r.string("name", true));
  platform.gpu = read_gpu(r);
  if (const ConfigNode* node_map = r.map("node", true)) {
    MapReader n(*node_map, "platform.node", diags);
    assign(platform.gpus_per_node, n.integer("gpus", true, 1, 1024));
    platform.nvlink = read_link(n, "nvlink");
    platform.nic = read_link(n, "nic");
    assign(platform.nvls, n.boolean("nvls", false));
    if (auto cpu = n.choice("cpu", false, {"intel", "amd"})) platform.amd_cpu = *cpu == 1;
    n.finish();
  }
  platform.fabric = read_fabric(r, platform.nic);

  std::set<std::string> names;
  if (const ConfigNode* dcs = r.list("datacenters", true)) {
    if (dcs->items.empty()) diags.error(dcs->loc, "'platform.datacenters' is empty");
    for (size_t i = 0; i < dcs->items.size(); ++i) {
      MapReader d(dcs->items[i], fmt::format("platform.datacenters.{}", i), diags);
      DatacenterSpec dc;
      assign(dc.name, d.string("name", true));
      assign(dc.nodes, d.integer("nodes", true, 1, kMaxGpus));
      if (!dc.name.empty() && !names.insert(dc.name).second) {
        diags.error(d.get("name", false)->loc,
                    fmt::format("datacenter name '{}' is used twice", dc.name));
      }
      d.finish();
      platform.datacenters.push_back(dc);
    }
  }
  if (const ConfigNode* links = r.list("wan", false)) {
    for (size_t i = 0; i < links->items.size(); ++i) {
      const std::string path = fmt::format("platform.wan.{}", i);
      MapReader w(links->items[i], path, diags);
      WanLinkSpec wan;
      if (const ConfigNode* between = w.list("between", true)) {
        if (between->items.size() != 2) {
          diags.error(between->loc, fmt::format("'{}.between' must name two datacenters", path));
        } else {
          for (size_t end = 0; end < 2; ++end) {
            const ConfigNode& name = between->items[end];
            std::vector<std::string> known(names.begin(), names.end());
            if (!names.count(name.scalar)) {
              const std::string near = closest_match(name.scalar, known);
              diags.error(
                  name.loc,
                  fmt::format("unknown datacenter '{}'{}", name.scalar,
                              near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
            }
            (end == 0 ? wan.from : wan.to) = name.scalar;
          }
          if (wan.from == wan.to) {
            diags.error(between->loc, fmt::format("'{}' links '{}' to itself", path, wan.from));
          }
        }
      }
      wan.link = read_link_fields(w, true);
      assign(wan.path_bandwidth_Bps,
             w.quantity("path_bandwidth", false, units::parse_bandwidth, limits::kBandwidth));
      w.finish();
      platform.wan.push_back(wan);
    }
  }
  platform.collectives = read_collectives(r);
  platform.calibration = read_calibration(r);
  r.finish();
  return platform;
}

/// A positive count written as an integer or with a suffix ("128K"), in `range`.
std::optional<int64_t> read_size(MapReader& r, std::string_view key, bool required,
                                 const ValueRange& range) {
  auto value = r.quantity(key, required, units::parse_count, range);
  if (!value) return std::nullopt;
  if (*value != std::floor(*value)) {
    r.diags().error(r.get(key, false)->loc,
                    fmt::format("'{}' must be a whole number, got {}", r.path_of(key), *value));
    return std::nullopt;
  }
  return static_cast<int64_t>(*value);
}

TransformerSpec read_model(MapReader& parent) {
  TransformerSpec m;
  const ConfigNode* node = parent.map("model", true);
  if (node == nullptr) return m;
  MapReader r(*node, parent.path_of("model"), parent.diags());
  assign(m.layers, r.integer("layers", true, 1, 100000));
  assign(m.hidden, read_size(r, "hidden", true, limits::kModelWidth));
  m.ffn = 4 * m.hidden;
  assign(m.ffn, read_size(r, "ffn", false, limits::kModelWidth));
  assign(m.mlp, r.choice("mlp", false, {"gelu", "swiglu"}));
  assign(m.heads, read_size(r, "heads", true, limits::kModelWidth));
  m.kv_heads = m.heads;
  assign(m.kv_heads, read_size(r, "kv_heads", false, limits::kModelWidth));
  assign(m.vocab, read_size(r, "vocab", true, limits::kModelVocab));
  assign(m.sequence, read_size(r, "sequence", true, limits::kModelSequence));
  assign(m.attention, r.choice("attention", false, {"flash", "unfused"}));
  assign(m.causal, r.boolean("causal", false));
  assign(m.tied_embeddings, r.boolean("tied_embeddings", false));
  r.finish();
  if (m.heads > 0 && m.hidden % m.heads != 0) {
    parent.diags().error(node->loc, fmt::format("'{}' hidden {} is not a multiple of heads {}",
                                                parent.path_of("model"), m.hidden, m.heads));
  }
  if (m.kv_heads > 0 && m.heads % m.kv_heads != 0) {
    parent.diags().error(node->loc, fmt::format("'{}' heads {} is not a multiple of kv_heads {}",
                                                parent.path_of("model"), m.heads, m.kv_heads));
  }
  return m;
}

/// Megatron's linear layers by the names `workload.lora.modules` takes, in LinearModule order.
const std::vector<std::string> kLinearModuleNames = {"qkv", "attention_output", "mlp_up",
                                                     "mlp_down"};

/// `workload.lora`, a map at `node`.
LoraSpec read_lora(const ConfigNode& node, const std::string& path, Diagnostics& diags) {
  LoraSpec lora;
  MapReader r(node, path, diags);
  assign(lora.rank, r.integer("rank", false, 1, 65536));
  if (const ConfigNode* list = r.list("modules", false)) {
    lora.modules = {};
    const std::string names = alternatives(kLinearModuleNames, "and");
    for (const ConfigNode& item : list->items) {
      const auto it = std::find(kLinearModuleNames.begin(), kLinearModuleNames.end(), item.scalar);
      if (it == kLinearModuleNames.end()) {
        diags.error(item.loc, fmt::format("'{}' has '{}'; the modules are {}", r.path_of("modules"),
                                          item.scalar, names));
      } else {
        lora.modules[static_cast<size_t>(it - kLinearModuleNames.begin())] = true;
      }
    }
    if (list->items.empty()) {
      diags.error(list->loc,
                  fmt::format("'{}' must name at least one of {}", r.path_of("modules"), names));
    }
  }
  r.finish();
  return lora;
}

WorkloadSpec read_workload(const ConfigNode& node, Diagnostics& diags) {
  WorkloadSpec workload;
  MapReader r(node, "workload", diags);
  assign(workload.name, r.string("name", true));
  assign(workload.kind, r.choice("kind", true, {"layer_stack", "transformer"}));
  if (workload.kind == WorkloadKind::layer_stack) {
    assign(workload.layers, r.integer("layers", true, 1, 100000));
    if (const ConfigNode* layer = r.map("layer", true)) {
      MapReader l(*layer, "workload.layer", diags);
      assign(workload.parameters_per_layer,
             l.quantity("parameters", true, units::parse_count, limits::kLayerParameters));
      assign(workload.forward_flops_per_sample_per_layer,
             l.quantity("forward_flops_per_sample", true, units::parse_flops, limits::kLayerFlops));
      l.finish();
    }
  } else {
    workload.model = read_model(r);
    workload.layers = workload.model.layers;
    assign(workload.fp8_gemms, r.boolean("fp8_gemms", false));
    assign(workload.fp4_gemms, r.boolean("fp4_gemms", false));
    if (const ConfigNode* lora = r.map("lora", false)) {
      workload.lora = read_lora(*lora, r.path_of("lora"), diags);
    }
    if (auto scaling = r.choice("fp8_scaling", false, {"delayed", "tensorwise", "rowwise"})) {
      workload.fp8_scaling = static_cast<Fp8Scaling>(*scaling);
    }
    if (auto backend = r.choice("attention_backend", false, kAttentionBackendNames)) {
      workload.attention_backend = static_cast<AttentionBackend>(*backend);
    }
  }
  assign(workload.precision, r.choice("precision", true, kWorkloadPrecisionNames));
  assign(workload.global_batch, r.integer("global_batch", true, 1, kMaxInt64));
  assign(workload.microbatch, r.integer("microbatch", false, 1, kMaxInt64));
  r.finish();
  return workload;
}

void read_run_settings(MapReader& r, Scenario& s) {
  if (const ConfigNode* node = r.map("parallelism", true)) {
    MapReader p(*node, "parallelism", r.diags());
    // The framework first: it gives the defaults of the keys below.
    assign(s.parallelism.framework, p.choice("framework", false, framework_names()));
    const FrameworkPreset& preset = framework_preset(s.parallelism.framework);
    s.parallelism.order = preset.order;
    s.parallelism.data_parallel = preset.data_parallel_modes.front();
    s.parallelism.overlap_gradient_reduce = preset.overlap_gradient_reduce;
    assign(s.parallelism.gpus, p.integer("gpus", false, 1));
    assign(s.parallelism.dp, p.integer("dp", false, 1));
    assign(s.parallelism.tp, p.integer("tp", false, 1));
    assign(s.parallelism.pp, p.integer("pp", false, 1));
    assign(s.parallelism.cp, p.integer("cp", false, 1));
    s.parallelism.sequence_parallel = preset.sequence_parallel && s.parallelism.tp > 1;
    assign(s.parallelism.sequence_parallel, p.boolean("sequence_parallel", false));
    assign(s.parallelism.data_parallel,
           p.choice("data_parallel", false, {"ddp", "zero1", "zero2", "fsdp"}));
    assign(s.parallelism.schedule, p.choice("schedule", false, {"gpipe", "1f1b", "interleaved"}));
    assign(s.parallelism.virtual_stages, p.integer("virtual_stages", false, 1, 1024));
    if (const ConfigNode* list = p.list("stage_layers", false)) {
      for (size_t i = 0; i < list->items.size(); ++i) {
        auto layers =
            read_quantity(list->items[i], p.path_of("stage_layers"), units::parse_count, r.diags());
        if (layers && (*layers < 1 || *layers != std::floor(*layers) || *layers > 100000)) {
          r.diags().error(list->items[i].loc,
                          fmt::format("'{}.{}' must be a whole number of layers, at least 1",
                                      p.path_of("stage_layers"), i));
        } else if (layers) {
          s.parallelism.stage_layers.push_back(static_cast<int>(*layers));
        }
      }
    }
    if (const ConfigNode* list = p.list("stage_times", false)) {
      for (size_t i = 0; i < list->items.size(); ++i) {
        const ConfigNode& item = list->items[i];
        const std::string path = fmt::format("{}.{}", p.path_of("stage_times"), i);
        if (!item.is_map()) {
          r.diags().error(
              item.loc, fmt::format("'{}' must be a map {{forward: TIME, backward: TIME}}", path));
          continue;
        }
        MapReader t(item, path, r.diags());
        ParallelismSpec::StageTime st;
        assign(st.forward_s, t.positive_quantity("forward", true, units::parse_duration));
        assign(st.backward_s, t.positive_quantity("backward", true, units::parse_duration));
        t.finish();
        s.parallelism.stage_times.push_back(st);
      }
    }
    assign(s.parallelism.recompute,
           p.choice("recompute", false, {"none", "selective", "full", "per_op"}));
    assign(s.parallelism.recompute_layers, p.integer("recompute_layers", false, 1, 100000));
    if (const ConfigNode* list = p.list("order", false)) {
      const std::vector<std::string> names = {"tp", "cp", "pp", "dp"};
      std::vector<ParallelDim> order;
      for (const auto& item : list->items) {
        auto it = std::find(names.begin(), names.end(), item.scalar);
        if (it == names.end() ||
            std::find(order.begin(), order.end(), static_cast<ParallelDim>(it - names.begin())) !=
                order.end()) {
          break;
        }
        order.push_back(static_cast<ParallelDim>(it - names.begin()));
      }
      if (order.size() != 4 || list->items.size() != 4) {
        r.diags().error(list->loc, fmt::format("'{}' must list tp, cp, pp and dp once each, "
                                               "innermost first",
                                               p.path_of("order")));
      } else {
        s.parallelism.order = order;
      }
    }
    assign(s.parallelism.gradient_bucket_bytes,
           p.quantity("gradient_bucket", false, units::parse_bytes, limits::kBucket));
    assign(s.parallelism.overlap_gradient_reduce, p.boolean("overlap_gradient_reduce", false));
    read_framework_mechanics(p, s);
    p.finish();
    s.parallelism_loc = node->loc;
  }
  read_host(r, s);
  if (const ConfigNode* node = r.map("simulation", false)) {
    MapReader m(*node, "simulation", r.diags());
    assign(s.simulation.runs, m.integer("runs", false, 1, 1000000));
    assign(s.simulation.steps, m.integer("steps", false, 1, 1000000));
    assign(s.simulation.seed, m.integer("seed", false, 0, kMaxInt64));
    if (const ConfigNode* list = m.list("deadlines", false)) {
      for (const auto& item : list->items) {
        if (!item.is_scalar()) {
          r.diags().error(item.loc,
                          "'simulation.deadlines' items must be durations ('12h') or "
                          "multiples of the deterministic job time ('1.1x')");
          continue;
        }
        std::string reason;
        if (auto d = units::parse_deadline(item.scalar, &reason)) {
          if (d->multiple > 0) {
            s.simulation.relative_deadlines.push_back(d->multiple);
          } else {
            s.simulation.deadlines_s.push_back(d->seconds);
          }
        } else {
          r.diags().error(item.loc, fmt::format("invalid value '{}' for '{}': {}", item.scalar,
                                                m.path_of("deadlines"), reason));
        }
      }
    }
    if (const ConfigNode* train = m.get("train", false)) {
      s.train = read_train_length(*train, m.path_of("train"), r.diags());
    }
    m.finish();
  }
  if (const ConfigNode* node = r.map("engine", false)) {
    MapReader e(*node, "engine", r.diags());
    assign(s.engine.collective_fidelity,
           e.choice("collective_fidelity", false, {"auto", "step", "coarse"}));
    assign(s.engine.step_fidelity_max_ranks, e.integer("step_fidelity_max_ranks", false, 2));
    assign(s.engine.step_fidelity_max_transfers,
           e.integer("step_fidelity_max_transfers", false, 1, kMaxInt64));
    assign(s.engine.collective_algorithm,
           e.choice("collective_algorithm", false, algorithm_names()));
    assign(s.engine.layer_collectives,
           e.choice("layer_collectives", false, {"auto", "network", "analytic"}));
    assign(s.engine.network_layer_collectives_max_calls,
           e.integer("network_layer_collectives_max_calls", false, 0, kMaxInt64));
    assign(s.engine.check_memory, e.boolean("check_memory", false));
    assign(s.engine.tensor_parallel_symmetry, e.boolean("tensor_parallel_symmetry", false));
    e.finish();
  }
}

/// Where the value at a dotted path was written, or where its nearest written parent was.
SourceLoc loc_of(const ConfigNode& root, const std::string& dotted) {
  const ConfigNode* node = &root;
  size_t start = 0;
  while (start <= dotted.size()) {
    const size_t dot = dotted.find('.', start);
    const std::string segment = dotted.substr(start, dot == std::string::npos ? dot : dot - start);
    const ConfigNode* next = nullptr;
    if (node->is_sequence()) {
      const size_t index = std::stoul(segment);
      if (index < node->items.size()) next = &node->items[index];
    } else {
      next = node->find(segment);
    }
    if (next == nullptr) break;
    node = next;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return node->loc;
}

/// Slow nodes must exist; a WAN round-trip time needs WAN links.
void check_variability(const Scenario& s, Diagnostics& diags) {
  const auto& p = s.parallelism;
  const int nodes = s.platform.total_gpus() / s.platform.gpus_per_node;
  for (const SlowNodeSpec& slow : s.variability.slow_nodes) {
    auto check = [&](const char* what, int value, int limit, const char* owner = "job") {
      if (value >= limit) {
        diags.error(slow.loc, fmt::format("slow node: {} {} does not exist (the {} has {})", what,
                                          value, owner, limit));
      }
    };
    if (slow.node >= 0) {
      check("node", slow.node, nodes, "platform");
    } else if (slow.rank >= 0) {
      check("rank", slow.rank, p.ranks());
    } else {
      check("stage", slow.stage, p.pp);
      check("replica", slow.replica, p.dp);
      check("tp position", slow.tp, p.tp);
      check("cp position", slow.cp, p.cp);
    }
  }
  if (s.variability.has_wan_rtt && s.platform.wan.empty()) {
    diags.error(s.variability.loc, fmt::format("'variability.network.wan_rtt_ms' needs WAN "
                                               "links, and platform '{}' has none",
                                               s.platform.name));
  }
}

/// Checks that need more than one section.
/// Rules of a platform that span its sections: size limits, fabric capacity, WAN pairs.
/// Returns false when the platform is too large to check further.
bool check_platform(const ConfigNode& root, const PlatformSpec& platform, Diagnostics& diags) {
  int64_t platform_gpus = 0;
  for (const auto& dc : platform.datacenters) {
    platform_gpus += static_cast<int64_t>(dc.nodes) * platform.gpus_per_node;
  }
  if (platform_gpus > kMaxGpus) {
    diags.error(loc_of(root, "platform.datacenters"),
                fmt::format("platform '{}' has {} GPUs; prismsim supports at most {}",
                            platform.name, platform_gpus, kMaxGpus));
    return false;
  }
  const int64_t capacity = platform.fabric.capacity(platform.gpus_per_node);
  for (size_t i = 0; i < platform.datacenters.size(); ++i) {
    const DatacenterSpec& dc = platform.datacenters[i];
    const int64_t nics = static_cast<int64_t>(dc.nodes) * platform.gpus_per_node;
    if (nics > capacity) {
      diags.error(
          loc_of(root, fmt::format("platform.datacenters.{}.nodes", i)),
          fmt::format("datacenter '{}' has {} NICs but a {}-level fat-tree of radix {} "
                      "holds at most {}",
                      dc.name, nics, platform.fabric.levels, platform.fabric.radix, capacity));
    }
  }
  // Every pair of datacenters needs a direct WAN link (routes do not transit a third one).
  const auto& dcs = platform.datacenters;
  const SourceLoc at = loc_of(root, "platform.wan");
  for (size_t i = 0; i < dcs.size(); ++i) {
    for (size_t j = i + 1; j < dcs.size(); ++j) {
      int count = 0;
      for (const auto& wan : platform.wan) {
        count += (wan.from == dcs[i].name && wan.to == dcs[j].name) ||
                 (wan.from == dcs[j].name && wan.to == dcs[i].name);
      }
      if (count == 0) {
        diags.error(at, fmt::format("no WAN link between datacenters '{}' and '{}'", dcs[i].name,
                                    dcs[j].name));
      } else if (count > 1) {
        diags.error(at, fmt::format("{} WAN links between datacenters '{}' and '{}'; give one",
                                    count, dcs[i].name, dcs[j].name));
      }
    }
  }
  return true;
}

/// A forced algorithm must be able to run the data-parallel gradient collective.
void check_forced_algorithm(const ConfigNode& root, const Scenario& s, int dp_group,
                            Diagnostics& diags) {
  const Algorithm forced = s.engine.collective_algorithm;
  const SourceLoc at = loc_of(root, "engine.collective_algorithm");
  const int per_node = s.platform.gpus_per_node;
  if (forced == Algorithm::direct) {
    diags.error(at, "collective_algorithm 'direct' cannot run the gradient all_reduce");
  } else if (forced == Algorithm::nvls && (!s.platform.nvls || dp_group > per_node)) {
    diags.error(at,
                "collective_algorithm 'nvls' needs 'platform.node.nvls: true' and "
                "a data-parallel group inside one node");
  } else if (forced == Algorithm::nvls_tree && (!s.platform.nvls || dp_group <= per_node)) {
    diags.error(at,
                "collective_algorithm 'nvls_tree' needs 'platform.node.nvls: true' and "
                "a data-parallel group across nodes");
  } else if (forced == Algorithm::hierarchical &&
             (dp_group <= per_node || dp_group % per_node != 0)) {
    diags.error(at,
                "collective_algorithm 'hierarchical' needs a data-parallel group "
                "of several whole nodes");
  }
}

/// Rules of a transformer workload against its parallelism (Megatron's rules).
void check_transformer(const ConfigNode& root, const Scenario& s, Diagnostics& diags) {
  const auto& p = s.parallelism;
  const auto& m = s.workload.model;
  const SourceLoc at = loc_of(root, "parallelism");
  auto require_multiple = [&](int64_t value, const char* what, int64_t divisor, const char* by) {
    if (divisor > 0 && value % divisor != 0) {
      diags.error(at, fmt::format("{} {} is not a multiple of {} {}", what, value, by, divisor));
    }
  };
  require_multiple(m.heads, "model heads", p.tp, "tp");
  require_multiple(m.kv_heads, "model kv_heads", p.tp, "tp");
  require_multiple(m.ffn, "model ffn", p.tp, "tp");
  require_multiple(m.sequence, "model sequence", p.cp, "cp");
  if (p.sequence_parallel) require_multiple(m.sequence / p.cp, "sequence per cp rank", p.tp, "tp");
  if (p.sequence_parallel && p.tp == 1) {
    diags.error(loc_of(root, "parallelism.sequence_parallel"),
                "'parallelism.sequence_parallel' needs tp > 1");
  }
  if (p.data_parallel == DataParallelKind::fsdp) {
    for (const char* key : {"gradient_bucket", "overlap_gradient_reduce"}) {
      if (root.find("parallelism")->find(key) != nullptr) {
        diags.error(loc_of(root, std::string("parallelism.") + key),
                    fmt::format("'parallelism.{}' applies to data_parallel ddp and zero1, not "
                                "fsdp (which reduces each layer's gradients as they are ready)",
                                key));
      }
    }
  }

  if (p.recompute_layers > 0 && p.recompute != Recompute::full) {
    diags.error(loc_of(root, "parallelism.recompute_layers"),
                "'parallelism.recompute_layers' needs recompute 'full' (it chooses which layers a "
                "full recompute covers)");
  } else if (p.recompute_layers > m.layers) {
    diags.error(loc_of(root, "parallelism.recompute_layers"),
                fmt::format("'parallelism.recompute_layers' {} is more than the model's {} layers",
                            p.recompute_layers, m.layers));
  }
  const int64_t chunks = static_cast<int64_t>(p.pp) * p.virtual_stages;
  if (p.schedule == PipelineSchedule::interleaved && (p.virtual_stages < 2 || p.pp < 2)) {
    diags.error(at, "schedule 'interleaved' needs pp >= 2 and virtual_stages >= 2");
  } else if (p.schedule != PipelineSchedule::interleaved && p.virtual_stages != 1) {
    diags.error(at, "virtual_stages > 1 needs schedule 'interleaved'");
  }
  if (!p.stage_times.empty() && static_cast<int64_t>(p.stage_times.size()) != chunks) {
    diags.error(loc_of(root, "parallelism.stage_times"),
                fmt::format("'parallelism.stage_times' must give {} stages (pp x virtual_stages); "
                            "got {}",
                            chunks, p.stage_times.size()));
  }
  if (!p.stage_layers.empty()) {
    const int64_t sum = std::accumulate(p.stage_layers.begin(), p.stage_layers.end(), int64_t{0});
    if (static_cast<int64_t>(p.stage_layers.size()) != chunks || sum != m.layers) {
      diags.error(loc_of(root, "parallelism.stage_layers"),
                  fmt::format("'parallelism.stage_layers' must give {} stages (pp x "
                              "virtual_stages) summing to the model's {} layers; got {} "
                              "summing to {}",
                              chunks, m.layers, p.stage_layers.size(), sum));
    }
  } else if (m.layers % chunks != 0) {
    diags.error(at, fmt::format("model layers {} is not a multiple of pp x virtual_stages {}; "
                                "give 'parallelism.stage_layers' for an uneven split",
                                m.layers, chunks));
  }
  const auto& w = s.workload;
  if (static_cast<double>(w.microbatch) * static_cast<double>(m.sequence) > 1e12) {
    diags.error(loc_of(root, "workload.microbatch"),
                fmt::format("microbatch {} x sequence {} tokens is more than the 1e12 prismsim "
                            "supports",
                            w.microbatch, m.sequence));
  }
  if (w.microbatch <= kMaxInt64 / p.dp && w.global_batch % (p.dp * w.microbatch) == 0) {
    const int64_t microbatches = w.global_batch / (p.dp * w.microbatch);
    if (p.schedule == PipelineSchedule::interleaved && microbatches % p.pp != 0) {
      diags.error(loc_of(root, "workload.global_batch"),
                  fmt::format("schedule 'interleaved' needs the {} microbatches per replica to "
                              "be a multiple of pp {}",
                              microbatches, p.pp));
    }
    // Programs are held in memory: a few ops per pass of every rank.
    const double passes = 2.0 * static_cast<double>(microbatches) * p.virtual_stages * p.ranks();
    if (passes > kMaxPassesPerStep) {
      diags.error(loc_of(root, "workload.global_batch"),
                  fmt::format("the job would run {:.3g} pipeline passes per step over all ranks; "
                              "at most {:.3g} are supported",
                              passes, kMaxPassesPerStep));
    }
  }
  if (w.fp8_gemms && !s.platform.gpu.peak_flops.count(Precision::fp8)) {
    diags.error(
        loc_of(root, "workload.fp8_gemms"),
        fmt::format("platform '{}' gives no peak_flops for precision 'fp8'", s.platform.name));
  }
  if (w.fp4_gemms) {
    const SourceLoc fp4_at = loc_of(root, "workload.fp4_gemms");
    if (w.fp8_gemms) {
      diags.error(fp4_at, "fp4_gemms and fp8_gemms both quantize the layers' GEMMs; set one");
    }
    if (!s.platform.gpu.peak_flops.count(Precision::fp4)) {
      diags.error(fp4_at, fmt::format("platform '{}' gives no peak_flops for precision 'fp4' "
                                      "(NVFP4 runs on Blackwell's tensor cores)",
                                      s.platform.name));
    }
  }
  if (w.lora) {
    const SourceLoc lora_at = loc_of(root, "workload.lora");
    if (s.parallelism.framework != Framework::megatron_lm) {
      diags.error(lora_at, fmt::format("LoRA is modelled as Megatron-Bridge runs it on "
                                       "Megatron-Core (framework: megatron-lm), not '{}'",
                                       to_string(s.parallelism.framework)));
    } else if (w.lora->rank % s.parallelism.tp != 0) {
      diags.error(loc_of(root, "workload.lora.rank"),
                  fmt::format("LoRA rank {} is not a multiple of tp {}: Megatron splits "
                              "each adapter's rank over the tensor-parallel ranks",
                              w.lora->rank, s.parallelism.tp));
    }
  }
  if (w.fp8_scaling) {
    const SourceLoc scaling_at = loc_of(root, "workload.fp8_scaling");
    if (w.fp4_gemms) {
      diags.error(scaling_at,
                  "fp8_scaling scales FP8 GEMMs; NVFP4's scales are its recipe's "
                  "(per-block E4M3 scales from the tensor's amax)");
    } else if (!w.fp8_gemms) {
      diags.error(scaling_at, "fp8_scaling scales FP8 GEMMs; it needs 'workload.fp8_gemms: true'");
    } else if (*w.fp8_scaling == Fp8Scaling::rowwise &&
               !framework_preset(s.parallelism.framework).has_rowwise_fp8) {
      diags.error(scaling_at,
                  fmt::format("framework '{}' scales FP8 per tensor (Transformer Engine); "
                              "rowwise is torchao's float8 recipe (framework: torchtitan)",
                              to_string(s.parallelism.framework)));
    }
  }
  if (w.attention_backend && w.model.attention != AttentionKernel::flash) {
    diags.error(loc_of(root, "workload.attention_backend"),
                "attention_backend chooses the fused attention kernel's library; it needs "
                "'workload.model.attention: flash' (unfused attention runs GEMMs and a softmax)");
  }
}

/// Rules that span the scenario's sections.
void cross_check(const ConfigNode& root, const Scenario& s, Diagnostics& diags) {
  if (!check_platform(root, s.platform, diags)) return;
  const SourceLoc at = loc_of(root, "parallelism");
  const auto& p = s.parallelism;
  const int64_t product = static_cast<int64_t>(p.dp) * p.tp * p.pp * p.cp;
  if (p.gpus != 0 && product != p.gpus) {
    diags.error(at, fmt::format("parallel degrees dp {} x tp {} x pp {} x cp {} = {} do not match "
                                "'parallelism.gpus' {}",
                                p.dp, p.tp, p.pp, p.cp, product, p.gpus));
  }
  const int capacity = s.platform.total_gpus();
  if (product > capacity) {
    diags.error(at, fmt::format("the scenario needs {} GPUs but platform '{}' holds {}", product,
                                s.platform.name, capacity));
  }
  const auto& w = s.workload;
  if (w.kind == WorkloadKind::layer_stack) {
    // Its only collective is the gradient all-reduce: a forced algorithm must run it.
    check_forced_algorithm(root, s, p.dp, diags);
    if (p.tp != 1 || p.pp != 1 || p.cp != 1) {
      diags.error(at, fmt::format("workload kind 'layer_stack' supports data parallelism only "
                                  "(tp {}, pp {} and cp {} must be 1)",
                                  p.tp, p.pp, p.cp));
    }
    for (const auto& key : kTransformerOnlyKeys) {
      if (root.find("parallelism")->find(key) != nullptr) {
        diags.error(loc_of(root, "parallelism." + key),
                    fmt::format("'parallelism.{}' applies to transformer workloads only", key));
      }
    }
  } else if (product <= capacity) {
    // (A forced algorithm runs every call it can; the others choose automatically.)
    check_transformer(root, s, diags);
  }
  // dp x microbatch can overflow: test it before multiplying.
  if (w.microbatch > kMaxInt64 / p.dp || w.global_batch % (p.dp * w.microbatch) != 0) {
    diags.error(loc_of(root, "workload.global_batch"),
                fmt::format("'workload.global_batch' {} is not a multiple of dp {} x "
                            "microbatch {}",
                            w.global_batch, p.dp, w.microbatch));
  } else if (const int64_t microbatches = w.global_batch / (p.dp * w.microbatch);
             microbatches > kMaxOpsPerStep / (2 * w.layers)) {
    diags.error(loc_of(root, "workload.global_batch"),
                fmt::format("each rank would run {} microbatches of {} layers per step; at most "
                            "{} kernels per rank and step are supported",
                            microbatches, w.layers, kMaxOpsPerStep));
  }
  check_variability(s, diags);
  if (!s.platform.gpu.peak_flops.empty() && !s.platform.gpu.peak_flops.count(w.precision)) {
    diags.error(loc_of(root, "workload.precision"),
                fmt::format("platform '{}' gives no peak_flops for precision '{}'", s.platform.name,
                            to_string(w.precision)));
  }
}

}  // namespace

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  Diagnostics diags;
  const auto file = std::make_shared<const std::string>(path);
  ConfigNode root = load_yaml_file(path, SourceLoc{file, 1, 1}, diags);
  resolve_includes(root, {"platform", "workload", "variability"}, diags);
  resolve_training_includes(root, diags);
  for (size_t i = 0; i < overrides.size(); ++i) {
    apply_override(root, overrides[i], static_cast<int>(i) + 1, diags);
    // --set variability=FILE names a file (relative to the working directory) that later
    // overrides can address.
    resolve_includes(root, {"variability"}, diags);
    resolve_training_includes(root, diags);
  }

  Scenario s;
  s.source = path;
  s.overrides = overrides;
  MapReader r(root, "", diags);
  assign(s.name, r.string("name", true));
  if (const ConfigNode* platform = r.get("platform", true)) {
    s.platform = read_platform(*platform, diags);
  }
  if (const ConfigNode* workload = r.get("workload", true)) {
    s.workload = read_workload(*workload, diags);
  }
  read_run_settings(r, s);
  if (const ConfigNode* variability = r.get("variability", false)) {
    s.variability = read_variability(*variability, diags);
    s.variability.loc = variability->loc;
  }
  if (const ConfigNode* resilience = r.get("resilience", false)) {
    s.resilience = read_resilience(*resilience, diags);
  }
  r.finish();
  if (diags.empty()) {
    cross_check(root, s, diags);
    check_training(s, diags);
  }
  diags.throw_if_any();
  s.inputs = diags.inputs();
  return s;
}

PlatformSpec load_platform(const std::string& path, const std::vector<std::string>& overrides) {
  Diagnostics diags;
  const auto file = std::make_shared<const std::string>(path);
  // Held under a "platform" key so that paths read as in a scenario (platform.node.gpus).
  ConfigNode root;
  root.kind = ConfigNode::Kind::Map;
  root.loc = SourceLoc{file, 1, 1};
  root.entries.push_back({"platform", root.loc, load_yaml_file(path, root.loc, diags)});
  for (size_t i = 0; i < overrides.size(); ++i) {
    apply_override(root, overrides[i], static_cast<int>(i) + 1, diags);
  }
  MapReader r(root, "", diags);
  PlatformSpec platform;
  if (const ConfigNode* node = r.get("platform", true)) platform = read_platform(*node, diags);
  r.finish();
  if (diags.empty()) check_platform(root, platform, diags);
  diags.throw_if_any();
  return platform;
}

}  // namespace prismsim
