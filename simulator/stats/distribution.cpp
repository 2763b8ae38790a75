#include "stats/distribution.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

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

}  // namespace prismsim
