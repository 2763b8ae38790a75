#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace prismsim {

/// Summary of a sample, in the sample's units.
struct DistributionSummary {
  size_t count = 0;
  double mean = 0;
  double std = 0;  ///< sample standard deviation (n - 1); 0 for fewer than two values
  double min = 0;
  double p50 = 0;
  double p90 = 0;
  double p95 = 0;
  double p99 = 0;
  double max = 0;
};

/// The q-quantile (0 <= q <= 1) of sorted values, interpolating linearly between order statistics
/// (Hyndman-Fan type 7, numpy's default). Requires a non-empty sample.
double quantile_sorted(const std::vector<double>& sorted, double q);

/// Summarises `values` (any order). An empty sample gives all zeros and count 0.
DistributionSummary summarize(std::vector<double> values);

/// Two-sample Kolmogorov-Smirnov distance: the largest gap between the empirical CDFs of `a` and
/// `b` (any order, both non-empty), in [0, 1].
double ks_distance(std::vector<double> a, std::vector<double> b);

/// Spearman's rank correlation of paired samples `a` and `b` (same length, at least 2): the
/// Pearson correlation of their ranks, ties given their average rank; 0 when a sample is constant.
double spearman_correlation(const std::vector<double>& a, const std::vector<double>& b);

/// A two-sided confidence interval.
struct Interval {
  double low = 0;
  double high = 0;
};

/// Percentile-bootstrap intervals at `level` (e.g. 0.95) for each quantile of `qs` of the values
/// of `groups` pooled together, resampling whole groups (one group per run: steps of a run are not
/// independent) with replacement `resamples` times; every quantile uses the same resamples.
/// Deterministic for a given `seed`. Requires a non-empty group list of non-empty groups.
std::vector<Interval> bootstrap_quantiles(const std::vector<std::vector<double>>& groups,
                                          const std::vector<double>& qs, double level,
                                          int resamples, uint64_t seed);

}  // namespace prismsim
