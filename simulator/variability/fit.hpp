#pragma once

#include <string>
#include <vector>

#include "config/variability_spec.hpp"

namespace prismsim {

/// A distribution fitted to a sample by maximum likelihood, and how well it fits.
struct Fit {
  DistributionSpec distribution;
  double log_likelihood = 0;
  double ks_distance = 0;  ///< one-sample Kolmogorov-Smirnov distance of the sample to it
};

/// Normal (mean and population standard deviation, no floor). Needs two distinct values.
Fit fit_normal(const std::vector<double>& sample);
/// Lognormal (mu and sigma of the logs). Needs two distinct values, all positive.
Fit fit_lognormal(const std::vector<double>& sample);
/// Gamma (shape by Newton's method on log(k) - digamma(k) = log(mean) - mean(log x), then
/// scale = mean / shape). Needs two distinct values, all positive.
Fit fit_gamma(const std::vector<double>& sample);

/// One-sample Kolmogorov-Smirnov distance: the largest gap between the sample's empirical CDF and
/// `d`'s CDF, in [0, 1].
double ks_distance_to(const std::vector<double>& sample, const DistributionSpec& d);

/// The three fits, in the order normal, lognormal, gamma, for families the sample allows (the
/// positive ones need positive values); throws std::invalid_argument for fewer than two distinct
/// values.
std::vector<Fit> fit_families(const std::vector<double>& sample);

}  // namespace prismsim
