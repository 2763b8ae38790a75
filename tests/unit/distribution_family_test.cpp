#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/seeds.hpp"
#include "near.hpp"
#include "variability/distribution.hpp"

using prismsim::testing::Near;

using namespace prismsim;

namespace {

using Family = DistributionSpec::Family;

DistributionSpec normal(double mean, double stddev, double floor) {
  DistributionSpec d;
  d.family = Family::normal;
  d.mean = mean;
  d.stddev = stddev;
  d.floor = floor;
  return d;
}

DistributionSpec lognormal(double mu, double sigma, double shift = 0) {
  DistributionSpec d;
  d.family = Family::lognormal;
  d.mu = mu;
  d.sigma = sigma;
  d.shift = shift;
  return d;
}

DistributionSpec gamma(double shape, double scale, double shift = 0) {
  DistributionSpec d;
  d.family = Family::gamma;
  d.shape = shape;
  d.scale = scale;
  d.shift = shift;
  return d;
}

DistributionSpec uniform(double low, double high) {
  DistributionSpec d;
  d.family = Family::uniform;
  d.low = low;
  d.high = high;
  return d;
}

DistributionSpec empirical(std::vector<double> samples) {
  DistributionSpec d;
  d.family = Family::empirical;
  d.samples = std::move(samples);
  return d;
}

/// 99% lognormal(mu 0, sigma 0.1) kernels, 1% stragglers: 1 + gamma(shape 2, scale 0.5).
DistributionSpec straggler_mixture() {
  DistributionSpec d;
  d.family = Family::mixture;
  d.components = {{0.99, lognormal(0, 0.1)}, {0.01, gamma(2, 0.5, 1)}};
  return d;
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

struct Named {
  std::string name;
  DistributionSpec spec;
};

/// The continuous families of the brief, with their parameters.
std::vector<Named> continuous_families() {
  return {{"truncated normal", normal(1, 0.05, 0)},
          {"half normal", normal(0, 1, 0)},
          {"lognormal sigma 0.2", lognormal(0.1, 0.2)},
          {"lognormal sigma 1 shifted", lognormal(0, 1, 0.5)},
          {"gamma shape 0.5", gamma(0.5, 2)},
          {"gamma shape 9 shifted", gamma(9, 0.1, 1)},
          {"uniform", uniform(2, 6)},
          {"mixture", straggler_mixture()}};
}

}  // namespace

TEST_CASE("a constant has a step CDF and a sampler that returns its value without work") {
  const DistributionSpec d = DistributionSpec::constant_at(1.25);
  CHECK(distribution_cdf(d, 1.2) == 0.0);
  CHECK(distribution_cdf(d, 1.25) == 1.0);
  CHECK(distribution_quantile(d, 0.001) == 1.25);
  CHECK(distribution_quantile(d, 0.999) == 1.25);
  CHECK(distribution_mean(d) == 1.25);
  const Sampler s(d);
  CHECK(s.is_constant());
  CHECK(s.mean() == 1.25);
  CHECK(s.draw(0) == 1.25);
  CHECK(s.draw(~uint64_t{0}) == 1.25);
  const Sampler unit;
  CHECK(unit.is_constant());
  CHECK(unit.draw(12345) == 1.0);
  CHECK(unit.mean() == 1.0);
}

TEST_CASE("a normal with a distant floor has the quantiles of the untruncated normal") {
  // Floor 0 is 20 standard deviations below the mean: truncation removes about 1e-89.
  const DistributionSpec d = normal(1, 0.05, 0);
  CHECK(distribution_quantile(d, 0.5) == Near{1.0, 1e-12});
  // p97.5 = mean + 1.959964 sd = 1 + 0.0979982 = 1.0979982; p2.5 mirrors it.
  CHECK(distribution_quantile(d, 0.975) == Near{1.0979982, 1e-7});
  CHECK(distribution_quantile(d, 0.025) == Near{0.9020018, 1e-7});
  CHECK(distribution_cdf(d, 1.05) == Near{normal_cdf(1.0), 1e-12});
  CHECK(distribution_mean(d) == Near{1.0, 1e-12});
}

TEST_CASE("a normal truncated at its mean is a half normal and never draws below its floor") {
  // |Z|: P(|Z| <= x) = 2 Phi(x) - 1, so its quantile at u is z((1 + u) / 2): the median is
  // z(0.75) = 0.6744898 and p95 is z(0.975) = 1.959964; its mean is sqrt(2 / pi) = 0.7978846.
  const DistributionSpec d = normal(0, 1, 0);
  CHECK(distribution_quantile(d, 0.5) == Near{0.6744898, 1e-7});
  CHECK(distribution_quantile(d, 0.95) == Near{1.959964, 1e-7});
  CHECK(distribution_cdf(d, 1.0) == Near{2 * normal_cdf(1.0) - 1, 1e-12});
  CHECK(distribution_cdf(d, -0.1) == 0.0);
  CHECK(distribution_mean(d) == Near{0.7978846, 1e-7});
  // Just above the floor the density is 2 phi(0) = 0.7978846, so quantile(u) ~ u / 0.7978846
  // (to the precision of the normal quantile at 0.5 + 5e-16, a few units in the last place).
  CHECK(distribution_quantile(d, 1e-15) == Near{1e-15 / 0.7978846, 1e-3});

  const Sampler s(normal(0.2, 0.5, 0));
  double lowest = s.draw(0);
  for (uint64_t i = 0; i < 100000; ++i) lowest = std::min(lowest, s.draw(splitmix64(i)));
  for (uint64_t word = 1; word != 0; word <<= 1) lowest = std::min(lowest, s.draw(word));
  CHECK(lowest >= 0.0);
  CHECK(s.draw(0) > 0.0);
}

TEST_CASE("lognormal quantiles are exp(mu + sigma z), also for a heavy sigma of 1") {
  const DistributionSpec d = lognormal(0.1, 0.2);
  // Median exp(0.1) = 1.1051709; p97.5 = exp(0.1 + 0.2 x 1.959964) = 1.6355723;
  // mean exp(mu + sigma^2 / 2) = exp(0.12) = 1.1274969.
  CHECK(distribution_quantile(d, 0.5) == Near{1.1051709, 1e-7});
  CHECK(distribution_quantile(d, 0.975) == Near{1.6355723, 1e-7});
  CHECK(distribution_mean(d) == Near{1.1274969, 1e-7});

  const DistributionSpec heavy = lognormal(0, 1, 0.5);
  // Shifted by 0.5: median 1.5; p99 = 0.5 + exp(2.3263479) = 10.7404737; mean 0.5 + exp(0.5).
  CHECK(distribution_quantile(heavy, 0.5) == Near{1.5, 1e-12});
  CHECK(distribution_quantile(heavy, 0.99) == Near{10.7404737, 1e-7});
  CHECK(distribution_mean(heavy) == Near{2.1487213, 1e-7});
  CHECK(distribution_cdf(heavy, 0.5) == 0.0);
  CHECK(distribution_cdf(heavy, 1.5) == Near{0.5, 1e-12});
}

TEST_CASE("gamma quantiles match closed forms for shape 0.5 and shape 9") {
  // Shape 0.5, scale 2 is chi-square with one degree of freedom, Z^2: its quantile at u is
  // z((1 + u) / 2)^2, so the median is 0.6744898^2 = 0.4549364 and p99 is
  // 2.5758293^2 = 6.6348966; the mean is shape x scale = 1.
  const DistributionSpec chi2 = gamma(0.5, 2);
  CHECK(distribution_quantile(chi2, 0.5) == Near{0.4549364, 1e-7});
  CHECK(distribution_quantile(chi2, 0.99) == Near{6.6348966, 1e-7});
  CHECK(distribution_cdf(chi2, 1.0) == Near{2 * normal_cdf(1.0) - 1, 1e-12});
  CHECK(distribution_mean(chi2) == Near{1.0});
  // Far in the lower tail P(k, t) ~ t^k / Gamma(k + 1): u = sqrt(t / pi) x 2, so t = pi u^2 / 4
  // and x = 2 t.
  CHECK(distribution_quantile(chi2, 1e-12) == Near{2 * 3.14159265358979 * 1e-24 / 4, 1e-9});

  // Shape 9 (Erlang): P(9, t) = 1 - exp(-t) sum_{i < 9} t^i / i!, which is 0.5443474 at t = 9.
  const DistributionSpec erlang = gamma(9, 0.1, 1);
  auto erlang_cdf = [](double t) {
    double term = 1;
    double sum = 0;
    for (int i = 0; i < 9; ++i) {
      sum += term;
      term *= t / (i + 1);
    }
    return 1 - std::exp(-t) * sum;
  };
  CHECK(erlang_cdf(9) == Near{0.5443474, 1e-7});
  for (double t : {2.0, 6.0, 9.0, 15.0, 30.0}) {
    CAPTURE(t);
    CHECK(distribution_cdf(erlang, 1 + 0.1 * t) == Near{erlang_cdf(t), 1e-12});
    CHECK(distribution_quantile(erlang, erlang_cdf(t)) == Near{1 + 0.1 * t, 1e-10});
  }
  CHECK(distribution_mean(erlang) == Near{1.9});
}

TEST_CASE("uniform quantiles are linear") {
  const DistributionSpec d = uniform(2, 6);
  CHECK(distribution_quantile(d, 0.25) == Near{3.0});
  CHECK(distribution_quantile(d, 0.9) == Near{5.6});
  CHECK(distribution_cdf(d, 5) == Near{0.75});
  CHECK(distribution_cdf(d, 1) == 0.0);
  CHECK(distribution_cdf(d, 7) == 1.0);
  CHECK(distribution_mean(d) == Near{4.0});
  const Sampler s(d);
  CHECK(s.draw(0) >= 2.0);
  CHECK(s.draw(~uint64_t{0}) <= 6.0);
  CHECK(s.draw(~uint64_t{0}) > 5.999);
}

TEST_CASE("empirical quantiles are order statistics and draws pick each sample equally often") {
  const DistributionSpec d = empirical({3, 1, 2, 5, 4});
  // The smallest sample with at least a fraction u of the samples at or below it.
  CHECK(distribution_quantile(d, 0.2) == 1.0);
  CHECK(distribution_quantile(d, 0.2001) == 2.0);
  CHECK(distribution_quantile(d, 0.5) == 3.0);
  CHECK(distribution_quantile(d, 0.99) == 5.0);
  CHECK(distribution_cdf(d, 2.5) == Near{0.4});
  CHECK(distribution_cdf(d, 5) == 1.0);
  CHECK(distribution_cdf(d, 0.5) == 0.0);
  CHECK(distribution_mean(d) == Near{3.0});

  const Sampler s(d);
  CHECK_FALSE(s.is_constant());
  // Index floor(word x 5 / 2^64): the lowest words pick the first sample, the highest the last.
  CHECK(s.draw(0) == 3.0);
  CHECK(s.draw(~uint64_t{0}) == 4.0);
  std::vector<int> counts(6, 0);
  for (uint64_t i = 0; i < 200000; ++i) ++counts[static_cast<size_t>(s.draw(splitmix64(77 + i)))];
  // Each count is binomial(200000, 0.2): mean 40000, sd 179.
  for (int value = 1; value <= 5; ++value) {
    CAPTURE(value);
    CHECK(std::abs(counts[static_cast<size_t>(value)] - 40000) < 4 * 179);
  }
}

TEST_CASE("a mixture's CDF is the weighted sum of its components' and its mean theirs") {
  const DistributionSpec d = straggler_mixture();
  // 0.99 Phi(ln x / 0.1) + 0.01 P(2, (x - 1) / 0.5), with P(2, t) = 1 - exp(-t) (1 + t).
  auto cdf = [](double x) {
    const double t = x > 1 ? (x - 1) / 0.5 : 0;
    return 0.99 * normal_cdf(std::log(x) / 0.1) + 0.01 * (1 - std::exp(-t) * (1 + t));
  };
  for (double x : {0.8, 1.0, 1.1, 1.5, 2.0, 4.0}) {
    CAPTURE(x);
    CHECK(distribution_cdf(d, x) == Near{cdf(x), 1e-12});
  }
  // 0.99 exp(0.1^2 / 2) + 0.01 (1 + 2 x 0.5) = 1.0149624.
  CHECK(distribution_mean(d) == Near{1.0149624, 1e-7});
  // p99.99 lies in the straggler's tail, between the components' own p99.99.
  const double p9999 = distribution_quantile(d, 0.9999);
  CHECK(cdf(p9999) == Near{0.9999, 1e-12});
  CHECK(p9999 > distribution_quantile(lognormal(0, 0.1), 0.9999));
  CHECK(p9999 < distribution_quantile(gamma(2, 0.5, 1), 0.9999));
}

TEST_CASE("the CDF inverts the quantile function of every continuous family") {
  for (const Named& family : continuous_families()) {
    const std::string& name = family.name;
    const DistributionSpec& d = family.spec;
    for (double u : {1e-12, 1e-6, 0.001, 0.1, 0.5, 0.9, 0.999, 1 - 1e-6}) {
      CAPTURE(name);
      CAPTURE(u);
      // Relative 1e-9, or 1e-15 absolute: near a floor the quantile is a double close to it,
      // so a tiny u round-trips only to a unit in its last place (uniform: 1e-16 / width).
      CHECK(distribution_cdf(d, distribution_quantile(d, u)) == Near{u, std::max(1e-9, 1e-15 / u)});
    }
  }
}

TEST_CASE("sampler means and quantiles agree with the distribution within sampling error") {
  const uint64_t n = 200000;
  uint64_t seed = 1000;
  for (const Named& family : continuous_families()) {
    const std::string& name = family.name;
    const DistributionSpec& d = family.spec;
    CAPTURE(name);
    const Sampler s(d);
    CHECK_FALSE(s.is_constant());
    CHECK(s.mean() == distribution_mean(d));
    std::vector<double> draws(n);
    double sum = 0;
    double sum_squares = 0;
    for (uint64_t i = 0; i < n; ++i) {
      draws[i] = s.draw(splitmix64(seed + i));
      sum += draws[i];
      sum_squares += draws[i] * draws[i];
    }
    seed += n;
    const double mean = sum / static_cast<double>(n);
    const double standard_error =
        std::sqrt((sum_squares / static_cast<double>(n) - mean * mean) / static_cast<double>(n));
    CAPTURE(mean);
    CAPTURE(standard_error);
    CHECK(std::abs(mean - distribution_mean(d)) < 4 * standard_error);
    // The CDF at the k-th order statistic has mean k / (n + 1) and sd sqrt(u (1 - u) / n).
    for (double u : {0.5, 0.99, 0.999}) {
      CAPTURE(u);
      const auto k = static_cast<size_t>(std::ceil(u * static_cast<double>(n))) - 1;
      std::nth_element(draws.begin(), draws.begin() + static_cast<std::ptrdiff_t>(k), draws.end());
      const double sample_quantile = draws[k];
      CAPTURE(sample_quantile);
      CAPTURE(distribution_quantile(d, u));
      CHECK(std::abs(distribution_cdf(d, sample_quantile) - u) <
            4 * std::sqrt(u * (1 - u) / static_cast<double>(n)));
    }
  }
}

TEST_CASE("sampler tails match exact quantiles to 1e-3 relative far beyond p99.99") {
  // Words whose top 40 bits are all 0 (all 1) stand for u = (word + 0.5) / 2^64 below 2^-40
  // (above 1 - 2^-40). Upper words are complements of m 2^11 - 1, whose u = 1 - m 2^-53 + 2^-65
  // is m 2^-53 from 1 to within 2^-12 / m relative.
  for (const Named& family : continuous_families()) {
    const std::string& name = family.name;
    const DistributionSpec& d = family.spec;
    const Sampler s(d);
    for (uint64_t m : {1000ULL, 2048ULL, 3001ULL, 5555ULL, 8191ULL}) {
      CAPTURE(name);
      CAPTURE(m);
      const uint64_t word = (m << 11) - 1;
      const double lower = distribution_quantile(d, (static_cast<double>(word) + 0.5) * 0x1p-64);
      const double upper = distribution_quantile(d, 1 - static_cast<double>(m) * 0x1p-53);
      CHECK(s.draw(~word) == Near{upper, 1e-3});
      CHECK(s.draw(word) == Near{lower, 1e-3});
    }
    for (double u : {1e-6, 1e-4, 1 - 1e-4, 1 - 1e-6}) {
      CAPTURE(name);
      CAPTURE(u);
      const auto word = static_cast<uint64_t>(u * 0x1p64);
      CHECK(s.draw(word) == Near{distribution_quantile(d, u), 1e-3});
    }
  }
}

TEST_CASE("draws are deterministic and increase with the word") {
  for (const Named& family : continuous_families()) {
    const std::string& name = family.name;
    const DistributionSpec& d = family.spec;
    CAPTURE(name);
    const Sampler a(d);
    const Sampler b(d);
    double previous = a.draw(0);
    CHECK(std::isfinite(previous));
    // Words 2^k - 1 and their complements sweep every tail level and the main table in order.
    std::vector<uint64_t> words = {~uint64_t{0}};
    for (int k = 1; k < 64; ++k) {
      words.push_back(~uint64_t{0} >> k);
      words.push_back(~(~uint64_t{0} >> k));
    }
    for (int i = 1; i < 4096; i += 97) words.push_back(static_cast<uint64_t>(i) << 52 | 12345);
    std::sort(words.begin(), words.end());
    for (uint64_t word : words) {
      CAPTURE(word);
      const double x = a.draw(word);
      CHECK(x == b.draw(word));
      CHECK(x >= previous);
      previous = x;
    }
    CHECK(std::isfinite(previous));
  }
}
