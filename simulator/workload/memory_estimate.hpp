#pragma once

#include <string>
#include <vector>

#include "config/scenario.hpp"

namespace prismsim {

/// Bytes one GPU holds at its peak during a step of a transformer workload.
struct MemoryEstimate {
  int stage = 0;  ///< the pipeline rank this estimate is for
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;    ///< fp32 master weights and Adam's two moments
  double activations = 0;  ///< saved for backward, for the microbatches in flight
  double transient = 0;    ///< the largest short-lived buffer (logits, one recomputed layer)

  double total() const { return weights + gradients + optimizer + activations + transient; }
  /// "61.2 GiB (weights 4.3, gradients 4.3, optimizer 25.9, activations 26.7, transient 0.1)"
  std::string str() const;
};

/// Activation bytes one layer saves for backward, per microbatch, on one rank (Korthikanti et al.
/// 2022, "Reducing activation recomputation in large transformer models", generalised to
/// grouped-query attention and gated MLPs; flash attention saves only softmax statistics).
double layer_activation_bytes(const Scenario& scenario);

/// Per pipeline rank, the memory of its peak: weights in the workload precision, gradients in
/// their reduce precision, optimizer state (fp32 master weights and two moments, 12 B/param)
/// sharded over data-parallel ranks for zero1, zero2 and fsdp (gradients too for zero2 and fsdp,
/// weights too for fsdp; over one replica with HSDP), activations for the microbatches the
/// schedule holds at once.
std::vector<MemoryEstimate> estimate_memory(const Scenario& scenario);

/// Throws InputError (at the scenario's parallelism section) when the worst stage's estimate
/// exceeds the GPU's memory, unless engine.check_memory is off.
void check_memory(const Scenario& scenario);

}  // namespace prismsim
