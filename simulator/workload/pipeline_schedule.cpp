#include "workload/pipeline_schedule.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>

namespace prismsim {
namespace {

/// Megatron-LM's interleaved order: the k-th forward (or backward) of a rank runs microbatch
/// (k / (pp v)) pp + k % pp of chunk (k / pp) % v (backwards visit chunks last first).
PipelinePass interleaved_pass(int k, bool forward, int pp, int v) {
  const int group = k / (pp * v);
  const int chunk = (k / pp) % v;
  return PipelinePass{forward, group * pp + k % pp, forward ? chunk : v - 1 - chunk};
}

}  // namespace

std::vector<PipelinePass> pipeline_passes(PipelineSchedule schedule, int pp, int virtual_stages,
                                          int microbatches, int stage) {
  std::vector<PipelinePass> passes;
  const int m = microbatches;
  if (schedule == PipelineSchedule::gpipe) {
    for (int mb = 0; mb < m; ++mb) passes.push_back({true, mb, 0});
    for (int mb = 0; mb < m; ++mb) passes.push_back({false, mb, 0});
    return passes;
  }
  const int v = schedule == PipelineSchedule::interleaved ? virtual_stages : 1;
  const int total = m * v;  // forwards (and backwards) this rank runs
  int warmup = 0;
  if (v == 1) {
    warmup = std::min(pp - stage - 1, m);
  } else {
    if (m % pp != 0) throw std::invalid_argument("interleaved: microbatches % pp != 0");
    // As Megatron: with as many microbatches as stages, every forward runs first.
    warmup = m == pp ? total : std::min((pp - stage - 1) * 2 + (v - 1) * pp, total);
  }
  auto forward = [&](int k) {
    return v == 1 ? PipelinePass{true, k, 0} : interleaved_pass(k, true, pp, v);
  };
  auto backward = [&](int k) {
    return v == 1 ? PipelinePass{false, k, 0} : interleaved_pass(k, false, pp, v);
  };
  int f = 0, b = 0;
  for (; f < warmup; ++f) passes.push_back(forward(f));
  while (f < total) {
    passes.push_back(forward(f++));
    passes.push_back(backward(b++));
  }
  while (b < total) passes.push_back(backward(b++));
  return passes;
}

double peak_held(const std::vector<PipelinePass>& passes,
                 const std::vector<double>& held_per_chunk) {
  double held = 0, most = 0;
  for (const auto& pass : passes) {
    const double bytes = held_per_chunk.at(static_cast<size_t>(pass.chunk));
    held += pass.forward ? bytes : -bytes;
    most = std::max(most, held);
  }
  return most;
}

double pipeline_makespan(PipelineSchedule schedule, int pp, int virtual_stages, int microbatches,
                         const std::vector<double>& forward_s,
                         const std::vector<double>& backward_s, double transfer_s,
                         bool receives_ahead, const std::vector<double>& first_backward_s) {
  const auto& first_backward = first_backward_s.empty() ? backward_s : first_backward_s;
  const int v = schedule == PipelineSchedule::interleaved ? virtual_stages : 1;
  const int stages = pp * v;
  std::vector<std::vector<PipelinePass>> order(static_cast<size_t>(pp));
  for (int s = 0; s < pp; ++s)
    order[static_cast<size_t>(s)] = pipeline_passes(schedule, pp, v, microbatches, s);
  // Completion time of each (forward?, microbatch, virtual stage).
  std::map<std::tuple<bool, int, int>, double> done;
  std::vector<size_t> next(static_cast<size_t>(pp), 0);
  std::vector<double> free_at(static_cast<size_t>(pp), 0.0);
  // Per rank and direction (forward, backward): when its last pass of that direction ended.
  std::vector<std::array<double, 2>> direction_done(static_cast<size_t>(pp), {0.0, 0.0});
  size_t remaining = 0;
  for (const auto& o : order) remaining += o.size();
  while (remaining > 0) {
    bool progressed = false;
    for (int s = 0; s < pp; ++s) {
      auto& i = next[static_cast<size_t>(s)];
      while (i < order[static_cast<size_t>(s)].size()) {
        const PipelinePass& pass = order[static_cast<size_t>(s)][i];
        const int vs = virtual_stage(pass.chunk, s, pp);
        double start = free_at[static_cast<size_t>(s)];
        // A forward needs the previous virtual stage's forward; a backward the next one's
        // backward (the last virtual stage starts its backward from its own forward). A
        // transfer between ranks starts when the sender has the data and the receiver has
        // posted its receive, on reaching this pass (rendezvous, as NCCL's send/recv) or, ahead,
        // after its previous pass of the same direction.
        const bool first = pass.forward ? vs == 0 : vs == stages - 1;
        const size_t direction = pass.forward ? 0 : 1;
        if (!first) {
          const int from = pass.forward ? vs - 1 : vs + 1;
          auto it = done.find({pass.forward, pass.microbatch, from});
          if (it == done.end()) break;
          const double posted =
              receives_ahead ? direction_done[static_cast<size_t>(s)][direction] : start;
          start = (from % pp) == s ? std::max(start, it->second)
                                   : std::max(start, std::max(posted, it->second) + transfer_s);
        }
        const double duration = pass.forward           ? forward_s[static_cast<size_t>(vs)]
                                : pass.microbatch == 0 ? first_backward[static_cast<size_t>(vs)]
                                                       : backward_s[static_cast<size_t>(vs)];
        free_at[static_cast<size_t>(s)] = start + duration;
        direction_done[static_cast<size_t>(s)][direction] = start + duration;
        done[{pass.forward, pass.microbatch, vs}] = start + duration;
        ++i;
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) throw std::logic_error("pipeline schedule deadlocks");
  }
  return *std::max_element(free_at.begin(), free_at.end());
}

}  // namespace prismsim
