#include <doctest/doctest.h>

#include "stats/distribution.hpp"

using namespace prismsim;

TEST_CASE("quantiles interpolate linearly between order statistics") {
  const std::vector<double> sorted = {1, 2, 3, 4, 5};
  CHECK(quantile_sorted(sorted, 0.0) == 1.0);
  CHECK(quantile_sorted(sorted, 0.5) == 3.0);
  CHECK(quantile_sorted(sorted, 0.9) == doctest::Approx(4.6));
  CHECK(quantile_sorted(sorted, 1.0) == 5.0);
}

TEST_CASE("a summary gives mean sample deviation and percentiles of any order") {
  const DistributionSummary s = summarize({4, 1, 3, 2});
  CHECK(s.count == 4);
  CHECK(s.mean == doctest::Approx(2.5));
  CHECK(s.std == doctest::Approx(1.2909944487));
  CHECK(s.min == 1.0);
  CHECK(s.max == 4.0);
  CHECK(s.p50 == doctest::Approx(2.5));
  CHECK(s.p99 == doctest::Approx(3.97));
  CHECK(summarize({}).count == 0);
  CHECK(summarize({7}).std == 0.0);
}
