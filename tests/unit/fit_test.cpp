#include "variability/fit.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "core/seeds.hpp"
#include "near.hpp"
#include "variability/distribution.hpp"

using prismsim::testing::Near;

using namespace prismsim;

namespace {

/// `n` draws of `d` from SplitMix64 words.
std::vector<double> draws(const DistributionSpec& d, int n, uint64_t seed) {
  const Sampler sampler(d);
  std::vector<double> out;
  for (int i = 0; i < n; ++i)
    out.push_back(sampler.draw(splitmix64(seed + static_cast<uint64_t>(i))));
  return out;
}

}  // namespace

TEST_CASE("the one-sample KS distance is the largest gap between the two CDFs") {
  DistributionSpec uniform;
  uniform.family = DistributionSpec::Family::uniform;
  uniform.low = 0;
  uniform.high = 1;
  CHECK(ks_distance_to({0.5}, uniform) == Near{0.5});
  CHECK(ks_distance_to({0.75, 0.25}, uniform) == Near{0.25});
  CHECK(ks_distance_to({0.1, 0.2}, uniform) == Near{0.8});
}

TEST_CASE("a normal fit is the sample's mean and population deviation, with its likelihood") {
  const Fit fit = fit_normal({1, 2, 3});
  CHECK(fit.distribution.mean == Near{2});
  CHECK(fit.distribution.stddev == Near{std::sqrt(2.0 / 3)});
  CHECK(fit.log_likelihood == Near{-1.5 * (std::log(2 * std::numbers::pi * 2.0 / 3) + 1)});
}

TEST_CASE("maximum-likelihood fits recover the parameters of what they are fitted to") {
  DistributionSpec lognormal;
  lognormal.family = DistributionSpec::Family::lognormal;
  lognormal.mu = 0.1;
  lognormal.sigma = 0.2;
  const auto a = draws(lognormal, 20000, 1);
  // Standard errors: mu 0.2 / sqrt(20000) = 0.0014; sigma about 0.001.
  const Fit l = fit_lognormal(a);
  CHECK(l.distribution.mu == Near{0.1, 0.06});
  CHECK(l.distribution.sigma == Near{0.2, 0.03});
  CHECK(l.ks_distance < 0.015);

  DistributionSpec gamma;
  gamma.family = DistributionSpec::Family::gamma;
  gamma.shape = 3;
  gamma.scale = 0.5;
  const auto b = draws(gamma, 20000, 2);
  const Fit g = fit_gamma(b);
  CHECK(g.distribution.shape == Near{3, 0.05});
  CHECK(g.distribution.scale == Near{0.5, 0.05});
  CHECK(g.ks_distance < 0.015);
  // The right family explains the sample best.
  const auto fits = fit_families(b);
  REQUIRE(fits.size() == 3);
  CHECK(fits[2].log_likelihood > fits[0].log_likelihood);
  CHECK(fits[2].log_likelihood > fits[1].log_likelihood);
  CHECK(fits[2].ks_distance < fits[0].ks_distance);
}

TEST_CASE("fits refuse samples they cannot describe") {
  CHECK_THROWS_AS(fit_normal({1.0}), std::invalid_argument);
  CHECK_THROWS_AS(fit_normal({2.0, 2.0, 2.0}), std::invalid_argument);
  CHECK_THROWS_AS(fit_lognormal({-1.0, 2.0}), std::invalid_argument);
  CHECK(fit_families({-1.0, 2.0, 3.0}).size() == 1);  // only the normal
}
