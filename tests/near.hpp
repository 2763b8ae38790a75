#pragma once

#include <algorithm>
#include <cmath>
#include <ostream>

namespace prismsim::testing {

/// A relative comparison: `a == Near{b, e}` when |a - b| <= e max(|a|, |b|), so exact at zero.
/// doctest::Approx(b).epsilon(e) allows e (1 + max(|a|, |b|)) instead: an absolute tolerance of e
/// for values far below 1 (the seconds of a collective, a probability), which cannot fail there.
struct Near {
  double value;
  double epsilon = 1.2e-5;  ///< doctest::Approx's default

  friend bool operator==(double a, const Near& near) {
    const double scale = std::max(std::fabs(a), std::fabs(near.value));
    return std::fabs(a - near.value) <= near.epsilon * scale;
  }
  friend std::ostream& operator<<(std::ostream& out, const Near& near) {
    return out << near.value << " (within " << near.epsilon << ")";
  }
};

}  // namespace prismsim::testing
