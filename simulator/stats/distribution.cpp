#include "stats/distribution.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/seeds.hpp"

namespace prismsim {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  assert(!sorted.empty() && q >= 0 && q <= 1);
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

DistributionSummary summarize(std::vector<double> values) {
  DistributionSummary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  if (values.size() > 1) {
    double squares = 0;
    for (double v : values) squares += (v - s.mean) * (v - s.mean);
    s.std = std::sqrt(squares / static_cast<double>(values.size() - 1));
  }
  s.min = values.front();
  s.max = values.back();
  s.p50 = quantile_sorted(values, 0.50);
  s.p90 = quantile_sorted(values, 0.90);
  s.p95 = quantile_sorted(values, 0.95);
  s.p99 = quantile_sorted(values, 0.99);
  return s;
}

namespace {

/// Ranks from 1, ties given their average rank.
std::vector<double> ranks_of(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return values[x] < values[y]; });
  std::vector<double> ranks(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    const double rank = (static_cast<double>(i + j) + 2) / 2;
    for (size_t t = i; t <= j; ++t) ranks[order[t]] = rank;
    i = j + 1;
  }
  return ranks;
}

}  // namespace

double spearman_correlation(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<double> x = ranks_of(a), y = ranks_of(b);
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    mx += x[i] / n;
    my += y[i] / n;
  }
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0.0;
}

double ks_distance(std::vector<double> a, std::vector<double> b) {
  assert(!a.empty() && !b.empty());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  size_t i = 0, j = 0;
  double distance = 0;
  // Walk the merged values; at each distinct value both CDFs include every value up to it.
  while (i < a.size() || j < b.size()) {
    const double x = j == b.size() || (i < a.size() && a[i] <= b[j]) ? a[i] : b[j];
    while (i < a.size() && a[i] == x) ++i;
    while (j < b.size() && b[j] == x) ++j;
    distance =
        std::max(distance, std::abs(static_cast<double>(i) / na - static_cast<double>(j) / nb));
  }
  return distance;
}

std::vector<Interval> bootstrap_quantiles(const std::vector<std::vector<double>>& groups,
                                          const std::vector<double>& qs, double level,
                                          int resamples, uint64_t seed) {
  assert(!groups.empty() && resamples > 0 && level > 0 && level < 1);
  const uint64_t n = groups.size();
  uint64_t counter = 0;
  // Uniform group index from a counter-based SplitMix64 stream (multiply-shift: no modulo bias
  // worth the name for n far below 2^64).
  auto draw = [&] {
    const uint64_t x = splitmix64(seed + counter++);
    __extension__ using Wide = unsigned __int128;
    return static_cast<size_t>((static_cast<Wide>(x) * n) >> 64);
  };
  std::vector<std::vector<double>> estimates(qs.size());  // per quantile, per resample
  std::vector<double> pooled;
  for (int b = 0; b < resamples; ++b) {
    pooled.clear();
    for (uint64_t i = 0; i < n; ++i) {
      const auto& group = groups[draw()];
      pooled.insert(pooled.end(), group.begin(), group.end());
    }
    std::sort(pooled.begin(), pooled.end());
    for (size_t k = 0; k < qs.size(); ++k) estimates[k].push_back(quantile_sorted(pooled, qs[k]));
  }
  const double tail = (1 - level) / 2;
  std::vector<Interval> intervals;
  for (auto& values : estimates) {
    std::sort(values.begin(), values.end());
    intervals.push_back({quantile_sorted(values, tail), quantile_sorted(values, 1 - tail)});
  }
  return intervals;
}

}  // namespace prismsim
