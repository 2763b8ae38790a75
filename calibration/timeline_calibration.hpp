#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "timeline.hpp"
#include "variability_calibration.hpp"

namespace prismsim {

/// One compute pass for the variance decomposition.
struct PassSample {
  uint32_t signature = 0;   ///< pass type: direction x stage (a mean of its own)
  int32_t gpu = 0;          ///< dense GPU index
  int32_t step = 0;         ///< dense step index
  int32_t replica = -1;     ///< -1 unknown
  int32_t microbatch = -1;  ///< -1 unknown
  bool forward = true;
  double log_duration = 0;
};

/// Variances of log durations by level (random-effects estimates; 0 when the data shows none).
struct VarianceComponents {
  double step = 0;           ///< shared by every GPU in a step
  double gpu = 0;            ///< persistent per GPU
  double gpu_step = 0;       ///< per GPU and step
  double microbatch = 0;     ///< per replica x microbatch x step, shared by its stages' passes
  double forward_pass = 0;   ///< residual of a forward pass
  double backward_pass = 0;  ///< residual of a backward pass
};

/// Estimates the components from passes by moments (docs/calibration.md, "Timelines"): log
/// durations centred per signature; step, GPU and GPU x step means; within-cell residuals, whose
/// covariance across GPUs of one microbatch gives the microbatch level and whose rest the
/// residual of each direction. `estimable` (optional) gets which levels the design identifies.
struct Estimability {
  bool step = false, gpu = false, gpu_step = false, microbatch = false, pass = false;
};
VarianceComponents estimate_components(const std::vector<PassSample>& passes,
                                       Estimability* estimable = nullptr);

/// A level's estimate with its bootstrap interval.
struct LevelEstimate {
  std::string level;   ///< "step", "gpu_step", "microbatch", "forward_pass", "backward_pass", "gpu"
  std::string target;  ///< where it goes: "levels.step", "gpus.per_gpu", ...
  bool estimable = false;
  std::string reason;                    ///< why not estimable, or why not fitted
  double sigma = 0;                      ///< sqrt of the variance of log durations
  double sigma_low = 0, sigma_high = 0;  ///< 90% bootstrap interval over steps
  std::optional<SlowdownFit> fit;        ///< the distribution written (when sigma > 0)
};

/// Per pipeline stage and direction: compute-pass times.
struct StageTime {
  int32_t stage = -1;
  bool forward = true;
  size_t passes = 0;
  double mean_s = 0;     ///< arithmetic mean
  double geomean_s = 0;  ///< exp(mean log): the nominal the level factors multiply
  double p50_s = 0, p95_s = 0;
};

/// A collective operation's transfer times (end minus the last member's start).
struct CollectiveTransfer {
  std::string optype;
  std::string op;        ///< all_reduce, reduce_scatter, all_gather
  std::string group_by;  ///< "stage" (data-parallel) or "replica" (first and last stage)
  size_t calls = 0;
  size_t members = 0;  ///< largest group seen
  double transfer_p50_s = 0, transfer_p95_s = 0;
  double wait_mean_s = 0;             ///< mean over members of (last member's start - own start)
  double spread = 0;                  ///< robust sd of log(transfer / the call's nominal)
  double resolution = 0;              ///< the spread timestamp rounding alone would give
  std::optional<SlowdownFit> jitter;  ///< fitted only when spread shows jitter
  std::string reason;                 ///< why none was fitted
};

/// Pipeline transfers of one direction (forward: activations to the next stage; backward:
/// gradients to the previous one): the k-th send of a rank in a step matched with the k-th receive
/// of the same replica's neighbouring stage; transfer = the receive's end minus the later of the
/// two starts (a receive posted early waits for the send; a send posted early waits for the
/// receive).
struct P2pTransfer {
  std::string direction;  ///< "forward" or "backward"
  size_t pairs = 0;
  double transfer_p50_s = 0, transfer_p95_s = 0;
  std::string reason;  ///< why no pair was matched (pairs == 0)
};

/// What a timeline calibration found.
struct TimelineCalibration {
  std::vector<std::string> inputs;
  size_t ops = 0, passes = 0, ranks = 0, steps = 0, gpus_per_node = 8;
  std::vector<LevelEstimate> levels;
  std::vector<StageTime> stages;
  size_t launch_gap_samples = 0;
  std::optional<SlowdownFit> launch_gap;  ///< seconds
  std::string launch_gap_reason;
  std::vector<CollectiveTransfer> collectives;
  std::vector<P2pTransfer> pipeline;  ///< directions with p2p ops in the timelines
  std::vector<std::string> notes;     ///< what could not be estimated and why
  int bootstrap_replicates = 0;
  uint64_t bootstrap_seed = 0;
};

struct TimelineOptions {
  int bootstrap_replicates = 200;
  uint64_t bootstrap_seed = 1;
  size_t gpus_per_node = 8;
  /// A collective's jitter is fitted when the robust spread of its log transfer ratios exceeds
  /// max(min_jitter_spread, 3 x what the timestamps' resolution gives).
  double min_jitter_spread = 0.01;
  CalibrationOptions fit;
};

/// Calibrates levels, launch gaps, stage times, collective and pipeline transfers from timelines.
/// Pure and deterministic (the bootstrap is seeded).
TimelineCalibration calibrate_timelines(const std::vector<Timeline>& timelines,
                                        const TimelineOptions& options);

/// The `variability:` section (levels, gpus.per_gpu, host.launch_gap, network.jitter) with its
/// provenance in comments; empirical pools in `<stem>.<entry>.txt` beside it.
void write_timeline_section(const TimelineCalibration& c, const std::string& path,
                            const std::string& command);
/// The terminal report and the JSON report (`--report`).
std::string timeline_report(const TimelineCalibration& c);
std::string timeline_json(const TimelineCalibration& c);

}  // namespace prismsim
