#include "variability/distribution.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>

namespace prismsim {
namespace {

using Family = DistributionSpec::Family;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

double normal_cdf(double z) { return 0.5 * std::erfc(-z * kSqrtHalf); }
double normal_sf(double z) { return 0.5 * std::erfc(z * kSqrtHalf); }
double normal_pdf(double z) { return kInvSqrt2Pi * std::exp(-0.5 * z * z); }

double polynomial(const double (&c)[8], double x) {
  double sum = c[7];
  for (int i = 6; i >= 0; --i) sum = sum * x + c[i];
  return sum;
}

/// The z with normal_cdf(z) = p, by Wichura's algorithm AS 241 (PPND16): rational
/// approximations in three regions, about 1e-16 relative accuracy.
double normal_quantile(double p) {
  if (!(p > 0)) return -kInf;
  if (!(p < 1)) return kInf;
  static constexpr double a[8] = {3.3871328727963666080e0,  1.3314166789178437745e+2,
                                  1.9715909503065514427e+3, 1.3731693765509461125e+4,
                                  4.5921953931549871457e+4, 6.7265770927008700853e+4,
                                  3.3430575583588128105e+4, 2.5090809287301226727e+3};
  static constexpr double b[8] = {1.0,
                                  4.2313330701600911252e+1,
                                  6.8718700749205790830e+2,
                                  5.3941960214247511077e+3,
                                  2.1213794301586595867e+4,
                                  3.9307895800092710610e+4,
                                  2.8729085735721942674e+4,
                                  5.2264952788528545610e+3};
  static constexpr double c[8] = {1.42343711074968357734e0,  4.63033784615654529590e0,
                                  5.76949722146069140550e0,  3.64784832476320460504e0,
                                  1.27045825245236838258e0,  2.41780725177450611770e-1,
                                  2.27238449892691845833e-2, 7.74545014278341407640e-4};
  static constexpr double d[8] = {1.0,
                                  2.05319162663775882187e0,
                                  1.67638483018380384940e0,
                                  6.89767334985100004550e-1,
                                  1.48103976427480074590e-1,
                                  1.51986665636164571966e-2,
                                  5.47593808499534494600e-4,
                                  1.05075007164441684324e-9};
  static constexpr double e[8] = {6.65790464350110377720e0,  5.46378491116411436990e0,
                                  1.78482653991729133580e0,  2.96560571828504891230e-1,
                                  2.65321895265761230930e-2, 1.24266094738807843860e-3,
                                  2.71155556874348757815e-5, 2.01033439929228813265e-7};
  static constexpr double f[8] = {1.0,
                                  5.99832206555887937690e-1,
                                  1.36929880922735805310e-1,
                                  1.48753612908506148525e-2,
                                  7.86869131145613259100e-4,
                                  1.84631831751005468180e-5,
                                  1.42151175831644588870e-7,
                                  2.04426310338993978564e-15};
  const double q = p - 0.5;
  if (std::abs(q) <= 0.425) {
    const double r = 0.180625 - q * q;
    return q * polynomial(a, r) / polynomial(b, r);
  }
  double r = std::sqrt(-std::log(q < 0 ? p : 1 - p));
  double z;
  if (r <= 5) {
    r -= 1.6;
    z = polynomial(c, r) / polynomial(d, r);
  } else {
    r -= 5;
    z = polynomial(e, r) / polynomial(f, r);
  }
  return q < 0 ? -z : z;
}

/// A probability measured from one end of a distribution: u = p (lower) or u = 1 - p (upper),
/// so that tail probabilities far below the spacing of doubles near 1 stay exact.
struct TailProb {
  double p;
  bool upper;
};

/// ln P(k, t) and ln Q(k, t), the regularized lower and upper incomplete gamma functions at
/// t = exp(s), and ln(t^k e^-t / Gamma(k)).
struct GammaTails {
  double log_p;
  double log_q;
  double log_front;
};

/// Series for P when t < k + 1, continued fraction (modified Lentz) for Q otherwise; the other
/// side by complement, which is accurate there because it is not small.
GammaTails incomplete_gamma(double k, double log_gamma_k, double s) {
  const double t = std::exp(s);
  const double log_front = k * s - t - log_gamma_k;
  constexpr double kEps = 1e-17;
  constexpr int kMaxTerms = 100000;
  if (t < k + 1) {
    // P = front * sum_{n >= 0} t^n / (k (k + 1) ... (k + n))
    double term = 1 / k;
    double sum = term;
    double a = k;
    for (int n = 0; n < kMaxTerms && term > sum * kEps; ++n) {
      a += 1;
      term *= t / a;
      sum += term;
    }
    const double log_p = log_front + std::log(sum);
    return {log_p, std::log1p(-std::exp(log_p)), log_front};
  }
  // Q = front / (t + 1 - k - 1 (1 - k) / (t + 3 - k - 2 (2 - k) / (t + 5 - k - ...)))
  constexpr double kTiny = 1e-300;
  double b = t + 1 - k;
  double c = 1 / kTiny;
  double d = 1 / b;
  double h = d;
  for (int i = 1; i < kMaxTerms; ++i) {
    const double an = -i * (i - k);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < kEps) break;
  }
  const double log_q = log_front + std::log(h);
  return {std::log1p(-std::exp(log_q)), log_q, log_front};
}

/// Where a search for a quantile last evaluated its function: the warm start for the next
/// search of a sweep over increasing quantiles.
struct Probe {
  double x = kNaN;      ///< where (for a gamma: ln t)
  double log_side = 0;  ///< ln of the tail probability there (lower or upper, as `upper` says)
  double slope = 0;     ///< |d log_side / dx| there
  bool upper = false;
};

/// Halley's step for a root of h from a point where h has value `h`, slope `h1` and curvature
/// `h2`: cubically convergent; Newton's step where Halley's correction is not small.
struct Step {
  double size;
  bool halley;

  /// Whether the error after this step is of order 1e-15 relative (quadratic or cubic
  /// convergence from a step this small).
  bool final(double scale) const { return std::abs(size) <= (halley ? 1e-5 : 1e-8) * scale; }
};

Step halley_step(double h, double h1, double h2) {
  const double newton = -h / h1;
  const double correction = 1 + 0.5 * newton * h2 / h1;
  if (correction > 0.5 && correction < 2) return {newton / correction, true};
  return {newton, false};
}

/// Newton's first step from `probe` towards the point whose tail probability is `prob`, or
/// `fallback` when there is no usable probe.
double start_from(const Probe& probe, TailProb prob, double fallback) {
  if (!std::isfinite(probe.x)) return fallback;
  if (probe.upper != prob.upper || !(probe.slope > 0) || !std::isfinite(probe.slope)) {
    return probe.x;
  }
  const double step = (std::log(prob.p) - probe.log_side) / probe.slope;
  return prob.upper ? probe.x - step : probe.x + step;
}

/// The t with P(k, t) = p (or Q(k, t) = p for an upper probability), by Newton's method on the
/// log of that tail against ln t, safeguarded by bisection, starting from `probe` when it holds
/// the previous search of a sweep (and updating it).
double gamma_standard_quantile(double k, double log_gamma_k, TailProb prob, Probe& probe) {
  const double target = std::log(prob.p);
  double guess;
  {
    // Wilson-Hilferty, or the lower tail's power law P(k, t) ~ t^k / Gamma(k + 1).
    const double z = prob.upper ? -normal_quantile(prob.p) : normal_quantile(prob.p);
    const double c = 1 / (9 * k);
    const double w = 1 - c + z * std::sqrt(c);
    guess = w > 0 ? std::log(k) + 3 * std::log(w) : (target + std::lgamma(k + 1)) / k;
  }
  double s = std::isfinite(probe.x) ? start_from(probe, prob, guess) : guess;
  // h(s) increases with s and vanishes at the answer.
  double lo = -kInf;
  double hi = kInf;
  constexpr double kMaxStep = 8;
  for (int iteration = 0; iteration < 400; ++iteration) {
    const GammaTails g = incomplete_gamma(k, log_gamma_k, s);
    const double side = prob.upper ? g.log_q : g.log_p;
    const double h = prob.upper ? target - side : side - target;
    const double slope = std::exp(g.log_front - side);
    probe = {s, side, slope, prob.upper};
    if (h == 0) return std::exp(s);
    (h < 0 ? lo : hi) = s;
    // d slope / ds = slope (k - t -+ slope), since d log_front / ds = k - t.
    const double curvature = slope * (k - std::exp(s) + (prob.upper ? slope : -slope));
    const Step step = halley_step(h, slope, curvature);
    double next = s + std::clamp(step.size, -kMaxStep, kMaxStep);
    const bool inside = next > lo && next < hi;
    if (inside && std::abs(step.size) <= kMaxStep && step.final(1)) return std::exp(next);
    if (!inside) {
      next = std::isfinite(lo) && std::isfinite(hi) ? 0.5 * (lo + hi)
             : std::isfinite(lo)                    ? lo + kMaxStep
                                                    : hi - kMaxStep;
    }
    if (hi - lo < 1e-15 * std::max(1.0, std::abs(s))) {
      return std::exp(next);
    }
    s = next;
  }
  return std::exp(s);
}

/// CDF, survival function and density at one point.
struct Point {
  double cdf = 0;
  double sf = 1;
  double density = 0;        ///< of the continuous part; atoms contribute none
  double density_slope = 0;  ///< derivative of the density
};

/// A DistributionSpec prepared for evaluation: validated parameters, derived constants and
/// sorted samples.
class Law {
 public:
  explicit Law(const DistributionSpec& d) : spec_(d) {
    switch (d.family) {
      case Family::constant:
        break;
      case Family::normal:
        assert(d.stddev > 0 && "a normal's stddev is positive (validated by the loader)");
        alpha_ = (d.floor - d.mean) / d.stddev;
        below_floor_ = normal_cdf(alpha_);
        above_floor_ = normal_sf(alpha_);
        assert(above_floor_ > 0 && "a normal's floor leaves some probability above it");
        break;
      case Family::lognormal:
        assert(d.sigma > 0 && "a lognormal's sigma is positive (validated by the loader)");
        break;
      case Family::gamma:
        assert(d.shape > 0 && d.scale > 0 && "a gamma's shape and scale are positive");
        log_gamma_k_ = std::lgamma(d.shape);
        break;
      case Family::uniform:
        assert(d.high > d.low && "a uniform's max exceeds its min (validated by the loader)");
        break;
      case Family::empirical:
        assert(!d.samples.empty() && "an empirical distribution has samples");
        sorted_ = d.samples;
        std::sort(sorted_.begin(), sorted_.end());
        break;
      case Family::mixture:
        for (const auto& [weight, component] : d.components) {
          assert(component.family != Family::mixture && "mixtures do not nest");
          if (weight > 0) components_.emplace_back(weight, Law(component));
          has_atoms_ = has_atoms_ || component.family == Family::constant ||
                       component.family == Family::empirical;
        }
        assert(!components_.empty() && "a mixture has a component of positive weight");
        break;
    }
  }

  Point at(double x) const {
    const DistributionSpec& d = spec_;
    switch (d.family) {
      case Family::constant:
        return x < d.value ? Point{} : Point{1, 0, 0, 0};
      case Family::normal: {
        if (!(x > d.floor)) return {};
        const double z = (x - d.mean) / d.stddev;
        const double sf = normal_sf(z) / above_floor_;
        const double cdf = alpha_ <= 0 ? (normal_cdf(z) - below_floor_) / above_floor_
                                       : (above_floor_ - normal_sf(z)) / above_floor_;
        const double density = normal_pdf(z) / (d.stddev * above_floor_);
        return {cdf, sf, density, -density * z / d.stddev};
      }
      case Family::lognormal: {
        if (!(x > d.shift)) return {};
        const double y = x - d.shift;
        const double z = (std::log(y) - d.mu) / d.sigma;
        const double density = normal_pdf(z) / (d.sigma * y);
        return {normal_cdf(z), normal_sf(z), density, -density * (1 + z / d.sigma) / y};
      }
      case Family::gamma: {
        if (!(x > d.shift)) return {};
        const double t = (x - d.shift) / d.scale;
        if (std::isinf(t)) return {1, 0, 0, 0};
        const GammaTails g = incomplete_gamma(d.shape, log_gamma_k_, std::log(t));
        const double density = std::exp(g.log_front) / (t * d.scale);
        return {std::exp(g.log_p), std::exp(g.log_q), density,
                density * ((d.shape - 1) / t - 1) / d.scale};
      }
      case Family::uniform: {
        const double width = d.high - d.low;
        const double cdf = std::clamp((x - d.low) / width, 0.0, 1.0);
        const double sf = std::clamp((d.high - x) / width, 0.0, 1.0);
        return {cdf, sf, x >= d.low && x < d.high ? 1 / width : 0, 0};
      }
      case Family::empirical: {
        const auto n = static_cast<double>(sorted_.size());
        const auto count = std::upper_bound(sorted_.begin(), sorted_.end(), x) - sorted_.begin();
        return {static_cast<double>(count) / n,
                static_cast<double>(std::ssize(sorted_) - count) / n, 0, 0};
      }
      case Family::mixture: {
        Point sum{0, 0, 0, 0};
        for (const auto& [weight, component] : components_) {
          const Point p = component.at(x);
          sum.cdf += weight * p.cdf;
          sum.sf += weight * p.sf;
          sum.density += weight * p.density;
          sum.density_slope += weight * p.density_slope;
        }
        return sum;
      }
    }
    return {kNaN, kNaN, kNaN, kNaN};
  }

  /// The quantiles at `probs`, best listed in increasing order of the answer (each answer seeds
  /// the next search).
  std::vector<double> quantiles(const std::vector<TailProb>& probs) const {
    const DistributionSpec& d = spec_;
    std::vector<double> out(probs.size());
    switch (d.family) {
      case Family::constant:
        std::fill(out.begin(), out.end(), d.value);
        break;
      case Family::normal:
        for (size_t i = 0; i < probs.size(); ++i) out[i] = normal_quantile_at(probs[i]);
        break;
      case Family::lognormal:
        for (size_t i = 0; i < probs.size(); ++i) {
          const TailProb p = probs[i];
          const double z = p.upper ? -normal_quantile(p.p) : normal_quantile(p.p);
          out[i] = d.shift + std::exp(d.mu + d.sigma * z);
        }
        break;
      case Family::gamma: {
        Probe probe;
        for (size_t i = 0; i < probs.size(); ++i) {
          out[i] =
              d.shift + d.scale * gamma_standard_quantile(d.shape, log_gamma_k_, probs[i], probe);
        }
        break;
      }
      case Family::uniform:
        for (size_t i = 0; i < probs.size(); ++i) {
          const TailProb p = probs[i];
          out[i] = p.upper ? d.high - p.p * (d.high - d.low) : d.low + p.p * (d.high - d.low);
        }
        break;
      case Family::empirical:
        for (size_t i = 0; i < probs.size(); ++i) out[i] = empirical_quantile_at(probs[i]);
        break;
      case Family::mixture: {
        std::vector<std::vector<double>> parts;
        for (const auto& component : components_) {
          parts.push_back(component.second.quantiles(probs));
        }
        Probe probe;
        for (size_t i = 0; i < probs.size(); ++i) {
          double lo = kInf;
          double hi = -kInf;
          for (const auto& part : parts) {
            lo = std::min(lo, part[i]);
            hi = std::max(hi, part[i]);
          }
          out[i] = mixture_quantile_at(probs[i], lo, hi, probe);
        }
        break;
      }
    }
    return out;
  }

  double lower_end() const {
    const DistributionSpec& d = spec_;
    switch (d.family) {
      case Family::constant:
        return d.value;
      case Family::normal:
        return d.floor;
      case Family::lognormal:
      case Family::gamma:
        return d.shift;
      case Family::uniform:
        return d.low;
      case Family::empirical:
        return sorted_.front();
      case Family::mixture: {
        double lo = kInf;
        for (const auto& component : components_) lo = std::min(lo, component.second.lower_end());
        return lo;
      }
    }
    return kNaN;
  }

  double upper_end() const {
    const DistributionSpec& d = spec_;
    switch (d.family) {
      case Family::constant:
        return d.value;
      case Family::normal:
      case Family::lognormal:
      case Family::gamma:
        return kInf;
      case Family::uniform:
        return d.high;
      case Family::empirical:
        return sorted_.back();
      case Family::mixture: {
        double hi = -kInf;
        for (const auto& component : components_) hi = std::max(hi, component.second.upper_end());
        return hi;
      }
    }
    return kNaN;
  }

  double mean() const {
    const DistributionSpec& d = spec_;
    switch (d.family) {
      case Family::constant:
        return d.value;
      case Family::normal:
        return std::isinf(alpha_) ? d.mean : d.mean + d.stddev * normal_pdf(alpha_) / above_floor_;
      case Family::lognormal:
        return d.shift + std::exp(d.mu + 0.5 * d.sigma * d.sigma);
      case Family::gamma:
        return d.shift + d.shape * d.scale;
      case Family::uniform:
        return 0.5 * (d.low + d.high);
      case Family::empirical:
        return std::accumulate(sorted_.begin(), sorted_.end(), 0.0) /
               static_cast<double>(sorted_.size());
      case Family::mixture: {
        double sum = 0;
        for (const auto& [weight, component] : components_) sum += weight * component.mean();
        return sum;
      }
    }
    return kNaN;
  }

 private:
  double normal_quantile_at(TailProb prob) const {
    const DistributionSpec& d = spec_;
    // Probabilities below and above the answer in the untruncated normal; the smaller one is the
    // accurate one to invert.
    const double below = prob.upper ? below_floor_ + above_floor_ * (1 - prob.p)
                                    : below_floor_ + above_floor_ * prob.p;
    const double above = prob.upper ? above_floor_ * prob.p : above_floor_ * (1 - prob.p);
    if (!prob.upper && std::isfinite(alpha_)) {
      // Just above the floor, `below` has lost the digits of the mass above the floor; invert
      // Phi(alpha + e) - Phi(alpha) = r phi(alpha) by its series in e instead.
      const double r = above_floor_ * prob.p / normal_pdf(alpha_);
      if (r < 1e-5) {
        const double e = r * (1 + r * (alpha_ / 2 + r * (2 * alpha_ * alpha_ + 1) / 6));
        return d.floor + d.stddev * e;
      }
    }
    const double z = below <= 0.5 ? normal_quantile(below) : -normal_quantile(above);
    return std::max(d.floor, d.mean + d.stddev * z);
  }

  /// Order statistic: the smallest sample x with cdf(x) >= u.
  double empirical_quantile_at(TailProb prob) const {
    const auto n = static_cast<double>(sorted_.size());
    // The smallest rank r (1-based) with r / n >= u, i.e. r >= n u, or with (n - r) / n <= p
    // for an upper probability p.
    const double rank = prob.upper ? std::ceil(n - prob.p * n) : std::ceil(prob.p * n);
    const auto r = static_cast<size_t>(std::clamp(rank, 1.0, n));
    return sorted_[r - 1];
  }

  /// The smallest x in [lo, hi] with cdf(x) >= u (or sf(x) <= p for an upper probability p), by
  /// Newton's method on the log of the tail probability, safeguarded by bisection, starting
  /// from `probe` when it holds the previous search of a sweep (and updating it). The
  /// components' quantiles at the same probability bracket the answer.
  double mixture_quantile_at(TailProb prob, double lo, double hi, Probe& probe) const {
    if (!(lo < hi)) return lo;
    const double target = std::log(prob.p);
    // g(x) increases with x and is >= 0 exactly where x qualifies.
    double curvature = 0;
    auto g = [&](double x) {
      const Point p = at(x);
      const double side = prob.upper ? p.sf : p.cdf;
      probe = {x, std::log(side), p.density / side, prob.upper};
      // d/dx (f / F) = f' / F - (f / F)^2; d/dx (f / S) = f' / S + (f / S)^2.
      curvature = p.density_slope / side + (prob.upper ? 1 : -1) * probe.slope * probe.slope;
      return prob.upper ? target - probe.log_side : probe.log_side - target;
    };
    if (has_atoms_) {
      // An atom often sits at an end of the bracket, where bisection would crawl.
      if (g(lo) >= 0) return lo;
      if (g(std::nextafter(hi, -kInf)) < 0) return hi;
    }
    const double lower_bound = lo;
    double x = start_from(probe, prob, kNaN);
    if (!(x > lo && x < hi)) x = lo + 0.5 * (hi - lo);
    for (int iteration = 0; iteration < 300; ++iteration) {
      const double gx = g(x);
      (gx >= 0 ? hi : lo) = x;
      const Step step = halley_step(gx, probe.slope, curvature);
      double next = x + step.size;
      const bool converging = next > lo && next < hi;
      if (converging && step.final(std::abs(x))) return next;
      if (!converging) next = lo + 0.5 * (hi - lo);
      if (!(hi - lo > 1e-15 * std::max(std::abs(lo), std::abs(hi)))) break;
      x = next;
    }
    return lo == lower_bound && g(lower_bound) >= 0 ? lower_bound : hi;
  }

  const DistributionSpec& spec_;
  double alpha_ = 0;        ///< normal: the floor in standard units
  double below_floor_ = 0;  ///< normal: untruncated probability below the floor
  double above_floor_ = 1;  ///< normal: untruncated probability above the floor
  double log_gamma_k_ = 0;  ///< gamma: ln Gamma(shape)
  std::vector<double> sorted_;
  std::vector<std::pair<double, Law>> components_;
  bool has_atoms_ = false;  ///< mixture: has a constant or empirical component
};

// Layout of a table sampler's table: the main grid u = i / 2^kMainBits for i in
// [kMainFirst, kMainLast], then per tail (lower, upper) the dyadic levels and the exact words.
constexpr int kFirstLevel = 6;  // leading zeros of the words of the outermost tail level
constexpr int kLastLevel = 59;  // the deepest level with 16 sub-intervals of whole words
constexpr size_t kLevelNodes = 17;
constexpr size_t kExactWords = 16;  // words (from the edge) below the deepest level
constexpr size_t kTailSize = (kLastLevel - kFirstLevel + 1) * kLevelNodes + kExactWords;

}  // namespace

double distribution_cdf(const DistributionSpec& d, double x) { return Law(d).at(x).cdf; }

double distribution_quantile(const DistributionSpec& d, double u) {
  const Law law(d);
  if (!(u > 0)) return law.lower_end();
  if (!(u < 1)) return law.upper_end();
  const TailProb prob = u <= 0.5 ? TailProb{u, false} : TailProb{1 - u, true};
  return law.quantiles({prob})[0];
}

double distribution_mean(const DistributionSpec& d) { return Law(d).mean(); }

Sampler::Sampler(const DistributionSpec& spec) {
  const Law law(spec);
  mean_ = law.mean();
  switch (spec.family) {
    case Family::constant:
      kind_ = Kind::constant;
      value_ = spec.value;
      return;
    case Family::uniform:
      kind_ = Kind::uniform;
      value_ = spec.low;
      width_ = spec.high - spec.low;
      return;
    case Family::empirical:
      kind_ = Kind::empirical;
      table_ = spec.samples;
      return;
    case Family::normal:
    case Family::lognormal:
    case Family::gamma:
    case Family::mixture:
      kind_ = Kind::table;
      break;
  }
  // Every node as a tail probability with its slot in the table, listed in increasing order of
  // the quantile so that each search starts from the previous answer.
  const size_t main_size = kMainLast - kMainFirst + 1;
  const size_t lower = main_size;
  const size_t upper = lower + kTailSize;
  std::vector<TailProb> probs;
  std::vector<size_t> slots;
  auto add = [&](uint64_t word_from_edge, bool is_upper, size_t slot) {
    // (word + 0.5) / 2^64: the probability a word stands for, from its edge.
    probs.push_back({(static_cast<double>(word_from_edge) + 0.5) * 0x1p-64, is_upper});
    slots.push_back(slot);
  };
  auto level_word = [](int level, size_t node) {
    return (uint64_t{1} << (63 - level)) + node * (uint64_t{1} << (59 - level));
  };
  for (uint64_t w = 0; w < kExactWords; ++w) add(w, false, lower + kTailSize - kExactWords + w);
  for (int level = kLastLevel; level >= kFirstLevel; --level) {
    for (size_t node = 0; node < kLevelNodes; ++node) {
      add(level_word(level, node), false,
          lower + static_cast<size_t>(level - kFirstLevel) * kLevelNodes + node);
    }
  }
  for (size_t i = kMainFirst; i <= kMainLast; ++i) {
    const double u = static_cast<double>(i) / static_cast<double>(size_t{1} << kMainBits);
    probs.push_back(u <= 0.5 ? TailProb{u, false} : TailProb{1 - u, true});
    slots.push_back(i - kMainFirst);
  }
  for (int level = kFirstLevel; level <= kLastLevel; ++level) {
    for (size_t node = kLevelNodes; node-- > 0;) {
      add(level_word(level, node), true,
          upper + static_cast<size_t>(level - kFirstLevel) * kLevelNodes + node);
    }
  }
  for (uint64_t w = kExactWords; w-- > 0;) add(w, true, upper + kTailSize - kExactWords + w);

  const std::vector<double> values = law.quantiles(probs);
  table_.assign(upper + kTailSize, kNaN);
  for (size_t i = 0; i < values.size(); ++i) table_[slots[i]] = values[i];
  body_.assign(table_.begin(), table_.begin() + static_cast<std::ptrdiff_t>(main_size));
}

double Sampler::draw_tail(uint64_t random_word) const {
  // Lower tail: the word itself counts from the edge; upper tail: its complement does.
  const bool upper = (random_word >> 63) != 0;
  const uint64_t from_edge = upper ? ~random_word : random_word;
  const double* tail = table_.data() + (kMainLast - kMainFirst + 1) + (upper ? kTailSize : 0);
  if (from_edge < kExactWords) return tail[kTailSize - kExactWords + from_edge];
  const int level = std::countl_zero(from_edge);  // kFirstLevel..kLastLevel
  const uint64_t aligned = from_edge << level;    // the leading one at bit 63
  const size_t node = static_cast<size_t>(aligned >> 59) & 15;
  const double f = static_cast<double>((aligned << 5) >> 11) * 0x1p-53;
  const double* at = tail + static_cast<size_t>(level - kFirstLevel) * kLevelNodes + node;
  return at[0] + f * (at[1] - at[0]);
}

}  // namespace prismsim
