#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "config/variability_spec.hpp"

namespace prismsim {

/// Theoretical CDF P(X <= x) of `d`. A normal is truncated to values above its floor and
/// renormalised; lognormal and gamma draws are offset by their shift; an empirical distribution
/// has the step CDF of its samples; a mixture's CDF is the weighted sum of its components'.
double distribution_cdf(const DistributionSpec& d, double x);

/// Inverse CDF: the smallest x with distribution_cdf(d, x) >= u, for 0 < u < 1 (u <= 0 gives the
/// lower end of the support, u >= 1 the upper end, either possibly infinite). Closed forms for
/// uniform, normal and lognormal; a safeguarded Newton iteration for gamma and mixtures; an order
/// statistic for empirical distributions. Accurate to about 1e-12 relative or better.
double distribution_quantile(const DistributionSpec& d, double u);

/// Mean of `d` (the truncated mean for a normal with a floor).
double distribution_mean(const DistributionSpec& d);

/// Draws from a DistributionSpec in a few nanoseconds, as a pure function of one uniformly random
/// 64-bit word (the caller owns random number generation, e.g. keyed counter-based streams).
///
/// A run draws tens of millions of values, so a draw must cost a few nanoseconds and may not
/// evaluate a transcendental function; tails must stay honest all the same. Draws are therefore
/// inverse-transform samples through quantile tables computed once at construction:
///  - the word stands for u = (word + 0.5) / 2^64;
///  - for 1/64 <= u < 63/64 (97% of draws), linear interpolation in u of the quantile function
///    tabulated at u = i / 1024;
///  - in each tail (u < 1/64 or 1 - u < 1/64), dyadic levels: the level holding probabilities
///    [2^-(c+1), 2^-c) from the edge is picked by counting the word's leading zeros (or ones) and
///    is interpolated linearly between 17 quantiles; the 16 words nearest each edge are tabulated
///    exactly. Extreme quantiles (p99.99 and far beyond, down to 2^-64) thus keep 1e-3 relative
///    accuracy or better (upper tails 4e-4 for a lognormal of sigma 2) without any per-draw
///    transcendental function; only laws steeper than u^2 at their lower end (gamma of shape
///    below 0.5) lose more there, relative to values that are themselves vanishingly small.
///    A uniform grid alone would not do (for a lognormal of sigma 1 it is 0.2% off near p99.9
///    and 2% in its last interval), hence the tail levels start at 1/64 rather than 1/4096.
/// Constant, uniform and top-level empirical distributions are sampled exactly without tables.
/// Within a mixture, a constant or empirical component's atoms are smeared over at most one table
/// interval each (1/1024 of probability in the body). Construction costs a few milliseconds at
/// most (about 2,700 quantiles). Draws are deterministic: the same word gives the same value, bit
/// for bit, on the same platform.
class Sampler {
 public:
  /// The constant 1.
  Sampler() = default;
  /// Precomputes the tables of `spec` (parameters as validated by the loader).
  explicit Sampler(const DistributionSpec& spec);

  /// The draw for one uniformly random word: approximately
  /// distribution_quantile(spec, (random_word + 0.5) / 2^64), exactly that for uniform words
  /// into an empirical list (index = floor(random_word * n / 2^64)).
  double draw(uint64_t random_word) const {
    switch (kind_) {
      case Kind::constant:
        return value_;
      case Kind::empirical:
        return table_[multiply_high(random_word, table_.size())];
      case Kind::uniform:
        return value_ + width_ * (static_cast<double>(random_word >> 11) + 0.5) * 0x1p-53;
      case Kind::table:
        break;
    }
    if ((random_word >> 58) - 1 < 62) {  // 1/64 <= u < 63/64
      constexpr int kFractionBits = 64 - kMainBits;
      const size_t i = static_cast<size_t>(random_word >> kFractionBits) - kMainFirst;
      const double f = static_cast<double>(random_word & ((uint64_t{1} << kFractionBits) - 1)) *
                       (1.0 / static_cast<double>(uint64_t{1} << kFractionBits));
      const double a = body_[i];
      return a + f * (static_cast<double>(body_[i + 1]) - a);
    }
    return draw_tail(random_word);
  }

  /// True for Family::constant: draw() then returns the value without work.
  bool is_constant() const { return kind_ == Kind::constant; }
  /// The distribution's theoretical mean (distribution_mean of the spec).
  double mean() const { return mean_; }

 private:
  enum class Kind : uint8_t { constant, empirical, uniform, table };
  /// The main grid: u = i / 2^kMainBits for i in [kMainFirst, kMainLast] (1/64 to 63/64). 1,024
  /// nodes (8 KiB) keep several laws in the L1 cache; linear interpolation between them is
  /// within 1e-3 relative of the quantile (see the tests).
  static constexpr int kMainBits = 10;
  static constexpr size_t kMainFirst = size_t{1} << (kMainBits - 6);
  static constexpr size_t kMainLast = (size_t{1} << kMainBits) - kMainFirst;

  static size_t multiply_high(uint64_t a, size_t n) {
    __extension__ using Wide = unsigned __int128;
    return static_cast<size_t>((static_cast<Wide>(a) * n) >> 64);
  }
  double draw_tail(uint64_t random_word) const;

  Kind kind_ = Kind::constant;
  double value_ = 1;  ///< constant: the value; uniform: the low end
  double width_ = 0;  ///< uniform: high - low
  double mean_ = 1;
  /// empirical: the samples; table: the main grid, then the lower and upper tail tables
  std::vector<double> table_;
  /// table: the main grid again, in single precision (relative error 6e-8): half the cache lines,
  /// so that the grids of the few laws a run draws from stay in the L1 cache
  std::vector<float> body_;
};

}  // namespace prismsim
