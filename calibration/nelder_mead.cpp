#include "nelder_mead.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace prismsim {

std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> start, double step, int max_evaluations,
                                double tolerance) {
  const size_t n = start.size();
  std::vector<std::vector<double>> simplex(n + 1, start);
  for (size_t i = 0; i < n; ++i) simplex[i + 1][i] += step;
  std::vector<double> value(n + 1);
  int evaluations = 0;
  auto eval = [&](const std::vector<double>& x) {
    ++evaluations;
    return f(x);
  };
  for (size_t i = 0; i <= n; ++i) value[i] = eval(simplex[i]);
  std::vector<size_t> order(n + 1);
  while (evaluations < max_evaluations) {
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return value[a] < value[b]; });
    const size_t best = order.front(), worst = order.back(), second = order[n - 1];
    if (std::fabs(value[worst] - value[best]) < tolerance) break;
    std::vector<double> centroid(n, 0.0);
    for (size_t i = 0; i <= n; ++i) {
      if (i == worst) continue;
      for (size_t d = 0; d < n; ++d) centroid[d] += simplex[i][d] / static_cast<double>(n);
    }
    auto along = [&](double t) {
      std::vector<double> x(n);
      for (size_t d = 0; d < n; ++d) x[d] = centroid[d] + t * (simplex[worst][d] - centroid[d]);
      return x;
    };
    const auto reflected = along(-1.0);
    const double fr = eval(reflected);
    if (fr < value[best]) {
      const auto expanded = along(-2.0);
      const double fe = eval(expanded);
      if (fe < fr) {
        simplex[worst] = expanded;
        value[worst] = fe;
      } else {
        simplex[worst] = reflected;
        value[worst] = fr;
      }
    } else if (fr < value[second]) {
      simplex[worst] = reflected;
      value[worst] = fr;
    } else {
      const auto contracted = fr < value[worst] ? along(-0.5) : along(0.5);
      const double fc = eval(contracted);
      if (fc < std::min(fr, value[worst])) {
        simplex[worst] = contracted;
        value[worst] = fc;
      } else {
        for (size_t i = 0; i <= n; ++i) {
          if (i == best) continue;
          for (size_t d = 0; d < n; ++d)
            simplex[i][d] = simplex[best][d] + 0.5 * (simplex[i][d] - simplex[best][d]);
          value[i] = eval(simplex[i]);
        }
      }
    }
  }
  const size_t best =
      static_cast<size_t>(std::min_element(value.begin(), value.end()) - value.begin());
  return simplex[best];
}

}  // namespace prismsim
