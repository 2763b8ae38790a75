#pragma once

#include <optional>
#include <string>
#include <vector>

#include "duration_samples.hpp"
#include "variability/fit.hpp"

namespace prismsim {

/// Choices of a calibration (defaults are `prismsim calibrate`'s).
struct CalibrationOptions {
  size_t min_samples = 30;  ///< signatures with fewer samples are reported and skipped
  /// A family is accepted when its KS distance is at most max(max_ks, 1.36 / sqrt(n)) (within
  /// max_ks, or not rejected at the 5% level); else a family fitted to the body mixed with the
  /// measured heavy tail, when that is accepted; otherwise the empirical pool is kept.
  double max_ks = 0.02;
  double outlier_z = 3.5;              ///< robust z-score of a slow GPU or node
  double outlier_min_slowdown = 1.05;  ///< and at least this much slower than the median
  size_t empirical_points = 1000;      ///< quantiles kept of an empirical pool
  size_t min_gpus = 8;                 ///< GPUs needed to fit the spatial (per-GPU) variation
};

/// The families fitted, in the order of SlowdownFit::families (fit_families' order).
inline constexpr const char* kFamilyNames[] = {"normal", "lognormal", "gamma"};

/// A sample of slowdowns and the distribution chosen for it.
struct SlowdownFit {
  size_t samples = 0;
  double p50 = 0, p95 = 0, p99 = 0, max = 0;  ///< of the sample
  std::vector<Fit> families;                  ///< normal (floored), lognormal, gamma when fitted
  std::string chosen;  ///< family name, FAMILY+tail (a mixture), "empirical" or "constant"
  DistributionSpec distribution;  ///< what the section uses
  double ks_distance = 0;         ///< of the chosen distribution
  double empirical_ks = 0;  ///< of the empirical alternative (the quantile table kept if chosen)
  /// For plots: probabilities and the sample's quantiles at them.
  std::vector<double> probabilities, quantiles;
};

/// One signature: its nominal duration and the fit of its slowdowns, or why it was skipped.
struct SignatureFit {
  uint32_t signature = 0;
  size_t samples = 0;       ///< all of its samples
  size_t bubble_waits = 0;  ///< transfers: samples set apart as waiting (Otsu)
  double nominal_s = 0;     ///< median duration (kernels: after dividing out GPU speed)
  std::string target;       ///< the section entry it feeds: "kernels.gemm", ...; "" if none
  std::optional<SlowdownFit> fit;
  std::string skipped;  ///< why it has no fit
};

/// A slow GPU or node (candidate for the slow-node list).
struct Outlier {
  std::string id;  ///< GPU or node id as in the input
  double slowdown = 1;
  double z = 0;  ///< robust z-score of the log slowdown
};

/// Per-GPU persistent speed (spatial variation).
struct SpatialFit {
  size_t gpus = 0, nodes = 0;                              ///< with identity and enough samples
  std::vector<std::pair<std::string, double>> gpu_factor;  ///< GPU id -> slowdown (median 1)
  std::optional<SlowdownFit> per_gpu;                      ///< within a node when nodes are known
  double node_sigma = 0;  ///< lognormal sigma between nodes (0: none found)
  std::vector<Outlier> slow_gpus, slow_nodes;
  std::string skipped;  ///< why there is no spatial fit
};

/// An entry of the fitted section and the signatures it pools.
struct TargetFit {
  std::string target;  ///< "kernels.gemm", "network.jitter.inter_node",
                       ///< "network.transfer_jitter.intra_node"
  size_t signatures = 0;
  SlowdownFit fit;
};

/// Step-level variation shown by kernel samples that carry their step (ProfilerStep#
/// annotations, a CSV step column): the random-effects decomposition of the timelines
/// (docs/calibration.md) over kernel signatures. Reported; the kernel noise fitted here contains
/// it, so it is not written as levels.
struct KernelStepLevels {
  size_t samples = 0, steps = 0, gpus = 0;
  bool step_estimable = false, gpu_step_estimable = false;
  double step_sigma = 0, gpu_step_sigma = 0, residual_sigma = 0;
  std::string skipped;  ///< why there is none
};

/// Everything a calibration found.
struct Calibration {
  std::vector<SignatureFit> signatures;
  std::vector<TargetFit> targets;
  SpatialFit spatial;
  KernelStepLevels step_levels;
};

/// Fits the samples: per signature a nominal and the distribution of slowdowns around it; per
/// GPU a persistent speed (when GPUs are known), outliers flagged; pooled per kernel class and
/// per collective scope. Pure and deterministic. See docs/calibration.md.
Calibration calibrate(const SampleSet& set, const CalibrationOptions& options);

/// The step-level decomposition of the kernel samples that carry a step and a GPU.
KernelStepLevels kernel_step_levels(const SampleSet& set);

/// Fits families to `slowdowns` (all positive) and chooses one as CalibrationOptions says.
SlowdownFit fit_slowdowns(std::vector<double> slowdowns, const CalibrationOptions& options);
/// The sample's own quantiles (`options.empirical_points` of them at most) as an empirical
/// distribution, with the sample's percentiles; for values no family fits (zeros included).
SlowdownFit empirical_fit(std::vector<double> values, const CalibrationOptions& options);

/// Otsu's threshold on `values` (sorted ascending): the index of the first value of the upper
/// class, and the separability (between-class over total variance, in [0, 1]).
struct OtsuSplit {
  size_t upper_begin = 0;
  double separability = 0;
};
OtsuSplit otsu_split(const std::vector<double>& sorted);

}  // namespace prismsim
