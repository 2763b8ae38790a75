#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "collectives/cost_model.hpp"
#include "config/scenario_loader.hpp"
#include "core/diagnostics.hpp"
#include "near.hpp"
#include "platform/topology.hpp"
#include "workload/compute_model.hpp"
#include "workload/memory_estimate.hpp"
#include "workload/pipeline_schedule.hpp"
#include "workload/step_estimate.hpp"
#include "workload/transformer_job.hpp"
#include "workload/transformer_model.hpp"

using prismsim::testing::Near;

using namespace prismsim;

namespace {

/// Relative to the values compared (see near.hpp).
Near rel(double expected, double epsilon = 1e-9) { return {expected, epsilon}; }

const std::string kTinyGpt = PRISMSIM_SOURCE_DIR "/workloads/scenarios/tiny-gpt-h100.yaml";

/// layers 2, hidden 64, heads 4 (head_dim 16), ffn 256 (gelu), vocab 128, sequence 32.
TransformerSpec small_model() {
  TransformerSpec m;
  m.layers = 2;
  m.hidden = 64;
  m.ffn = 256;
  m.mlp = MlpKind::gelu;
  m.heads = 4;
  m.kv_heads = 4;
  m.vocab = 128;
  m.sequence = 32;
  m.attention = AttentionKernel::flash;
  m.causal = true;
  return m;
}

/// The small model's context: microbatch 2 (64 tokens), 2-byte activations.
LayerContext small_context(int tp, bool sequence_parallel = false,
                           Recompute recompute = Recompute::none) {
  LayerContext c;
  c.model = small_model();
  c.tp = tp;
  c.sequence_parallel = sequence_parallel;
  c.microbatch = 2;
  c.recompute = recompute;
  c.activation_bytes = 2;
  return c;
}

double flops_of(const std::vector<PassItem>& items, KernelClass kernel_class) {
  double flops = 0;
  for (const auto& item : items) {
    if (item.kind == PassItem::Kind::kernel && item.work.kernel_class == kernel_class) {
      flops += item.work.flops;
    }
  }
  return flops;
}

std::vector<const PassItem*> collectives_of(const std::vector<PassItem>& items) {
  std::vector<const PassItem*> out;
  for (const auto& item : items) {
    if (item.kind == PassItem::Kind::collective) out.push_back(&item);
  }
  return out;
}

/// A scratch directory with files written by the test.
struct Scratch {
  std::filesystem::path dir;
  Scratch() {
    dir = std::filesystem::temp_directory_path() /
          ("prismsim-transformer-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
  }
  ~Scratch() { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

/// The message lines of an InputError thrown by loading `path` ("" when it loads).
std::string errors_of(const std::string& path, const std::vector<std::string>& overrides) {
  try {
    load_scenario(path, overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

/// tiny-gpt on 2 GPUs of h100-ndr under `framework` with `tp` x `pp`, written to `scratch`.
std::string framework_scenario(const Scratch& scratch, const std::string& framework, int tp,
                               int pp) {
  return scratch.write(framework + ".yaml",
                       "name: t\nplatform: " PRISMSIM_SOURCE_DIR
                       "/platforms/h100-ndr.yaml\nworkload: " PRISMSIM_SOURCE_DIR
                       "/workloads/tiny-gpt.yaml\nparallelism:\n  framework: " +
                           framework + "\n  gpus: 2\n  tp: " + std::to_string(tp) +
                           "\n  pp: " + std::to_string(pp) + "\n  dp: 1\n");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Flops and parameters
// ---------------------------------------------------------------------------------------------

TEST_CASE("the GEMMs of a layer's forward do 2 x tokens x linear parameters / tp flops") {
  // Linear weights of one layer, by hand: QKV 64 x 192, output 64 x 64, MLP 64 x 256 twice.
  const double linear = 64.0 * 192 + 64.0 * 64 + 2 * 64.0 * 256;
  REQUIRE(linear == 49152.0);
  const double tokens = 2 * 32;
  for (int tp : {1, 2, 4}) {
    CAPTURE(tp);
    const LayerContext c = small_context(tp);
    CHECK(flops_of(layer_forward(c), KernelClass::gemm) == rel(2 * tokens * linear / tp));
    CHECK(flops_of(layer_backward(c), KernelClass::gemm) == rel(2 * 2 * tokens * linear / tp));
  }
  CHECK(flops_of(layer_forward(small_context(1)), KernelClass::gemm) == 6291456.0);
  CHECK(flops_of(layer_forward(small_context(2)), KernelClass::gemm) == 3145728.0);
}

TEST_CASE("flash attention does 4 b s^2 h / tp flops, half of them when causal") {
  // 4 x b 2 x s^2 1024 x h 64 = 524288 for the whole layer.
  for (int tp : {1, 2}) {
    CAPTURE(tp);
    LayerContext c = small_context(tp);
    CHECK(flops_of(layer_forward(c), KernelClass::attention) == rel(524288.0 / tp * 0.5));
    // The backward recomputes the scores: 2.5 times the forward.
    CHECK(flops_of(layer_backward(c), KernelClass::attention) == rel(2.5 * 524288.0 / tp * 0.5));
    c.model.causal = false;
    CHECK(flops_of(layer_forward(c), KernelClass::attention) == rel(524288.0 / tp));
  }
}

TEST_CASE("unfused attention adds two batched GEMMs of 2 b s^2 h / tp flops each") {
  LayerContext c = small_context(2);
  c.model.attention = AttentionKernel::unfused;
  const double linear = 49152.0, tokens = 64;
  const double scores = 2.0 * 2 * 32 * 32 * 64 / 2;  // one of QK^T and PV on this rank
  CHECK(flops_of(layer_forward(c), KernelClass::gemm) == rel(2 * tokens * linear / 2 + 2 * scores));
  CHECK(flops_of(layer_backward(c), KernelClass::gemm) ==
        rel(2 * (2 * tokens * linear / 2 + 2 * scores)));
  CHECK(flops_of(layer_forward(c), KernelClass::attention) == 0.0);
}

TEST_CASE("the output head is a GEMM over the padded vocabulary") {
  LayerContext c = small_context(2);
  c.model.vocab = 1000;  // padded to a multiple of 128 x 2 = 256: 1024
  CHECK(c.padded_vocab() == 1024.0);
  CHECK(flops_of(head_forward(c), KernelClass::gemm) == rel(2.0 * 64 * 64 * 1024 / 2));
  CHECK(flops_of(head_backward(c), KernelClass::gemm) == rel(2 * 2.0 * 64 * 64 * 1024 / 2));
  c.tp = 1;
  CHECK(c.padded_vocab() == 1024.0);  // multiple of 128
  c.model.vocab = 1024;
  CHECK(c.padded_vocab() == 1024.0);
}

/// Bytes of the kernels of `items` whose names end in `suffix`.
double bytes_named(const std::vector<PassItem>& items, const std::string& suffix) {
  double bytes = 0;
  for (const auto& item : items) {
    const std::string& name = item.work.name;
    if (item.kind == PassItem::Kind::kernel && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      bytes += item.work.bytes;
    }
  }
  return bytes;
}

/// The index in `items` of the kernel named `name` (items.size() when there is none).
size_t index_of(const std::vector<PassItem>& items, const std::string& name) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].kind == PassItem::Kind::kernel && items[i].work.name == name) return i;
  }
  return items.size();
}

TEST_CASE("FP8 layers cast their operands as Transformer Engine does, the head stays bf16") {
  WorkloadSpec workload;
  workload.precision = Precision::bf16;
  workload.fp8_gemms = true;
  const double tokens = 64, h = 64, qkv = 192, ffn = 256;
  // Every layer GEMM, forward and backward, runs in fp8; none of the head's.
  auto check_precisions = [&](const LayerContext& c) {
    int gemms = 0;
    for (const auto& items : {layer_forward(c), layer_backward(c)}) {
      for (const auto& item : items) {
        if (item.kind != PassItem::Kind::kernel || item.work.kernel_class != KernelClass::gemm) {
          continue;
        }
        CHECK(kernel_precision(item.work, workload) == Precision::fp8);
        ++gemms;
      }
    }
    CHECK(gemms == 4 + 8);
    // The forward GEMMs accumulate fast; dgrad and wgrad in split mode (Transformer Engine's
    // _2X_ACC_DGRAD and _2X_ACC_WGRAD).
    for (const auto& item : layer_forward(c)) CHECK_FALSE(item.work.split_accumulation);
    int split = 0;
    for (const auto& item : layer_backward(c)) split += item.work.split_accumulation ? 1 : 0;
    CHECK(split == 8);
    for (const auto& items : {head_forward(c), head_backward(c)}) {
      for (const auto& item : items) {
        if (item.work.kernel_class == KernelClass::gemm) {
          CHECK(kernel_precision(item.work, workload) == Precision::bf16);
        }
      }
    }
  };
  SUBCASE("without tensor parallelism") {
    LayerContext c = small_context(1);
    const auto bf16_forward = layer_forward(c);
    CHECK(bytes_named(bf16_forward, "_quantize") == 0.0);
    c.fp8 = true;
    check_precisions(c);
    const auto forward = layer_forward(c);
    // Column layers (qkv, MLP up) take the norms' FP8 output: e read, 1 byte written.
    CHECK(bytes_named(forward, "attention_norm") == rel(tokens * h * (2 + 1)));
    CHECK(bytes_named(forward, "mlp_norm") == rel(tokens * h * (2 + 1)));
    CHECK(bytes_named(forward, "qkv_projection_quantize") == 0.0);
    // Row layers cast their input with its transposed copy: e + 2 bytes an element.
    CHECK(bytes_named(forward, "attention_output_quantize") == rel(tokens * h * 4));
    CHECK(bytes_named(forward, "mlp_down_quantize") == rel(tokens * ffn * 4));
    for (const char* gemm : {"attention_output", "mlp_down"}) {
      CHECK(index_of(forward, std::string(gemm) + "_quantize") + 1 == index_of(forward, gemm));
    }
    CHECK(index_of(forward, "attention_norm") + 1 == index_of(forward, "qkv_projection"));
    const auto backward = layer_backward(c);
    // Every output gradient: cast with its transposed copy, right before its dgrad.
    CHECK(bytes_named(backward, "_grad_quantize") == rel(tokens * (qkv + h + ffn + h) * 4));
    for (const char* layer : {"qkv_projection", "attention_output", "mlp_up", "mlp_down"}) {
      CAPTURE(layer);
      const std::string name = layer;
      CHECK(index_of(backward, name + "_grad_quantize") + 1 == index_of(backward, name + "_dgrad"));
    }
    // The column layers' inputs (the norms' FP8 output) transposed before their wgrad.
    CHECK(bytes_named(backward, "_input_transpose") == rel(tokens * (h + h) * 2));
    CHECK(index_of(backward, "mlp_up_input_transpose") + 1 == index_of(backward, "mlp_up_wgrad"));
    CHECK(bytes_named(backward, "_grad_transpose") == 0.0);
    // With 4-byte activations the casts read 4 bytes and still write 1-byte copies.
    c.activation_bytes = 4;
    CHECK(bytes_named(layer_forward(c), "mlp_down_quantize") == rel(tokens * ffn * (4 + 2)));
    workload.fp8_gemms = false;
    const size_t qkv_gemm = index_of(forward, "qkv_projection");
    REQUIRE(qkv_gemm < forward.size());
    CHECK(kernel_precision(forward[qkv_gemm].work, workload) == Precision::bf16);
  }
  // The forward and backward items of the small model's FP8 layer on TP 2, precisions checked.
  auto fp8_tp2 = [&](bool sequence_parallel) {
    LayerContext c = small_context(2, sequence_parallel);
    c.fp8 = true;
    check_precisions(c);
    return std::make_pair(layer_forward(c), layer_backward(c));
  };
  SUBCASE("tensor parallelism without sequence parallelism: local operands, no gathers") {
    const auto [forward, backward] = fp8_tp2(false);
    CHECK(bytes_named(forward, "_quantize") == rel(tokens * (h / 2 + ffn / 2) * 4));
    CHECK(bytes_named(backward, "_grad_quantize") == rel(tokens * (qkv / 2 + h + ffn / 2 + h) * 4));
    CHECK(bytes_named(backward, "_input_transpose") == rel(tokens * (h + h) * 2));
    CHECK(bytes_named(backward, "_grad_transpose") == 0.0);
  }
  SUBCASE("with sequence parallelism: gathered operands cast on their shard, transposed whole") {
    const auto [forward, backward] = fp8_tp2(true);
    // Row layers under sequence parallelism cast without the transposed copy: e + 1.
    CHECK(bytes_named(forward, "_quantize") == rel(tokens * (h / 2 + ffn / 2) * 3));
    // Output gradients: gathered for the attention output and MLP down (their shard, e + 1),
    // local for qkv (192 / 2) and MLP up (256 / 2).
    CHECK(bytes_named(backward, "_grad_quantize") ==
          rel(2 * tokens / 2 * h * 3 + tokens * (qkv / 2 + ffn / 2) * 4));
    // Transposes before wgrad: every layer's input, and the two gathered gradients.
    CHECK(bytes_named(backward, "_input_transpose") == rel(tokens * (h + h + h / 2 + ffn / 2) * 2));
    CHECK(bytes_named(backward, "_grad_transpose") == rel(tokens * (h + h) * 2));
    // Each all-gather stays next to the GEMM that consumes it: after the norm in forward, after
    // the gradient's cast in backward.
    auto check_gathers = [](const std::vector<PassItem>& items, bool backward_pass) {
      int gathers = 0;
      for (size_t i = 1; i + 1 < items.size(); ++i) {
        if (items[i].kind != PassItem::Kind::collective ||
            items[i].op != CollectiveOp::all_gather) {
          continue;
        }
        CHECK(items[i + 1].work.kernel_class == KernelClass::gemm);
        const std::string& gemm = items[i + 1].work.name;
        const std::string before = items[i - 1].work.name;
        if (backward_pass) {
          CHECK(before == gemm.substr(0, gemm.size() - 6) + "_grad_quantize");  // "_dgrad"
        } else {
          CHECK((before == "attention_norm" || before == "mlp_norm"));
        }
        ++gathers;
      }
      return gathers;
    };
    CHECK(check_gathers(forward, false) == 2);
    CHECK(check_gathers(backward, true) == 2);
    // The gathers move the FP8 copies (1 byte an element), the reduce-scatters bf16 (2).
    for (const auto& items : {forward, backward}) {
      for (const PassItem* op : collectives_of(items)) {
        CHECK(op->bytes == (op->op == CollectiveOp::all_gather ? tokens * h : tokens * h * 2));
      }
    }
  }
}

TEST_CASE("tensorwise FP8 reads each cast tensor once more for its amax, norms write bf16") {
  const double tokens = 64, h = 64, qkv = 192, ffn = 256;
  SUBCASE("without tensor parallelism") {
    LayerContext c = small_context(1);
    c.fp8 = true;
    c.fp8_scaling = Fp8Scaling::tensorwise;
    const auto forward = layer_forward(c);
    CHECK(bytes_named(forward, "attention_norm") == rel(tokens * h * (2 + 2)));
    CHECK(bytes_named(forward, "mlp_norm") == rel(tokens * h * (2 + 2)));
    // Column layers: amax (e) and cast (e + 1) of the norm's output, right after the norm.
    CHECK(bytes_named(forward, "qkv_projection_quantize") == rel(tokens * h * 5));
    CHECK(bytes_named(forward, "mlp_up_quantize") == rel(tokens * h * 5));
    CHECK(index_of(forward, "attention_norm") + 1 == index_of(forward, "qkv_projection_quantize"));
    // Row layers: amax, and the cast with its transposed copy (e + 2).
    CHECK(bytes_named(forward, "attention_output_quantize") == rel(tokens * h * 6));
    CHECK(bytes_named(forward, "mlp_down_quantize") == rel(tokens * ffn * 6));
    const auto backward = layer_backward(c);
    CHECK(bytes_named(backward, "_grad_quantize") == rel(tokens * (qkv + h + ffn + h) * 6));
    CHECK(bytes_named(backward, "_input_transpose") == rel(tokens * (h + h) * 2));
  }
  SUBCASE("with sequence parallelism: the shard is cast, then gathered in FP8") {
    LayerContext c = small_context(2, true);
    c.fp8 = true;
    c.fp8_scaling = Fp8Scaling::tensorwise;
    const auto forward = layer_forward(c);
    CHECK(bytes_named(forward, "qkv_projection_quantize") == rel(tokens / 2 * h * 5));
    const size_t cast = index_of(forward, "qkv_projection_quantize");
    REQUIRE(cast + 2 < forward.size());
    CHECK(forward[cast + 1].kind == PassItem::Kind::collective);
    CHECK(forward[cast + 1].bytes == tokens * h);
    const auto backward = layer_backward(c);
    // Gathered gradients (attention output, MLP down) on their shard; the others whole.
    CHECK(bytes_named(backward, "_grad_quantize") ==
          rel(2 * tokens / 2 * h * 5 + tokens * (qkv / 2 + ffn / 2) * 6));
  }
  SUBCASE("the loader: torchtitan (torchao) scales per tensor, Megatron delays; rowwise if set") {
    Scenario s;
    s.workload.model = small_model();
    s.workload.fp8_gemms = true;
    auto scaling = [&] {
      const LayerContext c = layer_context(s);
      return std::make_pair(c.fp8_amax(), c.fp8_rowwise());
    };
    CHECK(scaling() == std::make_pair(false, false));
    s.parallelism.framework = Framework::torchtitan;
    CHECK(scaling() == std::make_pair(true, false));
    s.workload.fp8_scaling = Fp8Scaling::rowwise;
    CHECK(scaling() == std::make_pair(false, true));
    s.workload.fp8_scaling = Fp8Scaling::delayed;
    CHECK(scaling() == std::make_pair(false, false));
    s.workload.fp8_gemms = false;
    s.workload.fp8_scaling = Fp8Scaling::rowwise;
    CHECK(scaling() == std::make_pair(false, false));
  }
}

TEST_CASE("NVFP4 layers: FP4 GEMMs, current scaling's casts at half a byte and a scale per 16") {
  const double tokens = 64, h = 64, qkv = 192, ffn = 256, q = 0.5 + 1.0 / 16;
  CHECK(bytes_per_element(Precision::fp4) == q);
  Scenario s;
  s.workload.model = small_model();
  s.workload.fp4_gemms = true;
  s.parallelism.framework = Framework::megatron_lm;  // delayed FP8 by default: NVFP4 ignores it
  const LayerContext mapped = layer_context(s);
  CHECK(mapped.fp8);
  CHECK(mapped.fp8_amax());
  CHECK(mapped.quantized_bytes == q);
  auto as_mapped = [&](LayerContext c) {
    c.fp8 = mapped.fp8;
    c.fp8_scaling = mapped.fp8_scaling;
    c.quantized_bytes = mapped.quantized_bytes;
    return c;
  };
  LayerContext c = as_mapped(small_context(1));
  const auto forward = layer_forward(c);
  const auto backward = layer_backward(c);
  int gemms = 0;
  for (const auto& items : {forward, backward}) {
    for (const auto& item : items) {
      if (item.kind == PassItem::Kind::kernel && item.work.kernel_class == KernelClass::gemm) {
        CHECK(kernel_precision(item.work, s.workload) == Precision::fp4);
        ++gemms;
      }
    }
  }
  CHECK(gemms == 4 + 8);
  for (const auto& item : head_forward(c)) {
    if (item.work.kernel_class == KernelClass::gemm) {
      CHECK(kernel_precision(item.work, s.workload) == Precision::bf16);
    }
  }
  // Column inputs: amax (e), then the cast (e + q); row inputs and gradients with both layouts
  // (e + 2q + e); the backward's copies read and write q.
  CHECK(bytes_named(forward, "attention_norm") == rel(tokens * h * (2 + 2)));
  CHECK(bytes_named(forward, "qkv_projection_quantize") == rel(tokens * h * (4 + q)));
  CHECK(bytes_named(forward, "mlp_down_quantize") == rel(tokens * ffn * (4 + 2 * q)));
  CHECK(bytes_named(backward, "_grad_quantize") == rel(tokens * (qkv + h + ffn + h) * (4 + 2 * q)));
  CHECK(bytes_named(backward, "_input_transpose") == rel(tokens * (h + h) * 2 * q));
  SUBCASE("sequence parallelism gathers the NVFP4 copy") {
    c = as_mapped(small_context(2, true));
    const auto items = layer_forward(c);
    const size_t cast = index_of(items, "qkv_projection_quantize");
    REQUIRE(cast + 1 < items.size());
    CHECK(items[cast + 1].kind == PassItem::Kind::collective);
    CHECK(items[cast + 1].bytes == rel(tokens * h * q));
  }
}

TEST_CASE("LoRA: frozen layers compute no weight gradient, rank-r adapters beside them") {
  const double tokens = 64, h = 64, qkv = 192, ffn = 256, r = 8;
  const LayerContext full = small_context(1);
  LayerContext c = full;
  c.lora = LoraSpec{};
  c.lora->rank = static_cast<int>(r);
  // A: in x r, B: r x out, for qkv (64 -> 192), the attention output (64 -> 64), the MLP's up
  // (64 -> 256) and down (256 -> 64) projections.
  const double adapters = r * ((h + qkv) + (h + h) + (h + ffn) + (ffn + h));
  CHECK(adapter_parameters(c) == rel(adapters));
  CHECK(adapter_parameters(full) == 0.0);
  // Forward: the layer's GEMMs and each adapter's two (2 x tokens x its parameters); backward:
  // the layer's dgrads alone (as much as its forward), the adapters' dgrads and wgrads.
  const double layer_gemms = flops_of(layer_forward(full), KernelClass::gemm);
  CHECK(flops_of(layer_forward(c), KernelClass::gemm) == rel(layer_gemms + 2 * tokens * adapters));
  CHECK(flops_of(layer_backward(full), KernelClass::gemm) == rel(2 * layer_gemms));
  CHECK(flops_of(layer_backward(c), KernelClass::gemm) == rel(layer_gemms + 4 * tokens * adapters));
  CHECK(flops_of(layer_backward(c), KernelClass::attention) ==
        rel(flops_of(layer_backward(full), KernelClass::attention)));
  for (const auto& item : layer_backward(c)) {
    const std::string& name = item.work.name;
    if (name.size() > 6 && name.compare(name.size() - 6, 6, "_wgrad") == 0) {
      CHECK(name.find("_lora_") != std::string::npos);
    }
  }
  // The output layer is frozen too: its dgrad alone, and no weight gradient to defer.
  CHECK(flops_of(head_backward(c), KernelClass::gemm) ==
        rel(flops_of(head_forward(c), KernelClass::gemm)));
  for (const auto& item : head_backward(c)) CHECK_FALSE(item.embedding_wgrad);
  // Only the modules named get an adapter.
  c.lora->modules = {true, false, false, false};
  CHECK(adapter_parameters(c) == rel(r * (h + qkv)));
  CHECK(flops_of(layer_forward(c), KernelClass::gemm) ==
        rel(layer_gemms + 2 * tokens * r * (h + qkv)));
  CHECK(index_of(layer_forward(c), "attention_output_lora_a") == layer_forward(c).size());

  SUBCASE("FP8: a gradient's cast writes one copy and no transposed copies are made") {
    c.fp8 = true;
    const auto backward = layer_backward(c);
    CHECK(bytes_named(backward, "_grad_quantize") == rel(tokens * (qkv + h + ffn + h) * (2 + 1)));
    CHECK(bytes_named(backward, "_transpose") == 0.0);
    CHECK(bytes_named(layer_forward(c), "mlp_down_quantize") == rel(tokens * ffn * (2 + 1)));
  }
  SUBCASE("tensor parallelism: adapters split the rank, gather and reduce as Megatron-Bridge's") {
    c = small_context(2, true);
    c.lora = LoraSpec{};
    c.lora->rank = static_cast<int>(r);
    c.lora->modules = {true, true, false, false};
    CHECK(adapter_parameters(c) == rel(r * ((h + qkv) + (h + h)) / 2));
    auto names = [](const std::vector<PassItem>& items) {
      std::vector<std::pair<std::string, double>> out;
      for (const PassItem* item : collectives_of(items)) {
        if (item->name.rfind("lora_", 0) == 0) out.emplace_back(item->name, item->bytes);
      }
      return out;
    };
    using Calls = std::vector<std::pair<std::string, double>>;
    const double x = tokens * h * 2, rank = tokens * r * 2;  // bytes of the input, of A's output
    // The layer's gathered norm output feeds the qkv adapter; the attention output's adapter
    // all-reduces A's output and all-gathers B's.
    CHECK(names(layer_forward(c)) == Calls{{"lora_tp_all_gather_rank", rank},
                                           {"lora_tp_all_reduce_rank", rank},
                                           {"lora_tp_all_gather", x}});
    CHECK(names(layer_backward(c)) == Calls{{"lora_tp_all_gather", x},
                                            {"lora_tp_all_reduce_rank", rank},
                                            {"lora_tp_all_reduce_rank", rank}});
    // With the layer's own gather overlapped, the qkv adapter gathers its input again and
    // reduce-scatters its input gradient.
    c.lora_gathers_input = true;
    CHECK(names(layer_forward(c)).front() == std::make_pair(std::string("lora_tp_all_gather"), x));
    CHECK(names(layer_backward(c)).back() ==
          std::make_pair(std::string("lora_tp_reduce_scatter"), x));
  }
}

TEST_CASE("rowwise FP8 casts every GEMM operand from bf16 along the GEMM's axis (torchao)") {
  WorkloadSpec workload;
  workload.precision = Precision::bf16;
  workload.fp8_gemms = true;
  const double tokens = 64, h = 64, qkv = 192, ffn = 256;
  // Per linear layer (tokens x in -> out, weight out x in), e = 2: along the contiguous axis a
  // cast reads 2 bytes and writes 1; along the other it reads twice (5 bytes an element).
  auto check = [&](const LayerContext& c, double shard) {
    CAPTURE(shard);
    const double q = qkv / shard, f = ffn / shard, row_in = h / shard;
    const auto forward = layer_forward(c);
    const auto backward = layer_backward(c);
    // The norms write bf16: no FP8 output for the column layers.
    const double norm_tokens = c.sequence_parallel ? tokens / 2 : tokens;
    CHECK(bytes_named(forward, "attention_norm") == rel(norm_tokens * h * (2 + 2)));
    CHECK(bytes_named(forward, "mlp_norm") == rel(norm_tokens * h * (2 + 2)));
    CHECK(bytes_named(forward, "_weight_quantize") ==
          rel((q * h + h * row_in + f * h + h * f) * 3));
    CHECK(bytes_named(forward, "_quantize") - bytes_named(forward, "_weight_quantize") ==
          rel(tokens * (h + row_in + h + f) * 3));
    CHECK(bytes_named(backward, "_grad_quantize") == rel(tokens * (q + h + f + h) * 3));
    CHECK(bytes_named(backward, "_weight_quantize_t") ==
          rel((q * h + h * row_in + f * h + h * f) * 5));
    CHECK(bytes_named(backward, "_grad_quantize_t") == rel(tokens * (q + h + f + h) * 5));
    CHECK(bytes_named(backward, "_input_quantize_t") == rel(tokens * (h + row_in + h + f) * 5));
    CHECK(bytes_named(backward, "_transpose") == 0.0);
    // dgrad and wgrad run on unit scales; their outputs are rescaled after them (read, write).
    CHECK(bytes_named(backward, "_dgrad_rescale") == rel(tokens * (h + row_in + h + f) * 4));
    CHECK(bytes_named(backward, "_wgrad_rescale") == rel((q * h + h * row_in + f * h + h * f) * 4));
    // Each GEMM right after its own operands' casts.
    for (const char* layer : {"qkv_projection", "attention_output", "mlp_up", "mlp_down"}) {
      CAPTURE(layer);
      const std::string name = layer;
      CHECK(index_of(forward, name + "_weight_quantize") + 1 == index_of(forward, name));
      CHECK(index_of(forward, name + "_quantize") + 2 == index_of(forward, name));
      CHECK(index_of(backward, name + "_grad_quantize") + 2 == index_of(backward, name + "_dgrad"));
      CHECK(index_of(backward, name + "_weight_quantize_t") + 1 ==
            index_of(backward, name + "_dgrad"));
      CHECK(index_of(backward, name + "_input_quantize_t") + 1 ==
            index_of(backward, name + "_wgrad"));
      CHECK(index_of(backward, name + "_grad_quantize_t") + 2 ==
            index_of(backward, name + "_wgrad"));
      CHECK(index_of(backward, name + "_dgrad") + 1 == index_of(backward, name + "_dgrad_rescale"));
      CHECK(index_of(backward, name + "_wgrad") + 1 == index_of(backward, name + "_wgrad_rescale"));
      // The backward GEMMs without fast accumulation (torchao's default grad GEMM configs).
      CHECK(backward[index_of(backward, name + "_dgrad")].work.split_accumulation);
      CHECK(backward[index_of(backward, name + "_wgrad")].work.split_accumulation);
      CHECK_FALSE(forward[index_of(forward, name)].work.split_accumulation);
    }
    // Every layer GEMM in fp8.
    for (const auto& items : {forward, backward}) {
      for (const auto& item : items) {
        if (item.kind == PassItem::Kind::kernel && item.work.kernel_class == KernelClass::gemm) {
          CHECK(kernel_precision(item.work, workload) == Precision::fp8);
        }
      }
    }
    return std::make_pair(forward, backward);
  };
  SUBCASE("without tensor parallelism") {
    LayerContext c = small_context(1);
    c.fp8 = true;
    c.fp8_scaling = Fp8Scaling::rowwise;
    check(c, 1);
  }
  SUBCASE("tensor and sequence parallelism: the gathers move bf16, the casts run on them") {
    LayerContext c = small_context(2, true);
    c.fp8 = true;
    c.fp8_scaling = Fp8Scaling::rowwise;
    const auto [forward, backward] = check(c, 2);
    int gathers = 0;
    for (const auto& items : {forward, backward}) {
      for (const PassItem* op : collectives_of(items)) {
        CHECK(op->bytes == tokens * h * 2);
        gathers += op->op == CollectiveOp::all_gather;
      }
    }
    CHECK(gathers == 4);
  }
}

/// Bytes and count of the kernels of `items` whose names start with `prefix`.
std::pair<double, int> kernels_prefixed(const std::vector<PassItem>& items,
                                        const std::string& prefix) {
  double bytes = 0;
  int count = 0;
  for (const auto& item : items) {
    if (item.kind == PassItem::Kind::kernel && item.work.name.rfind(prefix, 0) == 0) {
      bytes += item.work.bytes;
      ++count;
    }
  }
  return {bytes, count};
}

TEST_CASE("Megatron's loss: a kernel per tensor op over fp32 logits, or one fused kernel a pass") {
  LayerContext c = small_context(2);
  c.model.vocab = 1000;  // padded to 1,024: 512 on each of the 2 TP ranks
  const double logits = 64.0 * 512, e = 2;
  // Megatron-LM's default and Megatron-DeepSpeed's: cast (e + 4), max (4), subtract (8), exp
  // (8), sum (4), divide (8) forward; the one-hot update (per token), scale (8), cast back
  // (4 + e) backward.
  CHECK(kernels_prefixed(head_forward(c), "cross_entropy_") ==
        std::pair{logits * (e + 4 + 4 + 8 + 8 + 4 + 8), 6});
  CHECK(kernels_prefixed(head_backward(c), "cross_entropy_") == std::pair{logits * (8 + 4 + e), 3});
  c.cross_entropy_fusion = true;  // Megatron-Core's cross_entropy_loss_fusion
  CHECK(bytes_named(head_forward(c), "cross_entropy") == rel(logits * (e + 8)));
  CHECK(bytes_named(head_backward(c), "cross_entropy_backward") == rel(logits * (e + 4)));
  CHECK(kernels_prefixed(head_forward(c), "cross_entropy_").second == 0);
  // The vocabulary-parallel all-reduces are the same either way.
  int collectives = 0;
  for (const auto& item : head_forward(c)) collectives += item.kind == PassItem::Kind::collective;
  CHECK(collectives == 3);

  SUBCASE("the framework decides, parallelism.cross_entropy_fusion overrides") {
    auto fused_in = [](std::vector<std::string> sets) {
      return layer_context(load_scenario(kTinyGpt, sets)).cross_entropy_fusion;
    };
    CHECK_FALSE(fused_in({}));
    CHECK_FALSE(fused_in({"parallelism.framework=megatron-deepspeed"}));
    CHECK(fused_in({"parallelism.cross_entropy_fusion=true"}));
  }
}

TEST_CASE("torchtitan's projections are linear layers of their own, their dgrads summed") {
  // The small model with SwiGLU and grouped-query attention (4 heads, 2 key/value heads).
  LayerContext fused = small_context(1);
  fused.model.mlp = MlpKind::swiglu;
  fused.model.kv_heads = 2;
  LayerContext separate = fused;
  separate.fused_projections = false;
  const double tokens = 64, h = 64, ffn = 256, e = 2;
  const double q = 4 * 16, kv = 2 * 16;
  auto gemm = [](const std::vector<PassItem>& items, const std::string& name) {
    const size_t at = index_of(items, name);
    REQUIRE(at < items.size());
    return std::make_pair(items[at].work.n, items[at].work.flops);
  };
  const auto forward = layer_forward(separate);
  const auto backward = layer_backward(separate);
  CHECK(gemm(forward, "q_projection") == std::pair{q, 2 * tokens * q * h});
  CHECK(gemm(forward, "k_projection") == std::pair{kv, 2 * tokens * kv * h});
  CHECK(gemm(forward, "v_projection") == std::pair{kv, 2 * tokens * kv * h});
  CHECK(gemm(forward, "mlp_gate") == std::pair{ffn, 2 * tokens * ffn * h});
  CHECK(gemm(forward, "mlp_up") == std::pair{ffn, 2 * tokens * ffn * h});
  CHECK(index_of(forward, "qkv_projection") == forward.size());
  // The same work in more, narrower GEMMs.
  CHECK(flops_of(forward, KernelClass::gemm) ==
        rel(flops_of(layer_forward(fused), KernelClass::gemm)));
  CHECK(flops_of(backward, KernelClass::gemm) ==
        rel(flops_of(layer_backward(fused), KernelClass::gemm)));
  // Compiled: one kernel reads the dgrads of an input and writes their sum, after the last.
  CHECK(kernels_prefixed(backward, "attention_input_grad_sum") == std::pair{tokens * h * 4 * e, 1});
  CHECK(kernels_prefixed(backward, "mlp_input_grad_sum") == std::pair{tokens * h * 3 * e, 1});
  CHECK(index_of(backward, "q_projection_wgrad") + 1 ==
        index_of(backward, "attention_input_grad_sum"));
  CHECK(index_of(backward, "mlp_gate_wgrad") + 1 == index_of(backward, "mlp_input_grad_sum"));
  CHECK(kernels_prefixed(layer_backward(fused), "attention_input_grad_sum").second == 0);
  SUBCASE("eagerly, autograd adds them one at a time") {
    LayerContext eager = separate;
    eager.eager_layers = true;
    CHECK(kernels_prefixed(layer_backward(eager), "attention_input_grad_sum") ==
          std::pair{tokens * h * 2 * 3 * e, 2});
    CHECK(kernels_prefixed(layer_backward(eager), "mlp_input_grad_sum") ==
          std::pair{tokens * h * 3 * e, 1});
  }
  SUBCASE("rowwise float8: each linear casts its own input") {
    LayerContext c = separate;
    c.fp8 = true;
    c.fp8_scaling = Fp8Scaling::rowwise;
    const auto f = layer_forward(c);
    for (const char* name : {"q_projection", "k_projection", "v_projection"}) {
      CHECK(bytes_named(f, std::string(name) + "_quantize") == rel(tokens * h * (e + 1)));
    }
    CHECK(bytes_named(layer_backward(c), "_input_quantize_t") ==
          rel(tokens * (6 * h + ffn) * (2 * e + 1)));
  }
  SUBCASE("tensorwise float8: one cast per linear, or one gathered for all under TP") {
    LayerContext c = separate;
    c.fp8 = true;
    c.fp8_scaling = Fp8Scaling::tensorwise;
    const double cast = tokens * h * (2 * e + 1);
    CHECK(bytes_named(layer_forward(c), "projection_quantize") == rel(3 * cast));
    c.tp = 2;
    c.model.kv_heads = 2;
    c.sequence_parallel = true;
    const auto f = layer_forward(c);
    CHECK(bytes_named(f, "projection_quantize") == rel(cast / 2));
    CHECK(index_of(f, "q_projection_quantize") + 1 < index_of(f, "q_projection"));
    CHECK(f[index_of(f, "q_projection_quantize") + 1].kind == PassItem::Kind::collective);
  }
  SUBCASE("the framework decides, parallelism.fused_projections overrides") {
    auto separate_in = [](std::vector<std::string> sets) {
      return !layer_context(load_scenario(kTinyGpt, sets)).fused_projections;
    };
    const std::vector<std::string> titan = {"parallelism.framework=torchtitan",
                                            "parallelism.data_parallel=fsdp"};
    CHECK_FALSE(separate_in({}));
    CHECK(separate_in(titan));
    CHECK_FALSE(separate_in({titan[0], titan[1], "parallelism.fused_projections=true"}));
    CHECK(separate_in({"parallelism.fused_projections=false"}));
  }
}

TEST_CASE("per-op checkpointing reruns every second linear the backward reads, not attention") {
  // torchtitan's Llama: SwiGLU, grouped-query attention, its own projections. The forward calls
  // wq, wk, wv, wo, w1 (mlp_gate), w3 (mlp_up), w2: the even ones are not saved.
  LayerContext c = small_context(1);
  c.model.mlp = MlpKind::swiglu;
  c.model.kv_heads = 2;
  c.fused_projections = false;
  c.recompute = Recompute::per_op;
  const double tokens = 64, h = 64, ffn = 256;
  auto recomputed = [](const std::vector<PassItem>& backward) {
    std::vector<std::string> names;
    for (const auto& item : backward) {
      const std::string& name = item.kind == PassItem::Kind::kernel ? item.work.name : item.name;
      if (name.rfind("recompute_", 0) == 0) names.push_back(name.substr(10));
    }
    return names;
  };
  const auto backward = layer_backward(c);
  CHECK(recomputed(backward) == std::vector<std::string>{"attention_norm", "k_projection",
                                                         "attention_residual", "mlp_norm", "mlp_up",
                                                         "swiglu"});
  // The recomputed GEMMs: the keys' projection and w3, in the workload's precision.
  const double recomputed_gemms = 2 * tokens * h * (32 + ffn);
  LayerContext saved = c;
  saved.recompute = Recompute::none;
  CHECK(flops_of(backward, KernelClass::gemm) ==
        rel(flops_of(layer_backward(saved), KernelClass::gemm) + recomputed_gemms));
  // The attention kernel's output is saved: no attention work beyond the backward's.
  CHECK(flops_of(backward, KernelClass::attention) ==
        flops_of(layer_backward(saved), KernelClass::attention));
  SUBCASE("eagerly the checkpoint runs on to the last of them: wo again too") {
    c.eager_layers = true;
    const auto names = recomputed(layer_backward(c));
    CHECK(std::count(names.begin(), names.end(), "attention_output") == 1);
    CHECK(std::count(names.begin(), names.end(), "q_projection") == 0);
    CHECK(std::count(names.begin(), names.end(), "rope_q_to_fp32") == 1);
  }
  SUBCASE("with sequence parallelism the gathers run again, the reduce-scatters do not") {
    c.tp = 2;
    c.sequence_parallel = true;
    int gathers = 0, others = 0;
    for (const auto& item : layer_backward(c)) {
      if (item.kind != PassItem::Kind::collective || item.name.rfind("recompute_", 0) != 0)
        continue;
      (item.op == CollectiveOp::all_gather ? gathers : others) += 1;
    }
    CHECK(gathers == 2);
    CHECK(others == 0);
  }
  SUBCASE("the loader: torchtitan only") {
    const LayerContext titan = layer_context(load_scenario(
        kTinyGpt, {"parallelism.framework=torchtitan", "parallelism.data_parallel=fsdp",
                   "parallelism.recompute=per_op"}));
    CHECK(titan.recompute == Recompute::per_op);
  }
}

TEST_CASE("torchtitan runs element-wise ops as eager kernels, torch.compile fuses the blocks'") {
  // The small model with SwiGLU and grouped-query attention (4 heads, 2 key/value heads).
  LayerContext fused = small_context(1);
  fused.model.mlp = MlpKind::swiglu;
  fused.model.kv_heads = 2;
  LayerContext eager = fused;
  eager.eager_layers = eager.eager_head = true;
  const double tokens = 64, h = 64, ffn = 256, vocab = 128, e = 2;
  const double q = tokens * 4 * 16, k = tokens * 2 * 16;
  const auto forward = layer_forward(eager);
  const auto backward = layer_backward(eager);
  // RMSNorm as torchtitan writes it: to fp32, pow, mean, + eps, rsqrt, scale, back, weight.
  CHECK(kernels_prefixed(forward, "attention_norm_") ==
        std::pair{tokens * h * ((e + 4) + 8 + 4 + 8 + (4 + e) + 2 * e), 8});
  CHECK(kernels_prefixed(forward, "mlp_norm_").second == 8);
  // Its autograd backward: twelve kernels.
  CHECK(kernels_prefixed(backward, "attention_norm_") ==
        std::pair{tokens * h * (2 * e + 3 * e + e + (e + 4) + 8 + 12 + 4 + 4 + 12 + 12 + (4 + e)),
                  12});
  // Rotary embedding of queries and keys in fp32, three kernels each way per tensor.
  CHECK(kernels_prefixed(forward, "rope_") == std::pair{(q + k) * ((e + 4) + 8 + (4 + e)), 6});
  CHECK(kernels_prefixed(backward, "rope_") == std::pair{(q + k) * ((e + 4) + 8 + (4 + e)), 6});
  // repeat_kv writes keys and values for every query head, reading the grouped ones.
  CHECK(bytes_named(forward, "repeat_kv") == rel(2 * q * (e + e / 2)));
  CHECK(bytes_named(backward, "repeat_kv_backward") == rel(2 * q * (e + e / 2)));
  CHECK(bytes_named(forward, "attention_output_contiguous") == rel(2 * q * e));
  // silu, then the product; backward: the product's two gradients and silu's.
  CHECK(kernels_prefixed(forward, "swiglu_") == std::pair{tokens * ffn * 5 * e, 2});
  CHECK(kernels_prefixed(backward, "swiglu_") == std::pair{tokens * ffn * 9 * e, 3});
  // Where they run: RoPE and repeat_kv between the projection and the attention kernel, the
  // copy right after it; in backward the mirror image.
  CHECK(index_of(forward, "qkv_projection") + 1 == index_of(forward, "rope_q_to_fp32"));
  CHECK(index_of(forward, "repeat_kv") + 1 == index_of(forward, "flash_attention"));
  CHECK(index_of(forward, "flash_attention") + 1 ==
        index_of(forward, "attention_output_contiguous"));
  CHECK(index_of(backward, "attention_output_contiguous_backward") + 1 ==
        index_of(backward, "flash_attention_backward"));
  CHECK(index_of(backward, "flash_attention_backward") + 1 ==
        index_of(backward, "repeat_kv_backward"));
  CHECK(index_of(backward, "rope_k_to_fp32_backward") + 1 ==
        index_of(backward, "qkv_projection_dgrad"));
  // The same GEMMs and attention as the fused layer.
  for (KernelClass kind : {KernelClass::gemm, KernelClass::attention}) {
    CHECK(flops_of(forward, kind) == flops_of(layer_forward(fused), kind));
    CHECK(flops_of(backward, kind) == flops_of(layer_backward(fused), kind));
  }
  // Fused, none of these kernels exist: one norm pass of 2e, one SwiGLU pass of 3e.
  CHECK(kernels_prefixed(layer_forward(fused), "rope_").second == 0);
  CHECK(index_of(layer_forward(fused), "repeat_kv") == layer_forward(fused).size());
  CHECK(bytes_named(layer_forward(fused), "attention_norm") == rel(tokens * h * 2 * e));
  CHECK(bytes_named(layer_forward(fused), "swiglu") == rel(tokens * ffn * 3 * e));

  SUBCASE("the loss is eager in every torchtitan job: it compiles only the blocks") {
    LayerContext compiled = fused;
    compiled.eager_head = true;
    CHECK(kernels_prefixed(layer_forward(compiled), "attention_norm").second == 1);
    const auto head = head_forward(compiled);
    CHECK(kernels_prefixed(head, "final_norm_").second == 8);
    CHECK(kernels_prefixed(head, "cross_entropy_") ==
          std::pair{tokens * vocab * ((e + 4) + 16), 3});
    CHECK(kernels_prefixed(head_backward(compiled), "cross_entropy_") ==
          std::pair{tokens * vocab * (4 + 16 + (4 + e)), 3});
    CHECK(kernels_prefixed(head_backward(compiled), "final_norm_").second == 12);
  }
  SUBCASE("the framework and parallelism.torch_compile decide") {
    const std::vector<std::string> titan = {"parallelism.framework=torchtitan",
                                            "parallelism.data_parallel=fsdp"};
    const LayerContext titan_eager = layer_context(load_scenario(kTinyGpt, titan));
    CHECK(titan_eager.eager_layers);
    CHECK(titan_eager.eager_head);
    auto with_compile = titan;
    with_compile.push_back("parallelism.torch_compile=true");
    const LayerContext titan_compiled = layer_context(load_scenario(kTinyGpt, with_compile));
    CHECK_FALSE(titan_compiled.eager_layers);
    CHECK(titan_compiled.eager_head);
    const LayerContext megatron = layer_context(load_scenario(kTinyGpt, {}));
    CHECK_FALSE(megatron.eager_layers);
    CHECK_FALSE(megatron.eager_head);
  }
}

TEST_CASE("layer parameters follow the attention and MLP shapes") {
  TransformerSpec m = small_model();
  // MHA, gelu: QKV h x 3h, output h x h, MLP 2 h f, two norms of h.
  CHECK(layer_parameters(m) == 64.0 * 192 + 64 * 64 + 2 * 64 * 256 + 2 * 64);
  CHECK(layer_parameters(m) == 49280.0);
  // GQA (2 KV heads of 16) with SwiGLU: QKV h x (4 + 2 x 2) x 16, MLP 3 h f.
  m.kv_heads = 2;
  m.mlp = MlpKind::swiglu;
  CHECK(layer_parameters(m) == 64.0 * 128 + 64 * 64 + 3 * 64 * 256 + 2 * 64);
  CHECK(layer_parameters(m) == 61568.0);
  // GQA with gelu, MHA with SwiGLU.
  m.mlp = MlpKind::gelu;
  CHECK(layer_parameters(m) == 64.0 * 128 + 64 * 64 + 2 * 64 * 256 + 2 * 64);
  m.kv_heads = 4;
  m.mlp = MlpKind::swiglu;
  CHECK(layer_parameters(m) == 64.0 * 192 + 64 * 64 + 3 * 64 * 256 + 2 * 64);
}

TEST_CASE("Llama 3 models have their published parameter counts") {
  struct Case {
    const char* file;
    double expected;
    double by_hand;  // layers x layer + 2 x vocab x hidden + final norm (untied head)
  };
  // Layer = h (h + 2 kv d) + h^2 + 3 h f + 2 h, with d = 128 and 8 KV heads.
  const double l8 = 4096.0 * (4096 + 2 * 8 * 128) + 4096.0 * 4096 + 3 * 4096.0 * 14336 + 2 * 4096;
  const double l70 = 8192.0 * (8192 + 2 * 8 * 128) + 8192.0 * 8192 + 3 * 8192.0 * 28672 + 2 * 8192;
  const double l405 =
      16384.0 * (16384 + 2 * 8 * 128) + 16384.0 * 16384 + 3 * 16384.0 * 53248 + 2 * 16384;
  const Case cases[] = {
      {"llama3-8b", 8.0e9, 32 * l8 + 2 * 128256.0 * 4096 + 4096},
      {"llama3-70b", 70.6e9, 80 * l70 + 2 * 128256.0 * 8192 + 8192},
      {"llama3-405b", 405.9e9, 126 * l405 + 2 * 128256.0 * 16384 + 16384},
  };
  Scratch scratch;
  for (const Case& c : cases) {
    CAPTURE(c.file);
    const Scenario s = load_scenario(scratch.write(
        "llama.yaml", std::string("name: llama\nplatform: ") + PRISMSIM_SOURCE_DIR +
                          "/platforms/h100-ndr.yaml\nworkload: " + PRISMSIM_SOURCE_DIR +
                          "/workloads/" + c.file + ".yaml\nparallelism: {gpus: 8, tp: 8}\n"));
    LayerContext context = layer_context(s);
    context.tp = 1;  // 128256 is a multiple of 128: no padding
    CHECK(model_parameters(context) == rel(c.by_hand, 1e-12));
    CHECK(model_parameters(context) == rel(c.expected, 0.01));
  }
}

TEST_CASE("model flops per sequence are 6 N s plus causal attention") {
  const TransformerSpec m = small_model();
  // Linear weights: 2 layers of 49152 and a head of 128 x 64; attention 4 s^2 h / 2 per layer.
  const double linear = 2 * 49152.0 + 128 * 64;
  const double expected = 3 * (2 * 32 * linear + 2 * 4.0 * 32 * 32 * 64 / 2);
  CHECK(model_flops_per_sequence(m) == rel(expected));
  CHECK(model_flops_per_sequence(m) == rel(21233664.0));
  // The same as the GEMM and attention flops of a forward pass of one sequence, tripled.
  LayerContext c = small_context(1);
  c.microbatch = 1;
  const double forward = m.layers * (flops_of(layer_forward(c), KernelClass::gemm) +
                                     flops_of(layer_forward(c), KernelClass::attention)) +
                         flops_of(head_forward(c), KernelClass::gemm);
  CHECK(3 * forward == rel(model_flops_per_sequence(m)));
}

TEST_CASE("tensor parallelism all-reduces twice per pass, b x s x h x 2 bytes each") {
  const double bytes = 2 * 32 * 64 * 2;  // b s h in 2-byte elements
  SUBCASE("without tensor parallelism, no collective") {
    CHECK(collectives_of(layer_forward(small_context(1))).empty());
    CHECK(collectives_of(layer_backward(small_context(1))).empty());
    CHECK(collectives_of(layer_backward(small_context(1, false, Recompute::full))).empty());
  }
  SUBCASE("without sequence parallelism: all-reduces") {
    for (const auto& items : {layer_forward(small_context(2)), layer_backward(small_context(2))}) {
      const auto ops = collectives_of(items);
      REQUIRE(ops.size() == 2);
      for (const PassItem* op : ops) {
        CHECK(op->op == CollectiveOp::all_reduce);
        CHECK(op->bytes == bytes);
        CHECK(op->group == LayerGroup::tp);
      }
    }
  }
  SUBCASE("with sequence parallelism: all-gather before and reduce-scatter after each block") {
    const auto forward_items = layer_forward(small_context(2, true));
    const auto forward = collectives_of(forward_items);
    REQUIRE(forward.size() == 4);
    const CollectiveOp expected_forward[] = {CollectiveOp::all_gather, CollectiveOp::reduce_scatter,
                                             CollectiveOp::all_gather,
                                             CollectiveOp::reduce_scatter};
    for (size_t i = 0; i < 4; ++i) {
      CHECK(forward[i]->op == expected_forward[i]);
      CHECK(forward[i]->bytes == bytes);
    }
    // Backward mirrors it: all-gather of the output gradient, reduce-scatter of the input's.
    const auto backward_items = layer_backward(small_context(2, true));
    const auto backward = collectives_of(backward_items);
    REQUIRE(backward.size() == 4);
    const CollectiveOp expected_backward[] = {
        CollectiveOp::all_gather, CollectiveOp::reduce_scatter, CollectiveOp::all_gather,
        CollectiveOp::reduce_scatter};
    for (size_t i = 0; i < 4; ++i) {
      CHECK(backward[i]->op == expected_backward[i]);
      CHECK(backward[i]->bytes == bytes);
    }
  }
  SUBCASE("with sequence parallelism, element-wise kernels move 1/tp of the activations") {
    const auto items = layer_forward(small_context(2, true));
    const auto plain = layer_forward(small_context(2, false));
    int norms = 0;
    for (size_t i = 0, j = 0; i < items.size() && j < plain.size(); ++i, ++j) {
      while (j < plain.size() && plain[j].kind == PassItem::Kind::collective) ++j;
      while (i < items.size() && items[i].kind == PassItem::Kind::collective) ++i;
      if (i >= items.size() || j >= plain.size()) break;
      REQUIRE(items[i].work.name == plain[j].work.name);
      if (items[i].work.name == "attention_norm" || items[i].work.name == "mlp_norm") {
        CHECK(items[i].work.bytes == rel(plain[j].work.bytes / 2));
        CHECK(items[i].work.bytes == rel(2.0 * 64 / 2 * 64 * 2));
        ++norms;
      }
    }
    CHECK(norms == 2);
  }
}

TEST_CASE("Megatron reduces a column layer's input gradient while its weight gradient runs") {
  // Megatron's LinearWithGradAccumulationAndAsyncCommunication and Transformer Engine's column
  // layers issue the reduction after the dgrad GEMM and wait for it after the wgrad GEMM: the
  // collective is flagged to be hidden by the item before it, that wgrad.
  auto hidden_after = [](const std::vector<PassItem>& items) {
    std::vector<std::string> names;  // the item before each hidden collective
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].kind == PassItem::Kind::collective && items[i].hidden_by_previous_gemm) {
        REQUIRE(i > 0);
        CHECK(items[i - 1].work.kernel_class == KernelClass::gemm);
        names.push_back(items[i - 1].work.name);
      }
    }
    return names;
  };
  const std::vector<std::string> expected = {"mlp_up_wgrad", "qkv_projection_wgrad"};
  for (const bool sequence_parallel : {false, true}) {
    CAPTURE(sequence_parallel);
    LayerContext c = small_context(2, sequence_parallel);
    c.overlap_dgrad_reduce = true;
    CHECK(hidden_after(layer_forward(c)).empty());
    const auto backward = layer_backward(c);
    CHECK(hidden_after(backward) == expected);
    for (const PassItem* op : collectives_of(backward)) {
      // Only the input gradient's reduction: the all-gathers of the output gradient are not.
      CHECK(op->hidden_by_previous_gemm ==
            (op->op ==
             (sequence_parallel ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce)));
    }
    c.recompute = Recompute::full;
    CHECK(hidden_after(layer_backward(c)) == expected);  // the recomputed forward's are not
    c.overlap_dgrad_reduce = false;
    CHECK(hidden_after(layer_backward(c)).empty());
  }
  SUBCASE("the output layer's, when its projections are one GEMM") {
    LayerContext c = small_context(2);
    c.overlap_dgrad_reduce = true;
    CHECK(hidden_after(head_backward(c)) == std::vector<std::string>{"output_head_wgrad"});
  }
  SUBCASE("autograd adds the weight gradient after the wait: the reduction stays by its wgrad") {
    // Megatron-DeepSpeed's layer returns its weight gradient after waiting for the reduction;
    // autograd's add into `.grad` follows.
    LayerContext c = small_context(2);
    c.overlap_dgrad_reduce = true;
    c.gradient_accumulation_bytes = 6;
    const auto backward = layer_backward(c);
    CHECK(hidden_after(backward) == expected);
    for (size_t i = 0; i + 1 < backward.size(); ++i) {
      if (backward[i].kind == PassItem::Kind::collective && backward[i].hidden_by_previous_gemm) {
        CHECK(backward[i + 1].gradient_accumulation);
        CHECK(backward[i + 1].work.name ==
              backward[i - 1].work.name.substr(0, backward[i - 1].work.name.size() - 6) +
                  "_grad_accumulate");
      }
    }
    CHECK(hidden_after(head_backward(c)) == std::vector<std::string>{"output_head_wgrad"});
  }
  SUBCASE("projections of their own: the sum of their input gradients comes in between") {
    LayerContext c = small_context(2);
    c.overlap_dgrad_reduce = true;
    c.fused_projections = false;  // q, k, v apart; the gelu MLP has one input projection
    CHECK(hidden_after(layer_backward(c)) == std::vector<std::string>{"mlp_up_wgrad"});
  }
  SUBCASE("the loader: on in Megatron's presets, refused for torchtitan") {
    const Scratch scratch;
    auto scenario = [&](const char* framework) {
      return framework_scenario(scratch, framework, 2, 1);
    };
    CHECK(load_scenario(scenario("megatron-lm"), {}).parallelism.overlap_dgrad_reduce);
    CHECK(load_scenario(scenario("megatron-deepspeed"), {}).parallelism.overlap_dgrad_reduce);
    CHECK_FALSE(load_scenario(scenario("torchtitan"), {}).parallelism.overlap_dgrad_reduce);
    CHECK_FALSE(load_scenario(scenario("megatron-lm"), {"parallelism.overlap_dgrad_reduce=false"})
                    .parallelism.overlap_dgrad_reduce);
    const std::string error =
        errors_of(scenario("torchtitan"), {"parallelism.overlap_dgrad_reduce=true"});
    CHECK(error.find("error: framework 'torchtitan' reduces a layer's input gradient after its "
                     "backward") != std::string::npos);
  }
}

TEST_CASE("each framework accumulates weight gradients its way, and may be told only its ways") {
  const Scratch scratch;
  auto scenario = [&](const char* framework) {
    return framework_scenario(scratch, framework, 1, 2);
  };
  auto mode = [&](const char* framework, std::vector<std::string> sets = {}) {
    return load_scenario(scenario(framework), sets).parallelism.gradient_accumulation;
  };
  CHECK(mode("megatron-lm") == GradientAccumulation::fused);
  CHECK(mode("megatron-lm", {"parallelism.gradient_accumulation=main_grad"}) ==
        GradientAccumulation::main_grad);
  CHECK(mode("megatron-deepspeed") == GradientAccumulation::autograd);
  CHECK(mode("torchtitan", {"parallelism.data_parallel=ddp"}) == GradientAccumulation::autograd);
  CHECK(errors_of(scenario("torchtitan"),
                  {"parallelism.data_parallel=ddp", "parallelism.gradient_accumulation=main_grad"})
            .find("error: framework 'torchtitan' has no gradient_accumulation 'main_grad'; it has "
                  "autograd") != std::string::npos);
  CHECK(errors_of(scenario("megatron-lm"), {"parallelism.defer_embedding_wgrad=true",
                                            "parallelism.gradient_accumulation=main_grad"})
            .find("error: defer_embedding_wgrad needs gradient_accumulation fused") !=
        std::string::npos);
  // Gradients reduced every microbatch are not kept: the key would change nothing.
  CHECK(errors_of(scenario("megatron-deepspeed"),
                  {"parallelism.gpus=4", "parallelism.dp=2", "parallelism.data_parallel=zero2",
                   "parallelism.gradient_accumulation=autograd"})
            .find("error: 'parallelism.gradient_accumulation' applies where a rank keeps its "
                  "gradients") != std::string::npos);
  // What it costs a layer: nothing fused or reduced every microbatch; else bytes an element.
  auto bytes = [&](const char* framework, std::vector<std::string> sets = {}) {
    return layer_context(load_scenario(scenario(framework), sets)).gradient_accumulation_bytes;
  };
  CHECK(bytes("megatron-lm") == 0);
  CHECK(bytes("megatron-lm", {"parallelism.gradient_accumulation=main_grad"}) == 2 + 4 + 4);
  CHECK(bytes("megatron-lm", {"parallelism.gradient_accumulation=main_grad",
                              "parallelism.gradient_reduce_precision=bf16"}) == 2 + 2 + 2);
  CHECK(bytes("megatron-deepspeed") == 3 * 2);
  CHECK(bytes("megatron-deepspeed", {"workload.precision=fp16"}) == 3 * 2);
  CHECK(bytes("torchtitan", {"parallelism.gpus=4", "parallelism.dp=2"}) == 0);  // FSDP
}

TEST_CASE("unfused attention without the softmax kernel runs each of Megatron's ops eagerly") {
  // FusedScaleMaskSoftmax.forward_torch_softmax: fp32 cast, the query-key layer scaling (on in
  // Megatron-DeepSpeed), the in-place mask, softmax, the cast back; then the dropout. Microbatch
  // 1 with 2 heads a rank: 2 attention batches, not a multiple of 4, so no fused kernel.
  LayerContext c = small_context(2);
  c.model.attention = AttentionKernel::unfused;
  c.microbatch = 1;
  REQUIRE_FALSE(fused_softmax(c));
  auto elementwise = [&](const std::vector<PassItem>& items, const std::string& prefix) {
    const double scores = static_cast<double>(c.microbatch) * 2 * 32 * 32;  // b heads s s
    std::vector<std::pair<std::string, double>> ops;                        // name, bytes per score
    for (const PassItem& item : items) {
      const std::string& name = item.work.name;
      if (item.kind == PassItem::Kind::kernel && name.rfind(prefix, 0) == 0) {
        ops.emplace_back(name, item.work.bytes / scores);
      }
    }
    return ops;
  };
  using Ops = std::vector<std::pair<std::string, double>>;
  for (const bool scaling : {true, false}) {
    CAPTURE(scaling);
    c.query_key_layer_scaling = scaling;
    Ops forward = {{"softmax_to_fp32", 6},
                   {"softmax_scale", 8},
                   {"softmax_mask", 8},
                   {"softmax_fp32", 8},
                   {"softmax_to_input_dtype", 6}};
    Ops backward = {{"softmax_to_input_dtype_backward", 6},
                    {"softmax_fp32_backward", 12},
                    {"softmax_mask_backward", 8},
                    {"softmax_scale_backward", 8},
                    {"softmax_to_fp32_backward", 6}};
    if (!scaling) {
      forward.erase(forward.begin() + 1);
      backward.erase(backward.begin() + 3);
    }
    CHECK(elementwise(layer_forward(c), "softmax") == forward);
    CHECK(elementwise(layer_backward(c), "softmax") == backward);
    CHECK(elementwise(layer_forward(c), "dropout") == Ops{{"dropout", 5}});
  }
  c.microbatch = 2;  // 4 attention batches: Megatron's kernel, one pass each way
  REQUIRE(fused_softmax(c));
  CHECK(elementwise(layer_forward(c), "softmax") == Ops{{"softmax", 4}});
  CHECK(elementwise(layer_backward(c), "softmax") == Ops{{"softmax_backward", 6}});
}

TEST_CASE("full recompute runs the forward's kernels and collectives again before backward") {
  const LayerContext plain = small_context(2);
  const LayerContext full = small_context(2, false, Recompute::full);
  const auto forward = layer_forward(plain);
  const auto backward = layer_backward(plain);
  const auto recomputed = layer_backward(full);
  REQUIRE(recomputed.size() == forward.size() + backward.size());
  for (size_t i = 0; i < forward.size(); ++i) {
    CAPTURE(i);
    CHECK(recomputed[i].kind == forward[i].kind);
    CHECK(recomputed[i].work.flops == forward[i].work.flops);
    CHECK(recomputed[i].work.bytes == forward[i].work.bytes);
    if (forward[i].kind == PassItem::Kind::kernel) {
      CHECK(recomputed[i].work.name == "recompute_" + forward[i].work.name);
    } else {
      CHECK(recomputed[i].name == "recompute_" + forward[i].name);
    }
  }
  CHECK(collectives_of(recomputed).size() == 4);
  CHECK(flops_of(recomputed, KernelClass::gemm) == rel(3 * flops_of(forward, KernelClass::gemm)));
  // Selective recompute reruns the attention core only.
  const auto selective = layer_backward(small_context(2, false, Recompute::selective));
  CHECK(selective.size() == backward.size() + 1);
  CHECK(selective.front().work.name == "recompute_flash_attention");
  CHECK(collectives_of(selective).size() == 2);
}

// ---------------------------------------------------------------------------------------------
// Compute model
// ---------------------------------------------------------------------------------------------

namespace {

GpuSpec test_gpu() {
  GpuSpec gpu;
  gpu.model = "T";
  gpu.peak_flops[Precision::bf16] = 1e15;
  gpu.peak_flops[Precision::fp8] = 2e15;
  gpu.memory_bandwidth_Bps = 2e12;
  gpu.compute.gemm_efficiency = 0.75;
  gpu.compute.gemm_half_size = 100;
  gpu.compute.attention_efficiency = 0.5;
  gpu.compute.memory_efficiency = 0.9;
  gpu.compute.kernel_overhead_s = 5e-6;
  return gpu;
}

}  // namespace

TEST_CASE("gemm efficiency is the peak fraction times x / (x + half size) per dimension") {
  GpuSpec gpu = test_gpu();
  CHECK(gemm_efficiency(gpu.compute, Precision::bf16, 100, 300, 900) ==
        rel(0.75 * 0.5 * 0.75 * 0.9));
  CHECK(gemm_efficiency(gpu.compute, Precision::bf16, 1e9, 1e9, 1e9) == rel(0.75, 1e-6));
  // A precision of its own: fp8 GEMMs reach a different fraction of their peak.
  gpu.compute.gemm_efficiency_by_precision[Precision::fp8] = 0.6;
  CHECK(gemm_efficiency(gpu.compute, Precision::fp8, 1e9, 1e9, 1e9) == rel(0.6, 1e-6));
  CHECK(gemm_efficiency(gpu.compute, Precision::bf16, 1e9, 1e9, 1e9) == rel(0.75, 1e-6));
}

TEST_CASE("a GEMM takes the larger of its compute and memory time plus its fixed latency") {
  GpuSpec gpu = test_gpu();
  gpu.compute.gemm_latency_s = 7e-6;
  const KernelWork g = gemm("big", 8192, 8192, 8192, 2);
  const double efficiency = 0.75 * std::pow(8192.0 / 8292.0, 3);
  CHECK(kernel_seconds(g, gpu, Precision::bf16) ==
        rel(2.0 * 8192 * 8192 * 8192 / (1e15 * efficiency) + 7e-6, 1e-12));
  // A skinny GEMM is memory-bound: its operands at the HBM rate, then the latency.
  const KernelWork skinny = gemm("skinny", 1e6, 512, 512, 2);
  REQUIRE(skinny.bytes / (2e12 * 0.9) >
          skinny.flops / (1e15 * gemm_efficiency(gpu.compute, Precision::bf16, 1e6, 512, 512)));
  CHECK(kernel_seconds(skinny, gpu, Precision::bf16) ==
        rel(skinny.bytes / (2e12 * 0.9) + 7e-6, 1e-12));
}

TEST_CASE("a GEMM records its shape, flops and operand bytes") {
  const KernelWork g = gemm("g", 3, 5, 7, 2, 4);
  CHECK(g.kernel_class == KernelClass::gemm);
  CHECK(g.flops == 2.0 * 3 * 5 * 7 * 4);
  CHECK(g.bytes == (3.0 * 7 + 7 * 5 + 3 * 5) * 2 * 4);
}

TEST_CASE("kernel time without overhead is the slower of compute and memory (roofline)") {
  GpuSpec gpu = test_gpu();
  gpu.compute.kernel_overhead_s = 0;
  SUBCASE("a large GEMM is compute-bound") {
    const KernelWork g = gemm("big", 8192, 8192, 8192, 2);
    const double efficiency = 0.75 * std::pow(8192.0 / 8292.0, 3);
    const double expected = 2.0 * 8192 * 8192 * 8192 / (1e15 * efficiency);
    CHECK(kernel_seconds(g, gpu, Precision::bf16) == rel(expected, 1e-12));
    CHECK(kernel_seconds(g, gpu, Precision::fp8) == rel(expected / 2, 1e-12));
    // FP4 at its own peak and efficiency (a Blackwell-like 4x the bf16 peak, 0.5 of it reached).
    gpu.peak_flops[Precision::fp4] = 4e15;
    gpu.compute.gemm_efficiency_by_precision[Precision::fp4] = 0.5;
    CHECK(kernel_seconds(g, gpu, Precision::fp4) == rel(expected * 0.75 / (4 * 0.5), 1e-12));
  }
  SUBCASE("an FP8 GEMM with split accumulation keeps fp8_split_accumulation of its rate") {
    KernelWork g = gemm("big", 8192, 8192, 8192, 2);
    const double fast = kernel_seconds(g, gpu, Precision::fp8);
    g.split_accumulation = true;
    CHECK(kernel_seconds(g, gpu, Precision::fp8) == rel(fast, 1e-12));  // the default, 1
    gpu.compute.fp8_split_accumulation = 0.8;
    CHECK(kernel_seconds(g, gpu, Precision::fp8) == rel(fast / 0.8, 1e-12));
    // Only FP8 accumulates in split mode: the same GEMM in bf16 keeps its rate.
    const double bf16 = kernel_seconds(gemm("big", 8192, 8192, 8192, 2), gpu, Precision::bf16);
    CHECK(kernel_seconds(g, gpu, Precision::bf16) == rel(bf16, 1e-12));
  }
  SUBCASE("an element-wise kernel is memory-bound") {
    const KernelWork e = memory_bound("add", 3e9);
    CHECK(kernel_seconds(e, gpu, Precision::bf16) == rel(3e9 / (2e12 * 0.9), 1e-12));
  }
  SUBCASE("a skinny GEMM is memory-bound") {
    // 1 x 16384 x 16384: 5.4e8 flops at 1e15 x 0.75 x (1/101) x ~1 x ~1 take ~7.3e-5 s; its 5.4e8
    // bytes at 1.8e12 B/s take 3e-4 s.
    const KernelWork g = gemm("gemv", 1, 16384, 16384, 2);
    const double bytes = (16384.0 + 16384.0 * 16384 + 16384) * 2;
    CHECK(kernel_seconds(g, gpu, Precision::bf16) == rel(bytes / 1.8e12, 1e-12));
  }
  SUBCASE("attention runs at the attention efficiency") {
    KernelWork a;
    a.kernel_class = KernelClass::attention;
    a.flops = 1e12;
    a.bytes = 1e6;
    CHECK(kernel_seconds(a, gpu, Precision::bf16) == rel(1e12 / (1e15 * 0.5), 1e-12));
    // A platform may give each backend's kernels their own efficiency.
    gpu.compute.attention_efficiency_by_backend = {{AttentionBackend::cudnn, 0.6},
                                                   {AttentionBackend::flash2, 0.2}};
    CHECK(kernel_seconds(a, gpu, Precision::bf16) == rel(1e12 / (1e15 * 0.6), 1e-12));
    a.attention_backend = AttentionBackend::flash2;
    CHECK(kernel_seconds(a, gpu, Precision::bf16) == rel(1e12 / (1e15 * 0.2), 1e-12));
  }
  SUBCASE("the optimizer moves 38 bytes per parameter with fp32 gradients and bf16 weights") {
    // Read weight, gradient, two moments (16), write weight and moments (12), read the gradient
    // for its norm (4), copy the weight into the bf16 model (4 + 2).
    const KernelWork adam = optimizer_step(1e9, 4, 2);
    CHECK(adam.kernel_class == KernelClass::optimizer);
    CHECK(kernel_seconds(adam, gpu, Precision::bf16) == rel(38e9 / 1.8e12, 1e-12));
    CHECK(zero_gradients(1e9, 4).bytes == 4e9);
  }
}

TEST_CASE("the framework chooses the attention kernels' library, workload.attention_backend too") {
  const auto backends = [](const std::vector<std::string>& sets) {
    const LayerContext c = layer_context(load_scenario(kTinyGpt, sets));
    std::vector<AttentionBackend> out;
    for (const auto& items : {layer_forward(c), layer_backward(c)}) {
      for (const PassItem& item : items) {
        if (item.work.kernel_class == KernelClass::attention) {
          out.push_back(item.work.attention_backend);
        }
      }
    }
    return out;
  };
  using AB = AttentionBackend;
  // Megatron-Core runs Transformer Engine's (cuDNN's) kernels, torchtitan PyTorch's
  // scaled_dot_product_attention (FlashAttention-2), Megatron-DeepSpeed the flash_attn package.
  CHECK(backends({}) == std::vector{AB::cudnn, AB::cudnn});
  const std::vector<std::string> titan = {"parallelism.framework=torchtitan",
                                          "parallelism.data_parallel=fsdp"};
  CHECK(backends(titan) == std::vector{AB::flash2, AB::flash2});
  CHECK(backends({"parallelism.framework=megatron-deepspeed"}) ==
        std::vector{AB::flash2, AB::flash2});
  auto titan_cudnn = titan;
  titan_cudnn.push_back("workload.attention_backend=cudnn");
  CHECK(backends(titan_cudnn) == std::vector{AB::cudnn, AB::cudnn});
  CHECK(backends({"workload.attention_backend=flash2"}) == std::vector{AB::flash2, AB::flash2});
  // A recomputed attention kernel is the same library's.
  auto titan_selective = titan;
  titan_selective.push_back("parallelism.recompute=selective");
  CHECK(backends(titan_selective) == std::vector{AB::flash2, AB::flash2, AB::flash2});
}

TEST_CASE(
    "Megatron-DeepSpeed's layers wait for the device before their MLP, in every forward run") {
  const auto context = [](const std::vector<std::string>& sets) {
    return layer_context(load_scenario(kTinyGpt, sets));
  };
  const std::vector<std::string> deepspeed = {"parallelism.framework=megatron-deepspeed"};
  // ParallelTransformerLayer.forward's two torch.tensor(0.0, device=...) placeholders.
  CHECK(context(deepspeed).syncs_before_mlp == 2);
  CHECK(context({}).syncs_before_mlp == 0);
  CHECK(context({"parallelism.framework=torchtitan", "parallelism.data_parallel=fsdp"})
            .syncs_before_mlp == 0);
  auto without = deepspeed;
  without.push_back("host.layer_syncs=0");
  CHECK(context(without).syncs_before_mlp == 0);
  CHECK(context({"host.layer_syncs=3"}).syncs_before_mlp == 3);

  const auto syncs = [](const std::vector<PassItem>& items) {
    std::vector<size_t> at;
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].kind == PassItem::Kind::host_sync) at.push_back(i);
    }
    return at;
  };
  LayerContext c = context(deepspeed);
  // After the MLP's norm, before its first GEMM.
  const auto forward = layer_forward(c);
  const size_t norm = index_of(forward, "mlp_norm");
  CHECK(syncs(forward) == std::vector<size_t>{norm + 1, norm + 2});
  CHECK(index_of(forward, "mlp_up") > norm + 2);
  // A full recompute runs the layer's forward again; the backward itself has none, nor does a
  // selective recompute (the core attention alone).
  CHECK(syncs(layer_backward(c)).empty());
  c.recompute = Recompute::full;
  const auto backward = layer_backward(c);
  CHECK(syncs(backward).size() == 2);
  CHECK(backward[syncs(backward).front()].work.name == "recompute_host_sync");
  c.recompute = Recompute::selective;
  CHECK(syncs(layer_backward(c)).empty());
  // torchtitan's per-op recompute reruns the layer's Python up to the MLP only when eager.
  const std::vector<std::string> per_op = {"parallelism.framework=torchtitan",
                                           "parallelism.data_parallel=fsdp",
                                           "parallelism.recompute=per_op", "host.layer_syncs=2"};
  CHECK(syncs(layer_backward(context(per_op))).size() == 2);
  auto compiled = per_op;
  compiled.push_back("parallelism.torch_compile=true");
  CHECK(syncs(layer_backward(context(compiled))).empty());
}

TEST_CASE("kernel time is the largest of compute, memory and launch overhead") {
  // compute_model.hpp: a roofline with three roofs; the host issues one kernel per overhead.
  const GpuSpec gpu = test_gpu();
  const KernelWork g = gemm("big", 8192, 8192, 8192, 2);
  const double efficiency = 0.75 * std::pow(8192.0 / 8292.0, 3);
  CHECK(kernel_seconds(g, gpu, Precision::bf16) ==
        rel(2.0 * 8192 * 8192 * 8192 / (1e15 * efficiency), 1e-12));
  CHECK(kernel_seconds(memory_bound("add", 3e9), gpu, Precision::bf16) ==
        rel(3e9 / (2e12 * 0.9), 1e-12));
  // 1 MB moves in 0.56 us, a 64^3 GEMM computes in 0.01 us: both wait for the host's 5 us.
  CHECK(kernel_seconds(memory_bound("small", 1e6), gpu, Precision::bf16) == rel(5e-6));
  CHECK(kernel_seconds(gemm("small", 64, 64, 64, 2), gpu, Precision::bf16) == rel(5e-6));
  CHECK(kernel_seconds(memory_bound("nothing", 0), gpu, Precision::bf16) == rel(5e-6));
}

// ---------------------------------------------------------------------------------------------
// Pipeline schedules
// ---------------------------------------------------------------------------------------------

namespace {

/// Every (microbatch, chunk) runs forward once and backward once, backward after forward.
void check_complete(const std::vector<PipelinePass>& passes, int microbatches, int chunks) {
  std::map<std::pair<int, int>, int> forward_at, backward_at;
  for (size_t i = 0; i < passes.size(); ++i) {
    const auto key = std::make_pair(passes[i].microbatch, passes[i].chunk);
    auto& at = passes[i].forward ? forward_at : backward_at;
    CHECK(at.count(key) == 0);
    at[key] = static_cast<int>(i);
  }
  CHECK(passes.size() == static_cast<size_t>(2 * microbatches * chunks));
  for (int mb = 0; mb < microbatches; ++mb) {
    for (int chunk = 0; chunk < chunks; ++chunk) {
      CAPTURE(mb);
      CAPTURE(chunk);
      const auto key = std::make_pair(mb, chunk);
      REQUIRE(forward_at.count(key) == 1);
      REQUIRE(backward_at.count(key) == 1);
      CHECK(forward_at[key] < backward_at[key]);
    }
  }
}

}  // namespace

TEST_CASE("1F1B: stage s warms up with min(pp - s - 1, m) forwards, then alternates") {
  for (int pp : {1, 2, 4, 8}) {
    for (int m : {1, 2, 3, 4, 8, 13}) {
      for (int s = 0; s < pp; ++s) {
        CAPTURE(pp);
        CAPTURE(m);
        CAPTURE(s);
        const auto passes = pipeline_passes(PipelineSchedule::one_f_one_b, pp, 1, m, s);
        check_complete(passes, m, 1);
        const int warmup = std::min(pp - s - 1, m);
        for (int i = 0; i < warmup; ++i)
          CHECK(passes[static_cast<size_t>(i)] == PipelinePass{true, i, 0});
        // Steady state: forward w + k, then backward k; then the remaining backwards in order.
        size_t i = static_cast<size_t>(warmup);
        for (int k = 0; k < m - warmup; ++k) {
          CHECK(passes[i++] == PipelinePass{true, warmup + k, 0});
          CHECK(passes[i++] == PipelinePass{false, k, 0});
        }
        for (int k = m - warmup; k < m; ++k) CHECK(passes[i++] == PipelinePass{false, k, 0});
        CHECK(peak_held(passes, std::vector<double>(8, 1.0)) == std::min(pp - s, m));
      }
    }
  }
}

TEST_CASE("GPipe runs every forward, then every backward, holding all microbatches") {
  for (int s = 0; s < 4; ++s) {
    const auto passes = pipeline_passes(PipelineSchedule::gpipe, 4, 1, 6, s);
    check_complete(passes, 6, 1);
    for (int mb = 0; mb < 6; ++mb) {
      CHECK(passes[static_cast<size_t>(mb)] == PipelinePass{true, mb, 0});
      CHECK(passes[static_cast<size_t>(6 + mb)] == PipelinePass{false, mb, 0});
    }
    CHECK(peak_held(passes, std::vector<double>(8, 1.0)) == 6);
  }
}

TEST_CASE("interleaved 1F1B visits every chunk of every microbatch in Megatron's order") {
  for (int pp : {2, 4}) {
    for (int v : {2, 3}) {
      for (int m : {pp, 2 * pp, 3 * pp}) {
        for (int s = 0; s < pp; ++s) {
          CAPTURE(pp);
          CAPTURE(v);
          CAPTURE(m);
          CAPTURE(s);
          const auto passes = pipeline_passes(PipelineSchedule::interleaved, pp, v, m, s);
          check_complete(passes, m, v);
          // Forwards run microbatches in groups of pp, chunk 0 first; backwards the last chunk
          // first.
          std::vector<PipelinePass> forwards, backwards;
          for (const auto& p : passes) (p.forward ? forwards : backwards).push_back(p);
          for (int k = 0; k < m * v; ++k) {
            const int group = k / (pp * v), chunk = (k / pp) % v;
            CHECK(forwards[static_cast<size_t>(k)] ==
                  PipelinePass{true, group * pp + k % pp, chunk});
            CHECK(backwards[static_cast<size_t>(k)] ==
                  PipelinePass{false, group * pp + k % pp, v - 1 - chunk});
          }
          // Warm-up: (pp - s - 1) x 2 + (v - 1) x pp forwards before the first backward, capped;
          // every forward first when there are as many microbatches as stages (Megatron-LM).
          const int warmup = m == pp ? m * v : std::min((pp - s - 1) * 2 + (v - 1) * pp, m * v);
          int leading = 0;
          while (leading < static_cast<int>(passes.size()) &&
                 passes[static_cast<size_t>(leading)].forward) {
            ++leading;
          }
          CHECK(leading == std::min(warmup + 1, m * v));
        }
      }
    }
  }
}

TEST_CASE("a 1F1B or GPipe step of equal stages takes (m + p - 1)(f + b)") {
  const double f = 1.5, b = 3.25;
  for (auto schedule : {PipelineSchedule::one_f_one_b, PipelineSchedule::gpipe}) {
    for (int p : {1, 2, 4, 8}) {
      for (int m : {1, 3, 8, 16}) {
        CAPTURE(static_cast<int>(schedule));
        CAPTURE(p);
        CAPTURE(m);
        const std::vector<double> fs(static_cast<size_t>(p), f), bs(static_cast<size_t>(p), b);
        const double makespan = pipeline_makespan(schedule, p, 1, m, fs, bs, 0.0);
        CHECK(makespan == rel((m + p - 1) * (f + b), 1e-12));
        const double bubble = (makespan - m * (f + b)) / makespan;
        CHECK(bubble == Near{(p - 1.0) / (m + p - 1), 1e-12});
      }
    }
  }
}

TEST_CASE("GPipe with transfers: every receiving stage pays each transfer before its pass") {
  // A transfer starts when the receiver reaches the pass that needs it (rendezvous), so a
  // receiving stage's cycle is pass + t: the first receiving stage sets the pace each way.
  // Forwards end at f + (m + p - 2)(f + t), backwards then take b + (m + p - 2)(b + t).
  const double f = 1, b = 2, t = 0.25;
  for (int p : {2, 4}) {
    for (int m : {1, 4, 8}) {
      CAPTURE(p);
      CAPTURE(m);
      const std::vector<double> fs(static_cast<size_t>(p), f), bs(static_cast<size_t>(p), b);
      CHECK(pipeline_makespan(PipelineSchedule::gpipe, p, 1, m, fs, bs, t) ==
            rel((f + b) + (m + p - 2) * (f + b + 2 * t), 1e-12));
    }
  }
  // One microbatch through 1F1B is the same chain.
  const std::vector<double> fs(4, f), bs(4, b);
  CHECK(pipeline_makespan(PipelineSchedule::one_f_one_b, 4, 1, 1, fs, bs, t) ==
        rel(4 * (f + b) + 2 * 3 * t));
}

TEST_CASE("interleaving v chunks divides the bubble by v") {
  const double f = 2, b = 4;
  for (int p : {2, 4}) {
    for (int v : {2, 4}) {
      for (int m : {p, 2 * p, 4 * p}) {
        CAPTURE(p);
        CAPTURE(v);
        CAPTURE(m);
        const std::vector<double> fs(static_cast<size_t>(p * v), f / v);
        const std::vector<double> bs(static_cast<size_t>(p * v), b / v);
        const double interleaved =
            pipeline_makespan(PipelineSchedule::interleaved, p, v, m, fs, bs, 0);
        const std::vector<double> f1(static_cast<size_t>(p), f), b1(static_cast<size_t>(p), b);
        const double plain = pipeline_makespan(PipelineSchedule::one_f_one_b, p, 1, m, f1, b1, 0);
        CHECK(interleaved < plain);
        // Narayanan et al. 2021: bubble (p - 1)(f + b) / v.
        CHECK(interleaved == rel((m + (p - 1.0) / v) * (f + b), 1e-12));
        const double bubble = (interleaved - m * (f + b)) / interleaved;
        CHECK(bubble == rel((p - 1.0) / (v * m + p - 1), 1e-12));
      }
    }
  }
}

TEST_CASE("the makespan of unequal stages is set by the slowest one") {
  // 1F1B, p = 2, m = 4: stage 1 twice as slow: F0 on stage 0, then stage 1 runs back to back.
  const std::vector<double> fs = {1, 2}, bs = {2, 4};
  CHECK(pipeline_makespan(PipelineSchedule::one_f_one_b, 2, 1, 4, fs, bs, 0) ==
        rel(1 + 4 * (2 + 4) + 2));
}

// ---------------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------------

namespace {

/// A GPT of Korthikanti et al.: gelu MLP of 4h, multi-head attention, fp16, unfused attention.
Scenario gpt_scenario(int tp, bool sequence_parallel, Recompute recompute) {
  Scenario s;
  TransformerSpec& m = s.workload.model;
  m.layers = 8;
  m.hidden = 1024;
  m.ffn = 4096;
  m.heads = 16;
  m.kv_heads = 16;
  m.vocab = 51200;
  m.sequence = 2048;
  m.mlp = MlpKind::gelu;
  m.attention = AttentionKernel::unfused;
  s.workload.kind = WorkloadKind::transformer;
  s.workload.layers = m.layers;
  s.workload.precision = Precision::fp16;
  s.workload.microbatch = 2;
  s.workload.global_batch = 16;
  s.parallelism.tp = tp;
  s.parallelism.sequence_parallel = sequence_parallel;
  s.parallelism.recompute = recompute;
  s.parallelism.gpus = tp;
  return s;
}

}  // namespace

TEST_CASE("layer activations follow Korthikanti et al. for a GPT layer") {
  const double s = 2048, b = 2, h = 1024, a = 16;
  for (int t : {1, 2, 4, 8}) {
    CAPTURE(t);
    const double no_sp = s * b * h * (10 + 24.0 / t + 5 * a * s / (h * t));
    CHECK(layer_activation_bytes(gpt_scenario(t, false, Recompute::none)) == rel(no_sp, 1e-12));
    const double sp = s * b * h * (34.0 / t + 5 * a * s / (h * t));
    CHECK(layer_activation_bytes(gpt_scenario(t, t > 1, Recompute::none)) == rel(sp, 1e-12));
    // Full recompute keeps the layer's input only.
    CHECK(layer_activation_bytes(gpt_scenario(t, false, Recompute::full)) ==
          rel(s * b * h * 2, 1e-12));
    CHECK(layer_activation_bytes(gpt_scenario(t, t > 1, Recompute::full)) ==
          rel(s * b * h * 2 / t, 1e-12));
    // Selective recompute drops the attention scores: 34 s b h / t with sequence parallelism.
    CHECK(layer_activation_bytes(gpt_scenario(t, t > 1, Recompute::selective)) ==
          rel(s * b * h * 34.0 / t, 1e-12));
    // Per-op checkpointing: the input, queries, values, attention output and MLP gate (2 bytes
    // each; ffn 4h), and the softmax statistics (fp32 per query and head).
    Scenario per_op = gpt_scenario(t, t > 1, Recompute::per_op);
    per_op.workload.model.attention = AttentionKernel::flash;
    CHECK(layer_activation_bytes(per_op) ==
          rel(s * b * h * 2 / t + s * b * (h + h + h + 4 * h) * 2 / t + s * b * a * 4 / t, 1e-12));
  }
}

TEST_CASE("flash attention saves only fp32 softmax statistics") {
  Scenario sc = gpt_scenario(2, false, Recompute::none);
  sc.workload.model.attention = AttentionKernel::flash;
  const double s = 2048, b = 2, h = 1024, a = 16;
  CHECK(layer_activation_bytes(sc) == rel(s * b * h * (10 + 24.0 / 2) + b * a * s * 4 / 2, 1e-12));
}

namespace {

/// A small model for hand-computed memory: layers 4 of 49280 parameters, embedding 128 x 64.
Scenario memory_scenario(int pp, int dp, DataParallelKind kind) {
  Scenario s;
  s.workload.kind = WorkloadKind::transformer;
  s.workload.model = small_model();
  s.workload.model.layers = 4;
  s.workload.model.attention = AttentionKernel::unfused;
  s.workload.layers = 4;
  s.workload.precision = Precision::fp16;
  s.workload.microbatch = 2;
  s.workload.global_batch = 2 * 4 * dp;  // 4 microbatches per replica
  s.parallelism.pp = pp;
  s.parallelism.dp = dp;
  s.parallelism.data_parallel = kind;
  s.parallelism.gpus = pp * dp;
  return s;
}

// Per layer: 49280 parameters; activations s b h (34 + 5 a s / h) = 64 x 64 x 34 + 5 x 4 x 32^2
// x 2.
constexpr double kLayerParams = 49280;
constexpr double kEmbeddingParams = 128 * 64;
constexpr double kLayerActivations = 64.0 * 64 * 34 + 5.0 * 4 * 32 * 32 * 2;

}  // namespace

TEST_CASE("memory of a two-stage 1F1B pipeline with a sharded optimizer, by hand") {
  const auto estimates = estimate_memory(memory_scenario(2, 4, DataParallelKind::zero1));
  REQUIRE(estimates.size() == 2);
  // Each stage: 2 layers and either the embedding or the untied output head.
  const double params = 2 * kLayerParams + kEmbeddingParams;
  for (const auto& m : estimates) {
    CAPTURE(m.stage);
    CHECK(m.weights == rel(2 * params));
    CHECK(m.gradients == rel(2 * params));
    CHECK(m.optimizer == rel(12 * params / 4));
  }
  // Stage 0 holds min(2, 4) microbatches of its two layers, stage 1 one.
  CHECK(estimates[0].activations == rel(2 * 2 * kLayerActivations));
  CHECK(estimates[1].activations == rel(1 * 2 * kLayerActivations));
  // The last stage's fp32 logits: tokens x vocab x (2 + 4).
  CHECK(estimates[0].transient == 0.0);
  CHECK(estimates[1].transient == rel(64.0 * 128 * 6));
  CHECK(estimates[1].total() ==
        rel(4 * params + 3 * params + 2 * kLayerActivations + 64.0 * 128 * 6));
  // Plain DDP keeps the whole optimizer state on every replica.
  const auto ddp = estimate_memory(memory_scenario(2, 4, DataParallelKind::ddp));
  CHECK(ddp[0].optimizer == rel(12 * params));
}

TEST_CASE("deferred output-layer weight gradients hold their inputs until the flush, by hand") {
  Scenario s = memory_scenario(2, 4, DataParallelKind::zero1);
  const double before = estimate_memory(s)[1].activations;
  // Per deferred microbatch: the output gradient, 64 tokens x 128 vocabulary, and the output
  // layer's input, 64 x 64, at 2 bytes; 4 microbatches, or the limit's 3.
  s.parallelism.defer_embedding_wgrad = true;
  CHECK(estimate_memory(s)[1].activations == rel(before + 4 * 2 * (64.0 * 128 + 64 * 64)));
  s.parallelism.wgrad_deferral_limit = 3;
  CHECK(estimate_memory(s)[1].activations == rel(before + 3 * 2 * (64.0 * 128 + 64 * 64)));
  // The first stage has no output layer.
  CHECK(estimate_memory(s)[0].activations == rel(2 * 2 * kLayerActivations));
}

TEST_CASE("memory of a single stage counts both the embedding and the untied output head") {
  // The single stage holds every parameter: 4 layers, the embedding and the head (untied, as
  // model_parameters and the job's optimizer count them).
  const auto estimates = estimate_memory(memory_scenario(1, 2, DataParallelKind::zero1));
  REQUIRE(estimates.size() == 1);
  const double params = 4 * kLayerParams + 2 * kEmbeddingParams;
  CHECK(estimates[0].weights == rel(2 * params));
  CHECK(estimates[0].gradients == rel(2 * params));
  CHECK(estimates[0].optimizer == rel(12 * params / 2));
  // pp 1: 1F1B holds one microbatch at a time.
  CHECK(estimates[0].activations == rel(4 * kLayerActivations));
}

TEST_CASE("a tied output head holds no weight of its own on the embedding's stage") {
  // One stage: the head multiplies by the embedding's table, so the stage holds one table.
  Scenario single = memory_scenario(1, 2, DataParallelKind::zero1);
  single.workload.model.tied_embeddings = true;
  const auto one = estimate_memory(single);
  REQUIRE(one.size() == 1);
  const double params = 4 * kLayerParams + kEmbeddingParams;
  CHECK(one[0].weights == rel(2 * params));
  CHECK(one[0].gradients == rel(2 * params));
  CHECK(one[0].optimizer == rel(12 * params / 2));
  CHECK(model_parameters(layer_context(single)) == rel(params + 64));  // + the final norm
  single.workload.model.tied_embeddings = false;
  CHECK(model_parameters(layer_context(single)) == rel(params + kEmbeddingParams + 64));
  // Two stages: the first holds the embedding, the last its copy for the head.
  Scenario split = memory_scenario(2, 4, DataParallelKind::zero1);
  split.workload.model.tied_embeddings = true;
  for (const auto& m : estimate_memory(split)) {
    CAPTURE(m.stage);
    CHECK(m.weights == rel(2 * (2 * kLayerParams + kEmbeddingParams)));
  }
}

TEST_CASE("a full recompute of the first N layers of each chunk, as Megatron's block method") {
  // Two stages of two layers; the first layer of each recomputes, the second keeps its
  // activations.
  Scenario s = memory_scenario(2, 4, DataParallelKind::zero1);
  s.parallelism.recompute = Recompute::full;
  s.parallelism.recompute_layers = 1;
  const LayerContext c = layer_context(s);
  const auto layers = split_layers(s.parallelism, 4);
  const auto units = pass_units(c, layers, false, 1);  // the last stage: head, then two layers
  REQUIRE(units.size() == 3);
  auto recomputes = [](const PassUnit& unit) {
    return std::any_of(unit.items.begin(), unit.items.end(), [](const PassItem& item) {
      return item.kind == PassItem::Kind::kernel && item.work.name.starts_with("recompute_");
    });
  };
  CHECK(recomputes(units[1]));
  CHECK(units[1].items.front().module_runs == 2);  // the forward's module code runs again
  CHECK_FALSE(recomputes(units[2]));
  CHECK(units[2].items.front().module_runs == 1);
  // Each stage holds one layer's input and one layer's every activation per microbatch in
  // flight (stage 0: 2 of 1F1B's microbatches; the last stage one), and the transient of a
  // recomputed layer.
  const double full_layer = kLayerActivations;
  const double input = 64.0 * 64 * 2;  // s b h x 2 bytes
  const auto estimates = estimate_memory(s);
  CHECK(estimates[0].activations == rel(2 * (input + full_layer)));
  CHECK(estimates[1].activations == rel(input + full_layer));
  CHECK(estimates[0].transient == rel(full_layer));
  // N at least the chunk's layers: every layer, as without N.
  s.parallelism.recompute_layers = 2;
  Scenario all = s;
  all.parallelism.recompute_layers = 0;
  CHECK(estimate_memory(s)[0].activations == rel(estimate_memory(all)[0].activations));
}

TEST_CASE("memory of ZeRO-2, FSDP with and without resharding, HSDP and fp32 gradients, by hand") {
  const double params = 2 * kLayerParams + kEmbeddingParams;  // a stage of the two-stage model
  const double unit = kLayerParams;                           // the largest gathered unit
  Scenario s = memory_scenario(2, 4, DataParallelKind::zero2);
  auto stage0 = [&] { return estimate_memory(s)[0]; };
  // ZeRO-2: gradients sharded over the 4 replicas, plus the unit being reduced.
  CHECK(stage0().weights == rel(2 * params));
  CHECK(stage0().gradients == rel(2 * params / 4 + 2 * unit));
  CHECK(stage0().optimizer == rel(12 * params / 4));
  // Gradients reduced (and kept) in fp32: 4 bytes each.
  s.parallelism.gradient_reduce_precision = Precision::fp32;
  CHECK(stage0().gradients == rel(4 * params / 4 + 4 * unit));
  s.parallelism.gradient_reduce_precision = Precision::fp16;
  // FSDP: weights sharded too, two gathered units at a time.
  s.parallelism.data_parallel = DataParallelKind::fsdp;
  CHECK(stage0().weights == rel(2 * params / 4 + 2 * 2 * unit));
  // Without resharding after forward every gathered unit stays until its backward.
  s.parallelism.reshard_after_forward = false;
  CHECK(stage0().weights == rel(2 * params / 4 + 2 * params));
  s.parallelism.reshard_after_forward = true;
  // HSDP with 2 replicas: sharded over 2 ranks, not 4.
  s.parallelism.fsdp_replicas = 2;
  CHECK(stage0().weights == rel(2 * params / 2 + 2 * 2 * unit));
  CHECK(stage0().gradients == rel(2 * params / 2 + 2 * unit));
  CHECK(stage0().optimizer == rel(12 * params / 2));
}

TEST_CASE("check_memory refuses a model that does not fit and accepts one that does") {
  Scenario s = memory_scenario(2, 4, DataParallelKind::zero1);
  s.platform.gpu.model = "Tiny";
  s.platform.gpu.memory_bytes = 1e9;
  CHECK_NOTHROW(check_memory(s));
  s.platform.gpu.memory_bytes = 1e6;  // stage 0 needs about 1.5 MB
  CHECK_THROWS_AS(check_memory(s), InputError);
  s.engine.check_memory = false;
  CHECK_NOTHROW(check_memory(s));
}

// ---------------------------------------------------------------------------------------------
// Rank grid, layer split and jobs
// ---------------------------------------------------------------------------------------------

TEST_CASE("rank coordinates round-trip, tensor parallelism innermost by default") {
  ParallelismSpec p;
  p.tp = 2;
  p.cp = 1;
  p.pp = 3;
  p.dp = 4;
  const RankGrid grid(p);
  REQUIRE(grid.ranks() == 24);
  for (int rank = 0; rank < 24; ++rank) {
    CAPTURE(rank);
    const auto c = grid.coords(rank);
    CHECK(c[static_cast<size_t>(ParallelDim::tp)] == rank % 2);
    CHECK(c[static_cast<size_t>(ParallelDim::cp)] == 0);
    CHECK(c[static_cast<size_t>(ParallelDim::pp)] == (rank / 2) % 3);
    CHECK(c[static_cast<size_t>(ParallelDim::dp)] == rank / 6);
    CHECK(grid.rank(c) == rank);
  }
  // Data parallelism innermost: consecutive ranks are replicas.
  p.order = {ParallelDim::dp, ParallelDim::pp, ParallelDim::cp, ParallelDim::tp};
  const RankGrid other(p);
  std::set<std::array<int, 4>> seen;
  for (int rank = 0; rank < 24; ++rank) {
    const auto c = other.coords(rank);
    CHECK(c[static_cast<size_t>(ParallelDim::dp)] == rank % 4);
    CHECK(c[static_cast<size_t>(ParallelDim::pp)] == (rank / 4) % 3);
    CHECK(c[static_cast<size_t>(ParallelDim::tp)] == rank / 12);
    CHECK(other.rank(c) == rank);
    seen.insert(c);
  }
  CHECK(seen.size() == 24);
}

TEST_CASE("layers split evenly over virtual stages unless stage_layers says otherwise") {
  ParallelismSpec p;
  p.pp = 2;
  p.virtual_stages = 2;
  const auto even = split_layers(p, 8);
  REQUIRE(even.size() == 4);
  for (int i = 0; i < 4; ++i) {
    CHECK(even[static_cast<size_t>(i)].first == 2 * i);
    CHECK(even[static_cast<size_t>(i)].count == 2);
  }
  p.stage_layers = {1, 3, 3, 1};
  const auto uneven = split_layers(p, 8);
  REQUIRE(uneven.size() == 4);
  CHECK(uneven[1].first == 1);
  CHECK(uneven[2].first == 4);
  CHECK(uneven[3].first == 7);
  CHECK(uneven[3].count == 1);
}

namespace {

/// Checks that a job can run: matched sends and receives, events recorded where they are waited
/// for, and the same collectives in the same order on every member of each group.
void check_job_consistent(const Job& job) {
  const int ranks = job.rank_count();
  REQUIRE(job.program_of_rank.size() == static_cast<size_t>(ranks));
  // (sender, receiver) -> (bytes, microbatch) in program order.
  std::map<std::pair<int, int>, std::vector<std::pair<double, int>>> sent, received;
  std::map<int, std::map<int, std::vector<std::pair<int, double>>>> calls;  // group -> rank -> ops
  for (int rank = 0; rank < ranks; ++rank) {
    CAPTURE(rank);
    // A rank that is not simulated has no program (its representative runs for it).
    CHECK((job.program_of_rank[static_cast<size_t>(rank)] == nullptr) == !job.simulated(rank));
    if (!job.simulated(rank)) continue;
    const Program& program = *job.program_of_rank[static_cast<size_t>(rank)];
    std::map<int, std::vector<size_t>> recorded_in;  // event -> streams
    std::vector<std::pair<int, size_t>> waits;       // event, stream
    for (size_t stream = 0; stream < program.streams.size(); ++stream) {
      for (const Op& op : program.streams[stream]) {
        if (const auto* send = std::get_if<ops::Send>(&op)) {
          CHECK(send->peer >= 0);
          CHECK(send->peer != rank);
          CHECK(job.simulated(send->peer));
          sent[{rank, send->peer}].push_back({send->bytes, send->microbatch.value_or(-1)});
        } else if (const auto* recv = std::get_if<ops::Recv>(&op)) {
          received[{recv->peer, rank}].push_back({recv->bytes, recv->microbatch.value_or(-1)});
        } else if (const auto* record = std::get_if<ops::Record>(&op)) {
          recorded_in[record->event.value()].push_back(stream);
        } else if (const auto* wait = std::get_if<ops::Wait>(&op)) {
          waits.push_back({wait->event.value(), stream});
        } else if (const auto* call = std::get_if<ops::Collective>(&op)) {
          REQUIRE(call->group.index() < job.groups.size());
          const auto& members = job.groups[call->group].ranks;
          CHECK(std::find(members.begin(), members.end(), rank) != members.end());
          calls[call->group.value()][rank].push_back({static_cast<int>(call->op), call->bytes});
        } else if (const auto* run = std::get_if<ops::RunSegment>(&op)) {
          CHECK(run->segment.index() < job.segments.size());
        }
      }
    }
    for (const auto& [event, streams] : recorded_in) {
      CHECK(event >= 0);
      CHECK(event < program.events);
      CHECK(streams.size() == 1);  // once per step
    }
    for (const auto& wait : waits) {  // (clang 14's CAPTURE cannot take structured bindings)
      const int event = wait.first;
      const size_t stream = wait.second;
      CAPTURE(event);
      REQUIRE(recorded_in.count(event) == 1);
      CHECK(recorded_in[event].front() != stream);
    }
  }
  CHECK(sent == received);
  for (const auto& group_calls : calls) {
    const int group = group_calls.first;
    const auto& by_rank = group_calls.second;
    CAPTURE(group);
    const auto& members = job.groups[GroupId(group)].ranks;
    CHECK(by_rank.size() == members.size());
    for (const auto& rank_ops : by_rank) {
      const int rank = rank_ops.first;
      const auto& ops = rank_ops.second;
      CAPTURE(rank);
      CHECK(ops == by_rank.begin()->second);
    }
  }
}

Job tiny_job(const std::vector<std::string>& overrides, Scenario* out = nullptr) {
  const Scenario s = load_scenario(kTinyGpt, overrides);
  if (out != nullptr) *out = s;
  return build_transformer_job(s, Topology(s.platform));
}

int count_groups(const Job& job, const std::string& name) {
  return static_cast<int>(std::count_if(job.groups.begin(), job.groups.end(),
                                        [&](const CollectiveGroup& g) { return g.name == name; }));
}

template <typename Kind>
int count_ops(const Program& program) {
  int n = 0;
  for (const auto& stream : program.streams) {
    for (const Op& op : stream) n += std::holds_alternative<Kind>(op);
  }
  return n;
}

}  // namespace

TEST_CASE("tiny-gpt on 16 GPUs: groups along each dimension and matched transfers") {
  // tp 2, pp 2, dp 4 in Megatron-Core's order (tp-cp-dp-pp): ranks are tp + 2 dp + 8 pp.
  const Job job = tiny_job({});
  REQUIRE(job.rank_count() == 16);
  CHECK(count_groups(job, "tp") == 8);
  CHECK(count_groups(job, "dp") == 4);
  // The gradient norm is reduced over each tensor-parallel position's 8 ranks.
  CHECK(count_groups(job, "norm") == 2);
  CHECK(job.groups.size() == 14);
  for (const auto& g : job.groups) {
    CAPTURE(g.name);
    if (g.name == "tp") {
      REQUIRE(g.ranks.size() == 2);
      CHECK(g.ranks[0] % 2 == 0);
      CHECK(g.ranks[1] == g.ranks[0] + 1);
    } else if (g.name == "dp") {
      REQUIRE(g.ranks.size() == 4);
      for (size_t i = 1; i < 4; ++i) CHECK(g.ranks[i] == g.ranks[i - 1] + 2);
    } else {
      REQUIRE(g.name == "norm");
      CHECK(g.ranks.size() == 8);
    }
  }
  check_job_consistent(job);
  // 16 / 4 = 4 microbatches per replica; stage 0 sends each forward to its stage-1 peer (rank + 8)
  // and receives each backward; b s h x 2 bytes = 512 x 256 x 2.
  const Program& first = *job.program_of_rank[1];
  int sends = 0;
  for (const Op& op : first.streams[0]) {
    if (const auto* send = std::get_if<ops::Send>(&op)) {
      CHECK(send->peer == 9);
      CHECK(send->bytes == 512.0 * 256 * 2);
      CHECK(send->blocking);  // Megatron waits for its batched sends and receives
      ++sends;
    } else if (const auto* recv = std::get_if<ops::Recv>(&op)) {
      CHECK(recv->peer == 9);
      CHECK(recv->bytes == 512.0 * 256 * 2);
    }
  }
  CHECK(sends == 4);
  CHECK(count_ops<ops::Recv>(first) == 4);
  // Megatron-LM's default: gradients reduced after the backward passes, on the compute stream.
  CHECK(first.streams.size() == 1);
}

TEST_CASE("the host launches a segment's kernels one after the other, the GPU waits for it") {
  // 20 us per launch: tiny-gpt's elementwise kernels are shorter, its GEMMs longer. Analytic
  // layer collectives keep a unit in one segment, which the host starts with the device; with
  // collectives in the network it starts later ones ahead (sim: "the host issues kernels ahead
  // across collectives in the network").
  const Job job = tiny_job({"host.kernel_launch=20us", "host.collective_launch=20us",
                            "engine.layer_collectives=analytic"});
  bool waited = false;
  for (const Segment& segment : job.segments) {
    CAPTURE(segment.name);
    double host_s = 0, device_s = 0, kernels_s = 0;
    for (const Kernel& k : segment.kernels) {
      if (k.kernel_class == KernelClass::idle) continue;
      host_s += 20e-6;
      device_s = std::max(device_s, host_s) + k.seconds;
      kernels_s += k.seconds;
    }
    CHECK(segment.seconds == rel(device_s));
    waited |= device_s > kernels_s + 20e-6;
  }
  CHECK(waited);
}

TEST_CASE("the host runs each unit's module code before its kernels, twice if recomputed") {
  // 100 ms of Python per unit (a layer, the embedding, the head) and free launches: the GPU
  // waits 100 ms before each unit of a forward, 200 ms before a recomputed layer's backward;
  // tiny-gpt's kernels (microseconds) end inside the next wait.
  const double python_s = 0.1;
  const Job job =
      tiny_job({"host.kernel_launch=0s", "host.collective_launch=0s", "host.layer_launch=100ms",
                "parallelism.recompute=full", "engine.layer_collectives=analytic"});
  std::set<std::string> checked;  // each stage's forward and backward (segments per group shape)
  for (const Segment& segment : job.segments) {
    CAPTURE(segment.name);
    int first = 0, last = 0;
    if (std::sscanf(segment.name.c_str(), "%*s layers %d-%d", &first, &last) != 2) continue;
    const bool forward = segment.name.rfind("forward", 0) == 0;
    std::vector<double> waits;
    for (const Kernel& k : segment.kernels) {
      if (k.kernel_class == KernelClass::idle) waits.push_back(k.seconds);
    }
    // tp 2, pp 2: the first stage runs the embedding, the last the head, besides its layers.
    const int layers = last - first + 1;
    REQUIRE(waits.size() == static_cast<size_t>(layers + 1));
    double expected_s = 0;
    int long_waits = 0;
    for (double wait : waits) {
      CHECK(wait > 0.99 * python_s);
      long_waits += wait > 1.5 * python_s;
      expected_s += wait > 1.5 * python_s ? 2 * python_s : python_s;
    }
    CHECK(long_waits == (forward ? 0 : layers));
    CHECK(segment.seconds >= expected_s);
    CHECK(segment.seconds < expected_s + 1e-3);
    checked.insert(segment.name);
  }
  CHECK(checked.size() == 4);
}

TEST_CASE("the step's closed form charges each unit's module code as the job does") {
  // One GPU, 16 microbatches of tiny-gpt (the embedding, 4 layers, the head): 6 units a forward,
  // 6 a backward, 4 more runs with full recompute. With 100 ms a unit and free launches the step
  // grows by that many waits, less the device time they hide (at most the whole step without).
  for (const bool recompute : {false, true}) {
    CAPTURE(recompute);
    std::vector<std::string> overrides = {"parallelism.gpus=1",    "parallelism.tp=1",
                                          "parallelism.pp=1",      "parallelism.dp=1",
                                          "host.kernel_launch=0s", "host.collective_launch=0s"};
    if (recompute) overrides.push_back("parallelism.recompute=full");
    const Scenario s = load_scenario(kTinyGpt, overrides);
    const StepEstimate estimate(s, Topology(s.platform));
    HostSpec host = s.host;
    const double without_s = estimate.seconds(s.platform.gpu, host);
    host.layer_launch_s = 0.1;
    const double with_s = estimate.seconds(s.platform.gpu, host);
    const double waits_s = 16 * (12 + (recompute ? 4 : 0)) * 0.1;
    CHECK(with_s - without_s <= waits_s + 1e-9);
    CHECK(with_s - without_s >= waits_s - without_s);
    CHECK(without_s < 0.01 * waits_s);  // so the bounds above are tight
  }
}

TEST_CASE("jobs of every schedule and data-parallel kind are consistent") {
  const std::vector<std::vector<std::string>> variants = {
      {},
      {"parallelism.sequence_parallel=true"},
      {"parallelism.data_parallel=zero1"},
      {"parallelism.data_parallel=fsdp"},
      {"parallelism.overlap_gradient_reduce=false"},
      {"parallelism.gradient_bucket=1MB"},
      {"parallelism.schedule=gpipe"},
      {"parallelism.schedule=interleaved", "parallelism.virtual_stages=2"},
      {"parallelism.recompute=full", "engine.layer_collectives=analytic"},
      {"parallelism.gpus=16", "parallelism.tp=1", "parallelism.pp=4", "parallelism.dp=4"},
      {"parallelism.gpus=16", "parallelism.tp=2", "parallelism.pp=1", "parallelism.dp=4",
       "parallelism.cp=2"},
      {"parallelism.gpus=12", "parallelism.tp=2", "parallelism.pp=3", "parallelism.dp=2",
       "parallelism.stage_layers=[1, 2, 1]"},
      {"workload.lora.rank=8", "parallelism.sequence_parallel=true",
       "parallelism.tp_comm_overlap=true"},
      {"workload.lora.rank=8", "parallelism.data_parallel=fsdp"},
      {"parallelism.framework=torchtitan", "workload.fp8_gemms=true",
       "parallelism.fsdp_float8_all_gather=true"},
      {"workload.lora.rank=8", "parallelism.data_parallel=zero1",
       "parallelism.overlap_param_gather=true", "parallelism.schedule=interleaved",
       "parallelism.virtual_stages=2"},
  };
  for (const auto& overrides : variants) {
    std::string label;
    for (const auto& o : overrides) label += o + " ";
    CAPTURE(label);
    Scenario s;
    const Job job = tiny_job(overrides, &s);
    const auto& p = s.parallelism;
    CHECK(job.rank_count() == p.ranks());
    if (p.tp > 1) CHECK(count_groups(job, "tp") == p.ranks() / p.tp);
    if (p.cp > 1) CHECK(count_groups(job, "cp") == p.ranks() / p.cp);
    if (p.data_parallel == DataParallelKind::fsdp) {
      CHECK(count_groups(job, "dp_gather") == p.ranks() / (p.dp * p.cp));
      CHECK(count_groups(job, "dp_reduce") == p.ranks() / (p.dp * p.cp));
    } else {
      CHECK(count_groups(job, "dp") == p.ranks() / (p.dp * p.cp));
    }
    check_job_consistent(job);
    // Every rank of pipeline stage s runs its microbatches' passes: one send per pass that
    // leaves the rank.
    const RankGrid grid(p);
    const int m = microbatches_per_replica(s);
    const int stages = p.pp * p.virtual_stages;
    for (int rank = 0; rank < p.ranks(); ++rank) {
      const int stage = grid.coords(rank)[static_cast<size_t>(ParallelDim::pp)];
      int leaving = 0;
      for (int chunk = 0; chunk < p.virtual_stages; ++chunk) {
        const int vs = virtual_stage(chunk, stage, p.pp);
        leaving += (vs < stages - 1) + (vs > 0);
      }
      if (!job.simulated(rank)) continue;
      CHECK(count_ops<ops::Send>(*job.program_of_rank[static_cast<size_t>(rank)]) == leaving * m);
    }
  }
}

/// Total bytes and count of rank `rank`'s data-parallel collectives of `job`.
double dp_bytes(const Job& job, int rank, int* count) {
  double total = 0;
  *count = 0;
  for (const auto& stream : job.program_of_rank[static_cast<size_t>(rank)]->streams) {
    for (const Op& op : stream) {
      const auto* call = std::get_if<ops::Collective>(&op);
      if (call != nullptr && job.groups[call->group].name == "dp") {
        total += call->bytes;
        ++*count;
      }
    }
  }
  return total;
}

TEST_CASE("LoRA trains the adapters alone: their gradients reduced, their optimizer state held") {
  Scenario s;
  const Job job = tiny_job({"workload.lora.rank=16"}, &s);
  const LayerContext c = layer_context(s);
  const double adapters = adapter_parameters(c);
  // Whole widths: qkv 256 -> 768, the attention output 256 -> 256, the MLP 256 -> 1024 -> 256;
  // each adapter split over tp 2.
  CHECK(adapters == rel(16.0 * ((256 + 768) + (256 + 256) + (256 + 1024) + (1024 + 256)) / 2));
  // Stage 0 of tp 2: its 2 layers' adapters, fp32 gradients, one bucket; no embedding gradient.
  int count = 0;
  CHECK(dp_bytes(job, 0, &count) == rel(2 * adapters * 4));
  CHECK(count == 1);
  const auto stages = split_layers(s.parallelism, c.model.layers);
  for (bool forward : {true, false}) {
    const auto units = pass_units(c, stages, forward, 0);
    CHECK(units.size() == (forward ? 3u : 2u));  // the frozen embedding has no backward
    CHECK(units.front().trainable == (forward ? 0.0 : adapters));
    CHECK(units.back().trainable == adapters);
    CHECK(units.back().parameters == rel(layer_parameters(c.model) / 2 + adapters));
  }
  // Memory: every weight, gradients and Adam's state of the adapters only.
  const auto memory = estimate_memory(s);
  const double weights =
      2 * (layer_parameters(c.model) / 2 + adapters) + embedding_parameters(c) / 2;
  CHECK(memory[0].weights == rel(weights * 2));
  CHECK(memory[0].gradients == rel(2 * adapters * 4));
  CHECK(memory[0].optimizer == rel(12 * 2 * adapters));
  s.parallelism.defer_embedding_wgrad = true;
  CHECK(deferred_embedding_wgrads(s) == 0);
}

TEST_CASE(
    "FSDP2 copies out of its gather buffer and into its reduce buffer, Megatron-FSDP does not") {
  // torchtitan on 4 GPUs, FSDP over 4: 4 microbatches a replica; 6 units a forward (embedding, 4
  // layers, head) and 6 a backward, each gathered again in the backward (reshard_after_forward)
  // and reduce-scattered every microbatch.
  const std::vector<std::string> layout = {"parallelism.gpus=4", "parallelism.tp=1",
                                           "parallelism.pp=1", "parallelism.dp=4",
                                           "parallelism.data_parallel=fsdp"};
  auto with = [&](const std::string& framework) {
    auto overrides = layout;
    overrides.push_back("parallelism.framework=" + framework);
    return overrides;
  };
  Scenario s;
  const Job job = tiny_job(with("torchtitan"), &s);
  const LayerContext c = layer_context(s);
  const GpuSpec& gpu = s.platform.gpu;
  const auto stages = split_layers(s.parallelism, c.model.layers);
  // By hand: a gathered unit's bf16 weights read from the buffer and written out (2 + 2 bytes
  // each); its gradients read in bf16 and written in fp32 (torchtitan reduces in fp32).
  double copy_out_s = 0, copy_in_s = 0;
  for (bool forward : {true, false}) {
    for (const PassUnit& unit : pass_units(c, stages, forward, 0)) {
      const double out =
          kernel_seconds(memory_bound("by hand", 4 * unit.parameters), gpu, Precision::bf16);
      copy_out_s += 4 * out;
      if (!forward) {
        copy_in_s +=
            4 * kernel_seconds(memory_bound("by hand", 6 * unit.trainable), gpu, Precision::bf16);
      }
    }
  }
  // On the compute stream (0); a gradient copy is recorded at once for the reduce-scatter.
  auto copies = [](const Job& j, const std::string& kernel, int* count) {
    double seconds = 0;
    *count = 0;
    const auto& compute = j.program_of_rank[0]->streams[0];
    for (size_t i = 0; i < compute.size(); ++i) {
      const auto* run = std::get_if<ops::RunSegment>(&compute[i]);
      if (run == nullptr) continue;
      const Segment& segment = j.segments[run->segment];
      for (const Kernel& k : segment.kernels) {
        if (k.name != kernel) continue;
        CHECK(segment.name == "fsdp copy");
        if (kernel == "fsdp_reduce_copy_in") {
          CHECK(std::holds_alternative<ops::Record>(compute.at(i + 1)));
        }
        seconds += k.seconds;
        ++*count;
      }
    }
    return seconds;
  };
  int count = 0;
  CHECK(copies(job, "fsdp_gather_copy_out", &count) == rel(copy_out_s));
  CHECK(count == 4 * 12);
  CHECK(copies(job, "fsdp_reduce_copy_in", &count) == rel(copy_in_s));
  CHECK(count == 4 * 6);
  // Megatron-FSDP's parameters and gradients are views of its buffers: no copies.
  const Job megatron = tiny_job(with("megatron-lm"));
  CHECK(copies(megatron, "fsdp_gather_copy_out", &count) == 0);
  CHECK(count == 0);
  CHECK(copies(megatron, "fsdp_reduce_copy_in", &count) == 0);
  CHECK(count == 0);
}

TEST_CASE(
    "torchao's float8 all-gather: FP8 linear weights gathered at a byte each, amax after Adam") {
  // torchtitan, FSDP over 4, FP8 linears; tiny-gpt's layer: q, k, v and the output 256 x 256,
  // the MLP 256 x 1024 and back (GELU): 6 linear layers, 786,432 weights, and two norms of 256
  // weights each; the embedding and the output layer 1,024 x 256 each, in bf16.
  const std::vector<std::string> overrides = {"parallelism.gpus=4",
                                              "parallelism.tp=1",
                                              "parallelism.pp=1",
                                              "parallelism.dp=4",
                                              "parallelism.framework=torchtitan",
                                              "workload.fp8_gemms=true"};
  auto gathers = [](const Job& job, double* amax_reduce) {
    double bytes = 0;
    *amax_reduce = 0;
    const Program& program = *job.program_of_rank[0];
    for (const Op& op : program.streams[1]) {
      if (const auto* call = std::get_if<ops::Collective>(&op)) bytes += call->bytes;
    }
    for (const Op& op : program.streams[0]) {
      const auto* call = std::get_if<ops::Collective>(&op);
      if (call != nullptr && job.groups[call->group].name == "dp_gather") {
        *amax_reduce += call->bytes;
      }
    }
    return bytes;
  };
  auto amax_seconds = [](const Job& job) {
    double seconds = 0;
    for (const Op& op : job.program_of_rank[0]->streams[0]) {
      const auto* run = std::get_if<ops::RunSegment>(&op);
      if (run == nullptr) continue;
      for (const Kernel& k : job.segments[run->segment].kernels) {
        if (k.name == "float8_weight_amax") seconds += k.seconds;
      }
    }
    return seconds;
  };
  const double linears = 4 * 256.0 * 256 + 2 * 256.0 * 1024;
  const double norms = 2 * 256.0;
  const double embedding = 1024.0 * 256;
  // Per microbatch: each layer gathered for its forward and again for its backward, the
  // embedding and the output layer likewise; 4 microbatches a replica.
  auto expected = [&](double linear_bytes) {
    return 4 * 2 * (4 * (linears * linear_bytes + norms * 2) + 2 * embedding * 2);
  };
  double amax_reduce = 0;
  const Job bf16 = tiny_job(overrides);
  CHECK(gathers(bf16, &amax_reduce) == rel(expected(2)));
  CHECK(amax_reduce == 0);
  CHECK(amax_seconds(bf16) == 0);
  auto with = overrides;
  with.push_back("parallelism.fsdp_float8_all_gather=true");
  Scenario s;
  const Job fp8 = tiny_job(with, &s);
  CHECK(gathers(fp8, &amax_reduce) == rel(expected(1)));
  // One all-reduce of every linear layer's amax (4 layers x 6, fp32); its shard read once.
  CHECK(amax_reduce == 4 * 4 * 6);
  CHECK(amax_seconds(fp8) == rel(kernel_seconds(memory_bound("by hand", 4 * 4 * linears / 4),
                                                s.platform.gpu, Precision::bf16)));
  // Memory: the bf16 shard and two gathered layers, whose linear weights take a byte each.
  const double params = 4 * (linears + norms) + 2 * embedding;
  CHECK(estimate_memory(s)[0].weights == rel(params / 4 * 2 + 2 * (linears + norms * 2)));
  s.parallelism.fsdp_float8_all_gather = false;
  CHECK(estimate_memory(s)[0].weights == rel(params / 4 * 2 + 2 * (linears + norms) * 2));
}

TEST_CASE("smaller gradient buckets give more data-parallel all-reduces of the same total") {
  // DeepSpeed buckets gradients whether or not it overlaps their reduction, and reduces them in
  // the workload's precision.
  Scenario s;
  const std::string deepspeed = "parallelism.framework=megatron-deepspeed";
  const Job one = tiny_job({deepspeed}, &s);
  const Job many = tiny_job({deepspeed, "parallelism.gradient_bucket=256KiB"});
  // Stage 0 of tp 2: half of 2 layers and half of the embedding, in bf16.
  const LayerContext c = layer_context(s);
  const double expected = (2 * layer_parameters(c.model) + embedding_parameters(c)) / 2 * 2;
  int one_count = 0, many_count = 0;
  CHECK(dp_bytes(one, 0, &one_count) == rel(expected));
  CHECK(dp_bytes(many, 0, &many_count) == rel(expected));
  CHECK(one_count == 1);
  CHECK(many_count > 1);
}

TEST_CASE("Megatron reduces bf16 gradients in fp32, in buckets only while overlapping them") {
  Scenario s;
  const Job after = tiny_job({"parallelism.gradient_bucket=256KiB"}, &s);
  const Job overlapped =
      tiny_job({"parallelism.gradient_bucket=256KiB", "parallelism.overlap_gradient_reduce=true"});
  const LayerContext c = layer_context(s);
  const double stage0 = (2 * layer_parameters(c.model) + embedding_parameters(c)) / 2;
  CHECK(s.parallelism.gradient_reduce_precision == Precision::fp32);
  int count = 0;
  CHECK(dp_bytes(after, 0, &count) == rel(4 * stage0));
  CHECK(count == 1);  // bucket_size None without overlap_grad_reduce
  CHECK(dp_bytes(overlapped, 0, &count) == rel(4 * stage0));
  CHECK(count > 1);  // the first stage's first chunk is bucketed
  // Other stages reduce in one bucket ("not on the critical path").
  CHECK(dp_bytes(overlapped, 8, &count) > 0);
  CHECK(count == 1);
}

// ---------------------------------------------------------------------------------------------
// Parallelism rules
// ---------------------------------------------------------------------------------------------

TEST_CASE("parallelism that does not fit the model is refused with a clear message") {
  const std::string at = kTinyGpt + ":5:14: error: ";
  CHECK(errors_of(kTinyGpt, {"parallelism.tp=16", "parallelism.pp=1", "parallelism.dp=1"}) ==
        at + "model heads 8 is not a multiple of tp 16\n" + at +
            "model kv_heads 8 is not a multiple of tp 16");
  CHECK(errors_of(kTinyGpt, {"parallelism.gpus=12", "parallelism.pp=3", "parallelism.dp=2"}) ==
        at + "model layers 4 is not a multiple of pp x virtual_stages 3; give "
             "'parallelism.stage_layers' for an uneven split");
  CHECK(errors_of(kTinyGpt, {"parallelism.gpus=12", "parallelism.pp=3", "parallelism.dp=2",
                             "parallelism.stage_layers=[2, 1, 1]"})
            .empty());
  const std::string stage_layers = errors_of(kTinyGpt, {"parallelism.stage_layers=[1, 2]"});
  CHECK(stage_layers.find("error: 'parallelism.stage_layers' must give 2 stages (pp x "
                          "virtual_stages) summing to the model's 4 layers; got 2 summing to 3") !=
        std::string::npos);
  CHECK(stage_layers.rfind("--set:1:", 0) == 0);
  CHECK(errors_of(kTinyGpt, {"parallelism.schedule=interleaved"}) ==
        at + "schedule 'interleaved' needs pp >= 2 and virtual_stages >= 2");
  CHECK(errors_of(kTinyGpt, {"parallelism.virtual_stages=2"}) ==
        at + "virtual_stages > 1 needs schedule 'interleaved'");
  const std::string workload = PRISMSIM_SOURCE_DIR "/workloads/tiny-gpt.yaml";
  CHECK(errors_of(kTinyGpt, {"workload.microbatch=3"}) ==
        workload +
            ":12:15: error: 'workload.global_batch' 16 is not a multiple of dp 4 x "
            "microbatch 3");
  CHECK(errors_of(kTinyGpt, {"parallelism.schedule=interleaved", "parallelism.virtual_stages=2",
                             "workload.microbatch=4"}) ==
        workload +
            ":12:15: error: schedule 'interleaved' needs the 1 microbatches per replica "
            "to be a multiple of pp 2");
}

TEST_CASE("analytic TP and CP collectives of equal size are charged by their own groups") {
  // tp 4 inside a node, cp 2 across two nodes (order tp, pp, cp, dp); with sequence parallelism
  // the TP all-gather and the CP key/value all-gather move the same 128 KiB.
  const Scenario s = load_scenario(
      kTinyGpt, {"parallelism.gpus=16", "parallelism.tp=4", "parallelism.cp=2", "parallelism.pp=2",
                 "parallelism.dp=1", "parallelism.sequence_parallel=true",
                 "parallelism.order=[tp, pp, cp, dp]", "engine.layer_collectives=analytic"});
  const Topology topology(s.platform);
  const Job job = build_transformer_job(s, topology);
  auto charged = [&](const std::string& name) {
    for (const Segment& segment : job.segments) {
      for (const Kernel& k : segment.kernels) {
        if (k.name == name) return k.seconds;
      }
    }
    return -1.0;
  };
  const double bytes = 512.0 * 256 * 2;  // b s h x 2 bytes / cp = b s x 2 kv d x 2 bytes / tp
  const double tp_s =
      predicted_call_seconds({0, 1, 2, 3}, topology, s.platform, CollectiveOp::all_gather,
                             bytes / 2, Algorithm::automatic);
  const double cp_s = predicted_call_seconds({0, 8}, topology, s.platform, CollectiveOp::all_gather,
                                             bytes / 2, Algorithm::automatic);
  CHECK(cp_s > tp_s);  // across nodes
  CHECK(charged("tp_all_gather") == rel(tp_s));
  CHECK(charged("cp_all_gather_kv") == rel(cp_s));
}

TEST_CASE("parallelism.stage_times scales each stage's compute kernels to its pass time") {
  // tiny-gpt on 16 GPUs: tp 2, pp 2 (layers 0-1 and 2-3), analytic TP collectives so that a pass
  // is one segment; gradients reduced after the backward pass (no buckets inside it); no input
  // gradient reduction hidden by a wgrad GEMM (it would cost what the scaled GEMM leaves).
  const std::vector<std::string> base = {"engine.layer_collectives=analytic",
                                         "parallelism.overlap_gradient_reduce=false",
                                         "parallelism.overlap_dgrad_reduce=false"};
  std::vector<std::string> timed = base;
  timed.push_back(
      "parallelism.stage_times=[{forward: 10ms, backward: 30ms}, "
      "{forward: 20ms, backward: 50ms}]");
  const Job plain = tiny_job(base);
  const Job job = tiny_job(timed);
  // Per segment of that name (one per tensor-parallel group: the same kernels): compute and
  // communication seconds.
  auto segments_of = [](const Job& j, const std::string& name) {
    std::vector<std::pair<double, double>> out;
    for (const Segment& segment : j.segments) {
      if (segment.name != name) continue;
      double compute = 0, communication = 0;
      for (const Kernel& k : segment.kernels) {
        if (k.kernel_class == KernelClass::communication)
          communication += k.seconds;
        else if (k.kernel_class != KernelClass::idle)
          compute += k.seconds;
      }
      out.emplace_back(compute, communication);
    }
    return out;
  };
  const std::pair<const char*, double> expected[] = {{"forward layers 0-1", 0.010},
                                                     {"backward layers 0-1", 0.030},
                                                     {"forward layers 2-3", 0.020},
                                                     {"backward layers 2-3", 0.050}};
  for (const auto& entry : expected) {
    const char* name = entry.first;  // not a structured binding: CAPTURE's lambda (clang 14)
    const double seconds = entry.second;
    CAPTURE(name);
    const auto timed_segments = segments_of(job, name);
    const auto plain_segments = segments_of(plain, name);
    REQUIRE(!timed_segments.empty());
    REQUIRE(timed_segments.size() == plain_segments.size());
    for (size_t i = 0; i < timed_segments.size(); ++i) {
      CHECK(timed_segments[i].first == rel(seconds, 1e-12));
      CHECK(plain_segments[i].first != rel(seconds, 1e-3));  // the kernel model's own time differs
      CHECK(timed_segments[i].second == rel(plain_segments[i].second, 1e-12));  // collectives kept
    }
  }
  CHECK(errors_of(kTinyGpt, {"parallelism.stage_times=[{forward: 10ms, backward: 30ms}]"})
            .find("'parallelism.stage_times' must give 2 stages (pp x virtual_stages); got 1") !=
        std::string::npos);
  CHECK(errors_of(kTinyGpt,
                  {"parallelism.stage_times=[{forward: 10ms}, {forward: 1ms, backward: 2ms}]"})
            .find("backward") != std::string::npos);
}
