#pragma once

#include <vector>

#include "config/scenario.hpp"

namespace prismsim {

/// One forward or backward pass of one microbatch through one model chunk of a pipeline rank.
struct PipelinePass {
  bool forward = true;
  int microbatch = 0;
  int chunk = 0;  ///< model chunk on this rank (interleaved schedules have several)

  bool operator==(const PipelinePass&) const = default;
};

/// The order in which pipeline rank `stage` (of `pp`) runs its passes, as Megatron-LM does:
/// GPipe (all forwards, then all backwards), 1F1B (pp - stage - 1 warm-up forwards, then one
/// forward one backward, then the remaining backwards) or interleaved 1F1B over
/// `virtual_stages` chunks per rank (microbatches in groups of pp, chunk by chunk).
std::vector<PipelinePass> pipeline_passes(PipelineSchedule schedule, int pp, int virtual_stages,
                                          int microbatches, int stage);

/// The most a rank holds at once when each forward pass of chunk c saves `held_per_chunk[c]` until
/// its backward: with all 1, how many microbatches' activations are in flight.
double peak_held(const std::vector<PipelinePass>& passes,
                 const std::vector<double>& held_per_chunk);

/// Virtual stage of `chunk` on pipeline rank `stage`: chunk x pp + stage (layers are split over
/// virtual stages in this order; data flows from virtual stage v to v + 1).
inline int virtual_stage(int chunk, int stage, int pp) { return chunk * pp + stage; }

/// Duration of one step of the pipeline when every pass of virtual stage v takes
/// forward_s[v] / backward_s[v] and each transfer between virtual stages on different ranks takes
/// transfer_s: passes run in schedule order on each rank; a transfer starts once the sender has
/// finished the producing pass and the receiver is free to take it, and the pass follows it;
/// with `receives_ahead`, once the receiver has finished its previous pass of the same direction
/// (it posted the receive then: Megatron's overlap_p2p_comm), so that the transfer can run while
/// it computes another pass. Microbatch 0's backward passes take first_backward_s[v] where given
/// (autograd's first weight gradients, which add into nothing). The closed form that the
/// simulator must match where nothing else interferes.
double pipeline_makespan(PipelineSchedule schedule, int pp, int virtual_stages, int microbatches,
                         const std::vector<double>& forward_s,
                         const std::vector<double>& backward_s, double transfer_s,
                         bool receives_ahead = false,
                         const std::vector<double>& first_backward_s = {});

}  // namespace prismsim
