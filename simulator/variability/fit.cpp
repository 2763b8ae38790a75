#include "variability/fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#include "variability/distribution.hpp"

namespace prismsim {
namespace {

/// digamma(x) for x > 0: recurrence up to 6, then the asymptotic series.
double digamma(double x) {
  double result = 0;
  for (; x < 6; x += 1) result -= 1 / x;
  const double f = 1 / (x * x);
  return result + std::log(x) - 0.5 / x -
         f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))));
}

/// trigamma(x) for x > 0, the same way.
double trigamma(double x) {
  double result = 0;
  for (; x < 6; x += 1) result += 1 / (x * x);
  const double f = 1 / (x * x);
  return result + 1 / x + f / 2 + f / x * (1.0 / 6 - f * (1.0 / 30 - f * (1.0 / 42 - f / 30)));
}

struct Moments {
  double mean = 0;
  double variance = 0;  ///< population (maximum likelihood)
};

Moments moments(const std::vector<double>& values) {
  Moments m;
  for (double v : values) m.mean += v;
  m.mean /= static_cast<double>(values.size());
  for (double v : values) m.variance += (v - m.mean) * (v - m.mean);
  m.variance /= static_cast<double>(values.size());
  return m;
}

void require_spread(const std::vector<double>& sample) {
  const auto [low, high] = std::minmax_element(sample.begin(), sample.end());
  if (sample.size() < 2 || *low == *high) {
    throw std::invalid_argument("a fit needs at least two distinct values");
  }
}

void require_positive(const std::vector<double>& sample) {
  if (*std::min_element(sample.begin(), sample.end()) <= 0) {
    throw std::invalid_argument("lognormal and gamma fits need positive values");
  }
}

}  // namespace

double ks_distance_to(const std::vector<double>& sample, const DistributionSpec& d) {
  // Callers that fit several families to one sample pass it sorted: no copy then.
  std::vector<double> copy;
  if (!std::is_sorted(sample.begin(), sample.end())) {
    copy = sample;
    std::sort(copy.begin(), copy.end());
  }
  const std::vector<double>& sorted = copy.empty() ? sample : copy;
  const double n = static_cast<double>(sorted.size());
  double distance = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const double cdf = distribution_cdf(d, sorted[i]);
    distance = std::max(
        {distance, static_cast<double>(i + 1) / n - cdf, cdf - static_cast<double>(i) / n});
  }
  return distance;
}

Fit fit_normal(const std::vector<double>& sample) {
  require_spread(sample);
  const Moments m = moments(sample);
  Fit fit;
  fit.distribution.family = DistributionSpec::Family::normal;
  fit.distribution.mean = m.mean;
  fit.distribution.stddev = std::sqrt(m.variance);
  fit.distribution.floor = -std::numeric_limits<double>::infinity();
  const double n = static_cast<double>(sample.size());
  fit.log_likelihood = -n / 2 * (std::log(2 * std::numbers::pi * m.variance) + 1);
  fit.ks_distance = ks_distance_to(sample, fit.distribution);
  return fit;
}

Fit fit_lognormal(const std::vector<double>& sample) {
  require_spread(sample);
  require_positive(sample);
  std::vector<double> logs;
  double sum_logs = 0;
  for (double v : sample) {
    logs.push_back(std::log(v));
    sum_logs += logs.back();
  }
  const Moments m = moments(logs);
  Fit fit;
  fit.distribution.family = DistributionSpec::Family::lognormal;
  fit.distribution.mu = m.mean;
  fit.distribution.sigma = std::sqrt(m.variance);
  const double n = static_cast<double>(sample.size());
  fit.log_likelihood = -sum_logs - n / 2 * (std::log(2 * std::numbers::pi * m.variance) + 1);
  fit.ks_distance = ks_distance_to(sample, fit.distribution);
  return fit;
}

Fit fit_gamma(const std::vector<double>& sample) {
  require_spread(sample);
  require_positive(sample);
  const double n = static_cast<double>(sample.size());
  double mean = 0, mean_log = 0;
  for (double v : sample) {
    mean += v / n;
    mean_log += std::log(v) / n;
  }
  // s > 0 by Jensen's inequality (the values are not all equal).
  const double s = std::log(mean) - mean_log;
  double shape = (3 - s + std::sqrt((s - 3) * (s - 3) + 24 * s)) / (12 * s);
  for (int i = 0; i < 100; ++i) {
    const double step = (std::log(shape) - digamma(shape) - s) / (1 / shape - trigamma(shape));
    const double next = std::max(shape - step, shape / 10);
    const bool done = std::abs(next - shape) <= 1e-13 * shape;
    shape = next;
    if (done) break;
  }
  Fit fit;
  fit.distribution.family = DistributionSpec::Family::gamma;
  fit.distribution.shape = shape;
  fit.distribution.scale = mean / shape;
  const double scale = fit.distribution.scale;
  fit.log_likelihood =
      n * ((shape - 1) * mean_log - mean / scale - shape * std::log(scale) - std::lgamma(shape));
  fit.ks_distance = ks_distance_to(sample, fit.distribution);
  return fit;
}

std::vector<Fit> fit_families(const std::vector<double>& sample) {
  std::vector<Fit> fits = {fit_normal(sample)};
  if (*std::min_element(sample.begin(), sample.end()) > 0) {
    fits.push_back(fit_lognormal(sample));
    fits.push_back(fit_gamma(sample));
  }
  return fits;
}

}  // namespace prismsim
