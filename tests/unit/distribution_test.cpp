#include "stats/distribution.hpp"

#include <doctest/doctest.h>

#include <cmath>

#include "core/seeds.hpp"
#include "near.hpp"

using prismsim::testing::Near;

using namespace prismsim;

TEST_CASE("quantiles interpolate linearly between order statistics") {
  const std::vector<double> sorted = {1, 2, 3, 4, 5};
  CHECK(quantile_sorted(sorted, 0.0) == 1.0);
  CHECK(quantile_sorted(sorted, 0.5) == 3.0);
  CHECK(quantile_sorted(sorted, 0.9) == Near{4.6});
  CHECK(quantile_sorted(sorted, 1.0) == 5.0);
}

TEST_CASE("a summary gives mean sample deviation and percentiles of any order") {
  const DistributionSummary s = summarize({4, 1, 3, 2});
  CHECK(s.count == 4);
  CHECK(s.mean == Near{2.5});
  CHECK(s.std == Near{1.2909944487});
  CHECK(s.min == 1.0);
  CHECK(s.max == 4.0);
  CHECK(s.p50 == Near{2.5});
  CHECK(s.p99 == Near{3.97});
  CHECK(summarize({}).count == 0);
  CHECK(summarize({7}).std == 0.0);
}

TEST_CASE("bootstrap intervals cover the population quantile at about their level") {
  // Runs of one value each from Uniform(0, 1): the median's 95% interval from 400 runs should
  // contain 0.5 in about 95% of independent experiments, and be about 2 x 1.96 x 0.5/sqrt(400)
  // = 0.098 wide (the median's asymptotic standard error is 1/(2 sqrt(n)) for this density).
  int covered = 0;
  double width = 0;
  const int experiments = 200;
  for (int e = 0; e < experiments; ++e) {
    std::vector<std::vector<double>> runs;
    for (int i = 0; i < 400; ++i) {
      runs.push_back({static_cast<double>(splitmix64(1000003ULL * e + i) >> 11) * 0x1.0p-53});
    }
    const Interval ci = bootstrap_quantiles(runs, {0.5}, 0.95, 400, 99 + e)[0];
    covered += ci.low <= 0.5 && 0.5 <= ci.high;
    width += (ci.high - ci.low) / experiments;
  }
  CHECK(covered >= 180);  // 95% of 200 = 190; binomial sd about 3
  CHECK(covered <= 198);
  CHECK(width == Near{0.098, 0.15});
}

TEST_CASE("bootstrap intervals are deterministic and degenerate for identical runs") {
  const std::vector<std::vector<double>> runs = {{1, 2}, {3, 4}, {5, 6}, {7, 8}};
  const Interval a = bootstrap_quantiles(runs, {0.95}, 0.9, 200, 7)[0];
  const Interval b = bootstrap_quantiles(runs, {0.95}, 0.9, 200, 7)[0];
  CHECK(a.low == b.low);
  CHECK(a.high == b.high);
  CHECK(a.low <= a.high);
  CHECK(a.low >= 2.0);  // the 95th percentile of any resample of these runs is at least 2
  CHECK(a.high <= 8.0);
  const Interval same = bootstrap_quantiles({{5.0}, {5.0}, {5.0}}, {0.5}, 0.95, 50, 1)[0];
  CHECK(same.low == 5.0);
  CHECK(same.high == 5.0);
}

TEST_CASE("the KS distance of a sample to itself is 0 and to a shifted copy as computed by hand") {
  const std::vector<double> a = {1, 2, 3, 4, 5};
  CHECK(ks_distance(a, a) == 0.0);
  CHECK(ks_distance(a, {5, 4, 3, 2, 1}) == 0.0);
  // Shifted by 2.5: at x = 3, F_a = 3/5 and F_b = 0; at x = 5, F_a = 1 and F_b = 2/5: 3/5.
  CHECK(ks_distance(a, {3.5, 4.5, 5.5, 6.5, 7.5}) == Near{0.6});
  // Disjoint samples are at distance 1; ties count on both sides.
  CHECK(ks_distance({1, 2}, {3, 4}) == 1.0);
  CHECK(ks_distance({1, 1, 2}, {1, 2, 2}) == Near{1.0 / 3});
}

TEST_CASE("Spearman's rank correlation: +1 for the same order, -1 reversed, ties averaged") {
  CHECK(spearman_correlation({1, 2, 3, 4}, {10, 20, 30, 400}) ==
        prismsim::testing::Near{1.0, 1e-12});
  CHECK(spearman_correlation({1, 2, 3, 4}, {4, 3, 2, 1}) == prismsim::testing::Near{-1.0, 1e-12});
  // Ranks (1, 2, 3) against (1.5, 1.5, 3): r = 0.866.
  CHECK(spearman_correlation({1, 2, 3}, {5, 5, 7}) ==
        prismsim::testing::Near{std::sqrt(3.0) / 2, 1e-12});
  CHECK(spearman_correlation({1, 2, 3}, {2, 2, 2}) == 0.0);
}
