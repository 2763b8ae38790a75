#include "variability_calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>

#include "stats/distribution.hpp"
#include "timeline_calibration.hpp"

namespace prismsim {
namespace {

/// Otsu separability above which transfer durations are two populations (a unimodal normal
/// sample scores about 2/pi = 0.64).
constexpr double kBimodal = 0.8;
/// Samples of a signature on one GPU needed to take its median there.
constexpr size_t kMinPerGpu = 3;
/// Robust spread below which GPUs count as identical (log units).
constexpr double kMinSpread = 1e-4;
/// Points of a fit's quantile table kept for plots.
constexpr size_t kPlotPoints = 200;
/// A heavy tail: values more than kTailFence robust standard deviations of the logs above their
/// median, at most kMaxTail of the sample, kept as at most kTailPoints quantiles.
constexpr double kTailFence = 4;
constexpr double kMaxTail = 0.05;
constexpr size_t kTailPoints = 100;

double median_of(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

/// Quantiles at the midpoints (i + 0.5) / k of k equal slices.
void midpoint_quantiles(const std::vector<double>& sorted, size_t k, std::vector<double>* p,
                        std::vector<double>* q) {
  for (size_t i = 0; i < k; ++i) {
    const double prob = (static_cast<double>(i) + 0.5) / static_cast<double>(k);
    if (p != nullptr) p->push_back(prob);
    q->push_back(quantile_sorted(sorted, prob));
  }
}

/// Robust z-scores of `logs` (median and 1.4826 x median absolute deviation).
std::vector<double> robust_z(const std::vector<double>& logs) {
  const double center = median_of(logs);
  std::vector<double> deviations;
  for (double l : logs) deviations.push_back(std::abs(l - center));
  const double spread = std::max(kMinSpread, 1.4826 * median_of(deviations));
  std::vector<double> z;
  for (double l : logs) z.push_back((l - center) / spread);
  return z;
}

/// The families fitted to `sorted` (ascending), the normal truncated well below the smallest
/// value so that a slowdown stays positive.
std::vector<Fit> floored_families(const std::vector<double>& sorted) {
  std::vector<Fit> fits = fit_families(sorted);
  Fit& normal = fits.front();
  normal.distribution.floor = sorted.front() / 2;
  normal.ks_distance = ks_distance_to(sorted, normal.distribution);
  return fits;
}

size_t best_family(const std::vector<Fit>& fits) {
  size_t best = 0;
  for (size_t i = 1; i < fits.size(); ++i) {
    if (fits[i].ks_distance < fits[best].ks_distance) best = i;
  }
  return best;
}

/// The best family fitted to the values below a robust fence (kTailFence robust standard
/// deviations of the logs above their median), mixed with the empirical values above it, when
/// those are at most kMaxTail of the sample: ("lognormal+tail", the mixture and its KS distance).
std::optional<std::pair<std::string, Fit>> body_and_tail(const std::vector<double>& sorted) {
  std::vector<double> logs;
  for (double v : sorted) logs.push_back(std::log(v));
  const std::vector<double> z = robust_z(logs);  // ascending, as `sorted` is
  const auto body_size =
      static_cast<std::ptrdiff_t>(std::upper_bound(z.begin(), z.end(), kTailFence) - z.begin());
  const std::vector<double> body(sorted.begin(), sorted.begin() + body_size);
  const std::vector<double> tail(sorted.begin() + body_size, sorted.end());
  if (tail.empty() ||
      static_cast<double>(tail.size()) > kMaxTail * static_cast<double>(sorted.size()) ||
      body.size() < 2 || body.front() == body.back()) {
    return std::nullopt;
  }
  const std::vector<Fit> fits = floored_families(body);
  const size_t best = best_family(fits);
  DistributionSpec measured_tail;
  measured_tail.family = DistributionSpec::Family::empirical;
  midpoint_quantiles(tail, std::min(kTailPoints, tail.size()), nullptr, &measured_tail.samples);
  const double weight = static_cast<double>(tail.size()) / static_cast<double>(sorted.size());
  Fit mixture;
  mixture.distribution.family = DistributionSpec::Family::mixture;
  mixture.distribution.components = {{1 - weight, fits[best].distribution},
                                     {weight, measured_tail}};
  mixture.ks_distance = ks_distance_to(sorted, mixture.distribution);
  return std::pair{std::string(kFamilyNames[best]) + "+tail", mixture};
}

/// The spatial fit from each measured GPU's factor (`factor`, rescaled here so that GPUs that are
/// neither slow nor on a slow node have median 1): slow GPUs and nodes, the per-GPU distribution
/// (within a node when nodes are known) and the spread between nodes.
void fit_spatial(const SampleSet& set, const std::vector<size_t>& measured,
                 const CalibrationOptions& options, std::vector<double>& factor,
                 SpatialFit& spatial) {
  const auto& node_of = set.gpu_nodes();
  const auto median_factor = [&](auto&& keep) {
    std::vector<double> values;
    for (size_t g : measured) {
      if (keep(g)) values.push_back(factor[g]);
    }
    return median_of(values);
  };
  const auto rescale = [&](double center) {
    for (size_t g : measured) factor[g] /= center;
  };
  rescale(median_factor([](size_t) { return true; }));
  // Outliers by robust z-scores of log factors: GPUs, then nodes (geometric means).
  std::vector<double> logs;
  for (size_t g : measured) logs.push_back(std::log(factor[g]));
  const std::vector<double> z = robust_z(logs);
  std::map<int32_t, std::vector<double>> node_logs;
  bool all_placed = true;
  for (size_t i = 0; i < measured.size(); ++i) {
    const int32_t node = node_of[measured[i]];
    if (node < 0)
      all_placed = false;
    else
      node_logs[node].push_back(logs[i]);
  }
  std::map<int32_t, double> node_mean;
  for (const auto& [node, l] : node_logs) {
    node_mean[node] = std::accumulate(l.begin(), l.end(), 0.0) / static_cast<double>(l.size());
  }
  std::map<int32_t, double> slow_node_z;
  if (node_mean.size() >= 3) {
    std::vector<double> means;
    for (const auto& [node, m] : node_mean) means.push_back(m);
    const std::vector<double> nz = robust_z(means);
    size_t i = 0;
    for (const auto& [node, m] : node_mean) {
      if (nz[i] > options.outlier_z && std::exp(m) >= options.outlier_min_slowdown) {
        slow_node_z[node] = nz[i];
      }
      ++i;
    }
  }
  spatial.nodes = node_mean.size();
  const auto on_slow_node = [&](size_t g) { return slow_node_z.contains(node_of[g]); };
  std::vector<bool> slow_gpu(factor.size(), false);
  for (size_t i = 0; i < measured.size(); ++i) {
    slow_gpu[measured[i]] =
        z[i] > options.outlier_z && factor[measured[i]] >= options.outlier_min_slowdown;
  }
  // The reference speed is the healthy GPUs' median, not one that slow GPUs pull up.
  const double center = median_factor([&](size_t g) { return !slow_gpu[g] && !on_slow_node(g); });
  rescale(center);
  for (size_t i = 0; i < measured.size(); ++i) {
    const size_t g = measured[i];
    spatial.gpu_factor.emplace_back(set.gpu_ids()[g], factor[g]);
    // A slow node's GPUs are slow because the node is.
    if (slow_gpu[g] && !on_slow_node(g))
      spatial.slow_gpus.push_back({set.gpu_ids()[g], factor[g], z[i]});
  }
  for (const auto& [node, nz] : slow_node_z) {
    spatial.slow_nodes.push_back(
        {set.node_ids()[static_cast<size_t>(node)], std::exp(node_mean[node]) / center, nz});
  }
  // Per-GPU spread from the GPUs off slow nodes.
  std::vector<double> per_gpu;
  std::map<int32_t, std::vector<double>> healthy;  // node -> log factors
  for (size_t g : measured) {
    if (on_slow_node(g)) continue;
    per_gpu.push_back(factor[g]);
    if (all_placed) healthy[node_of[g]].push_back(std::log(factor[g]));
  }
  bool by_node = all_placed && healthy.size() >= 2;
  for (const auto& [node, l] : healthy) by_node = by_node && l.size() >= 2;
  if (by_node) {
    // Random effects: log factor = node effect + GPU effect. Within-node residuals, their
    // variance corrected for the node mean they were taken from; the node effect's variance
    // is what the node means vary beyond the residuals' share.
    per_gpu.clear();
    double within = 0, dof = 0, inverse_sizes = 0;
    std::vector<double> means;
    for (const auto& [node, l] : healthy) {
      const double n = static_cast<double>(l.size());
      const double m = std::accumulate(l.begin(), l.end(), 0.0) / n;
      for (double v : l) {
        within += (v - m) * (v - m);
        per_gpu.push_back(std::exp((v - m) * std::sqrt(n / (n - 1))));
      }
      dof += n - 1;
      inverse_sizes += 1 / n;
      means.push_back(m);
    }
    const double k = static_cast<double>(means.size());
    const double mean_of_means = std::accumulate(means.begin(), means.end(), 0.0) / k;
    double between = 0;
    for (double m : means) between += (m - mean_of_means) * (m - mean_of_means) / (k - 1);
    spatial.node_sigma = std::sqrt(std::max(0.0, between - within / dof * inverse_sizes / k));
  }
  spatial.per_gpu = fit_slowdowns(per_gpu, options);
}

}  // namespace

OtsuSplit otsu_split(const std::vector<double>& sorted) {
  OtsuSplit best;
  const size_t n = sorted.size();
  if (n < 2) return best;
  double total = 0, total_sq = 0;
  for (double v : sorted) {
    total += v;
    total_sq += v * v;
  }
  const double mean = total / static_cast<double>(n);
  const double variance = total_sq / static_cast<double>(n) - mean * mean;
  if (variance <= 0) return best;
  double lower_sum = 0;
  double best_between = -1;
  for (size_t i = 1; i < n; ++i) {
    lower_sum += sorted[i - 1];
    if (sorted[i] == sorted[i - 1]) continue;  // a threshold lies between distinct values
    const double w0 = static_cast<double>(i) / static_cast<double>(n);
    const double mu0 = lower_sum / static_cast<double>(i);
    const double mu1 = (total - lower_sum) / static_cast<double>(n - i);
    const double between = w0 * (1 - w0) * (mu0 - mu1) * (mu0 - mu1);
    if (between > best_between) {
      best_between = between;
      best.upper_begin = i;
    }
  }
  best.separability = std::clamp(best_between / variance, 0.0, 1.0);
  return best;
}

namespace {

/// A fit's description of the sorted sample: its size and percentiles.
SlowdownFit described(const std::vector<double>& sorted) {
  SlowdownFit out;
  out.samples = sorted.size();
  out.p50 = quantile_sorted(sorted, 0.5);
  out.p95 = quantile_sorted(sorted, 0.95);
  out.p99 = quantile_sorted(sorted, 0.99);
  out.max = sorted.back();
  return out;
}

}  // namespace

SlowdownFit empirical_fit(std::vector<double> values, const CalibrationOptions& options) {
  if (values.empty()) throw std::invalid_argument("no values to keep");
  std::sort(values.begin(), values.end());
  SlowdownFit out = described(values);
  out.chosen = "empirical";
  out.distribution.family = DistributionSpec::Family::empirical;
  midpoint_quantiles(values, std::min(values.size(), options.empirical_points), nullptr,
                     &out.distribution.samples);
  return out;
}

SlowdownFit fit_slowdowns(std::vector<double> slowdowns, const CalibrationOptions& options) {
  if (slowdowns.empty()) throw std::invalid_argument("no slowdowns to fit");
  std::sort(slowdowns.begin(), slowdowns.end());
  SlowdownFit out = described(slowdowns);
  midpoint_quantiles(slowdowns, std::min(kPlotPoints, slowdowns.size()), &out.probabilities,
                     &out.quantiles);
  if (slowdowns.front() == slowdowns.back()) {
    out.chosen = "constant";
    out.distribution = DistributionSpec::constant_at(slowdowns.front());
    return out;
  }
  // The empirical alternative: its quantile table, and how far that is from the sample (both are
  // step functions: the two-sample distance handles their ties).
  DistributionSpec empirical;
  empirical.family = DistributionSpec::Family::empirical;
  midpoint_quantiles(slowdowns, std::min(options.empirical_points, slowdowns.size()), nullptr,
                     &empirical.samples);
  out.empirical_ks = ks_distance(slowdowns, empirical.samples);
  out.families = floored_families(slowdowns);
  const size_t best = best_family(out.families);
  const double accept =
      std::max(options.max_ks, 1.36 / std::sqrt(static_cast<double>(slowdowns.size())));
  if (out.families[best].ks_distance <= accept) {
    out.chosen = kFamilyNames[best];
    out.distribution = out.families[best].distribution;
    out.ks_distance = out.families[best].ks_distance;
    return out;
  }
  // A rare heavy tail (stalls, retries) spoils every family's fit to the whole sample: fit the
  // body, and keep the tail as measured, as a mixture.
  if (auto mixture = body_and_tail(slowdowns); mixture && mixture->second.ks_distance <= accept) {
    out.chosen = mixture->first;
    out.distribution = mixture->second.distribution;
    out.ks_distance = mixture->second.ks_distance;
    return out;
  }
  out.chosen = "empirical";
  out.distribution = std::move(empirical);
  out.ks_distance = out.empirical_ks;
  return out;
}

Calibration calibrate(const SampleSet& set, const CalibrationOptions& options) {
  const auto& signatures = set.signatures();
  const auto& samples = set.samples();
  // Sample indices by signature, in input order.
  std::vector<std::vector<size_t>> of_signature(signatures.size());
  for (size_t i = 0; i < samples.size(); ++i) of_signature[samples[i].signature].push_back(i);

  Calibration out;
  std::vector<std::vector<double>> kept(signatures.size());  // durations that are fitted
  for (uint32_t s = 0; s < signatures.size(); ++s) {
    SignatureFit fit;
    fit.signature = s;
    fit.samples = of_signature[s].size();
    std::vector<double>& durations = kept[s];
    for (size_t i : of_signature[s]) durations.push_back(samples[i].seconds);
    if (signatures[s].kind == SampleKind::p2p && durations.size() >= 2) {
      // Waiting for the peer (the pipeline bubble) and the transfer itself: two populations.
      std::vector<double> logs;
      for (double d : durations) logs.push_back(std::log(d));
      std::sort(logs.begin(), logs.end());
      const OtsuSplit split = otsu_split(logs);
      if (split.separability >= kBimodal) {
        // Compared as logs, as split: exp(log(d)) need not give d back.
        const double threshold = logs[split.upper_begin - 1];
        std::erase_if(durations, [&](double d) { return std::log(d) > threshold; });
        fit.bubble_waits = fit.samples - durations.size();
      }
    }
    if (durations.size() < options.min_samples) {
      fit.skipped =
          fit.bubble_waits > 0
              ? fmt::format("{} transfers after setting apart {} waits; fewer than {}",
                            durations.size(), fit.bubble_waits, options.min_samples)
              : fmt::format("{} samples, fewer than {}", durations.size(), options.min_samples);
      durations.clear();
    }
    out.signatures.push_back(std::move(fit));
  }

  // Spatial variation: each GPU's median duration of each kernel signature against the median
  // over GPUs; a GPU's factor is the median of its ratios.
  SpatialFit& spatial = out.spatial;
  const size_t gpus = set.gpu_ids().size();
  std::vector<std::vector<double>> ratios(gpus);
  for (uint32_t s = 0; s < signatures.size(); ++s) {
    if (signatures[s].kind != SampleKind::kernel || kept[s].empty()) continue;
    std::map<int32_t, std::vector<double>> on_gpu;
    for (size_t i : of_signature[s]) {
      if (samples[i].gpu >= 0) on_gpu[samples[i].gpu].push_back(samples[i].seconds);
    }
    std::vector<std::pair<int32_t, double>> medians;
    for (auto& [gpu, durations] : on_gpu) {
      if (durations.size() >= kMinPerGpu) medians.emplace_back(gpu, median_of(durations));
    }
    if (medians.size() < 2) continue;
    std::vector<double> values;
    for (const auto& [gpu, m] : medians) values.push_back(m);
    const double center = median_of(values);
    for (const auto& [gpu, m] : medians) ratios[static_cast<size_t>(gpu)].push_back(m / center);
  }
  std::vector<double> factor(gpus, 1.0);
  std::vector<size_t> measured;  // GPUs with a factor
  for (size_t g = 0; g < gpus; ++g) {
    if (ratios[g].empty()) continue;
    factor[g] = median_of(ratios[g]);
    measured.push_back(g);
  }
  spatial.gpus = measured.size();
  if (measured.size() < std::max<size_t>(options.min_gpus, 2)) {
    spatial.skipped = gpus == 0 ? "the samples do not say which GPU ran them"
                                : fmt::format("{} GPUs with enough samples, fewer than {}",
                                              measured.size(), options.min_gpus);
    std::fill(factor.begin(), factor.end(), 1.0);
  } else {
    fit_spatial(set, measured, options, factor, spatial);
  }

  // Temporal variation: durations over the GPU's factor and the signature's nominal.
  std::map<std::string, std::pair<size_t, std::vector<double>>>
      pools;  // target -> (signatures, values)
  for (SignatureFit& fit : out.signatures) {
    std::vector<double>& durations = kept[fit.signature];
    if (durations.empty()) continue;
    const Signature& sig = signatures[fit.signature];
    if (sig.kind == SampleKind::kernel) {
      // Kernels keep all their samples, in the order of of_signature.
      for (size_t j = 0; j < durations.size(); ++j) {
        const int32_t gpu = samples[of_signature[fit.signature][j]].gpu;
        if (gpu >= 0) durations[j] /= factor[static_cast<size_t>(gpu)];
      }
      fit.target = "kernels." + sig.kernel_class;
    } else if (sig.scope) {
      fit.target =
          fmt::format("network.{}.{}", sig.kind == SampleKind::p2p ? "transfer_jitter" : "jitter",
                      to_string(*sig.scope));
    }
    fit.nominal_s = median_of(durations);
    for (double& d : durations) d /= fit.nominal_s;
    fit.fit = fit_slowdowns(durations, options);
    if (!fit.target.empty()) {
      auto& [count, values] = pools[fit.target];
      ++count;
      values.insert(values.end(), durations.begin(), durations.end());
    }
  }
  for (auto& [target, pool] : pools) {
    out.targets.push_back({target, pool.first, fit_slowdowns(std::move(pool.second), options)});
  }
  out.step_levels = kernel_step_levels(set);
  return out;
}

KernelStepLevels kernel_step_levels(const SampleSet& set) {
  KernelStepLevels l;
  std::map<int64_t, int32_t> step_id;
  std::set<int32_t> gpus;
  std::vector<PassSample> passes;
  for (const DurationSample& d : set.samples()) {
    if (d.step < 0 || d.gpu < 0 || d.seconds <= 0 ||
        set.signatures()[d.signature].kind != SampleKind::kernel) {
      continue;
    }
    PassSample p;
    p.signature = d.signature;
    p.gpu = d.gpu;
    p.step = step_id.try_emplace(d.step, static_cast<int32_t>(step_id.size())).first->second;
    p.log_duration = std::log(d.seconds);
    passes.push_back(p);
    gpus.insert(d.gpu);
  }
  l.samples = passes.size();
  l.steps = step_id.size();
  l.gpus = gpus.size();
  if (passes.empty()) {
    l.skipped = "no kernel sample carries its step (ProfilerStep# annotations or a step column)";
    return l;
  }
  // Dense GPU ids for the decomposition.
  std::map<int32_t, int32_t> gpu_id;
  for (int32_t g : gpus) gpu_id.emplace(g, static_cast<int32_t>(gpu_id.size()));
  for (PassSample& p : passes) p.gpu = gpu_id.at(p.gpu);
  Estimability e;
  const VarianceComponents vc = estimate_components(passes, &e);
  l.step_estimable = e.step;
  l.gpu_step_estimable = e.gpu_step;
  l.step_sigma = std::sqrt(vc.step);
  l.gpu_step_sigma = std::sqrt(vc.gpu_step);
  l.residual_sigma = std::sqrt(vc.forward_pass);
  if (!e.step)
    l.skipped = "one step: a step-wide factor needs at least two";
  else if (!e.gpu_step)
    l.skipped = "one GPU: GPU x step needs at least two GPUs";
  return l;
}

}  // namespace prismsim
