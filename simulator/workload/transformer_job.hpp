#pragma once

#include <array>
#include <initializer_list>
#include <vector>

#include "config/scenario.hpp"
#include "platform/topology.hpp"
#include "workload/job_shape.hpp"
#include "workload/program.hpp"
#include "workload/transformer_model.hpp"

namespace prismsim {

/// Rank coordinates in the four parallel dimensions, laid out in ParallelismSpec::order
/// (innermost first): rank = sum over dims of coordinate x stride. Rank r runs on GPU r, so the
/// order decides which dimension stays inside a node.
class RankGrid {
 public:
  explicit RankGrid(const ParallelismSpec& parallelism);

  std::array<int, 4> coords(int rank) const;  ///< indexed by ParallelDim
  int rank(const std::array<int, 4>& coords) const;
  /// The ranks that differ from `rank` only along `dims`, in rank order (so rings follow GPUs).
  std::vector<int> group(int rank, std::initializer_list<ParallelDim> dims) const;
  int degree(ParallelDim dim) const { return degree_[static_cast<size_t>(dim)]; }
  int ranks() const { return ranks_; }

 private:
  std::array<int, 4> degree_{};
  std::array<int, 4> stride_{};
  int ranks_ = 1;
};

/// Layers [first, first + count) of each virtual stage.
struct StageLayers {
  int first = 0;
  int count = 0;
};
std::vector<StageLayers> split_layers(const ParallelismSpec& parallelism, int layers);

/// Part of a pass whose weights are one piece: the embedding, one layer, or the output head.
struct PassUnit {
  std::vector<PassItem> items;
  double parameters = 0;  ///< on one rank (its tensor-parallel share): the weights it holds
  /// Of those, the ones trained (gradients, their reduction, the optimizer): all, or under LoRA
  /// the adapters' alone.
  double trainable = 0;
  /// Of those, the weights of its linear layers (the layers' projections; not the norms, the
  /// embedding or the output layer): what torchao's float8 all-gathers in FP8.
  double linear_weights = 0;
};

/// Bytes of a unit's FSDP all-gather (and of its gathered weights): `element_bytes` each, the
/// linear weights a byte each under torchao's FP8 all-gather.
double fsdp_gathered_bytes(const PassUnit& unit, double element_bytes, bool fp8_all_gather);

/// The units of a forward or backward pass of virtual stage `vs`, in execution order: the
/// embedding on the first virtual stage, its layers, the output head on the last.
std::vector<PassUnit> pass_units(const LayerContext& context,
                                 const std::vector<StageLayers>& layers, bool forward, int vs);

/// The context of one rank's layers (tensor/context-parallel slice of a microbatch).
LayerContext layer_context(const Scenario& scenario);
/// How many of a chunk's `count` layers (the first ones) recompute as `context.recompute` says;
/// the others keep their activations. All of them, unless `recompute_layers` limits a full
/// recompute.
int recomputed_layers(const LayerContext& context, int count);

/// Microbatches each data-parallel replica runs per step.
int microbatches_per_replica(const Scenario& scenario);
/// Backward passes of the output layer whose weight gradients wait for the pipeline flush: the
/// first `wgrad_deferral_limit` of them (0: all), none without `defer_embedding_wgrad`.
int deferred_embedding_wgrads(const Scenario& scenario);
/// The embedding table's parameters one rank trains: its tensor-parallel share, none under LoRA
/// (frozen). A tied table's gradient, summed over the first and last stages, is that many.
double trained_embedding_parameters(const LayerContext& context);

/// Builds every rank's program for a transformer workload: its pipeline passes in schedule order
/// with their kernels fused into segments, point-to-point transfers between stages,
/// tensor/context-parallel collectives (in the network, or charged analytically inside the
/// segments), data-parallel gradient collectives (DDP buckets overlapped with the last backward
/// pass on a second stream, ZeRO-1, or FSDP per-layer gathers and reductions) and the optimizer.
Job build_transformer_job(const Scenario& scenario, const Topology& topology);

/// The shape of build_transformer_job's job from one program per pipeline stage (the ranks of a
/// stage have programs of one shape): cheap enough for `prismsim check` at any size.
RunShape transformer_job_shape(const Scenario& scenario, const Topology& topology);

}  // namespace prismsim
