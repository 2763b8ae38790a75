#pragma once

#include <functional>
#include <vector>

namespace prismsim {

/// Minimises `f` from `start` by the Nelder-Mead simplex method (initial simplex: `step` along
/// each axis), stopping after `max_evaluations` or when the simplex's values differ by less than
/// `tolerance`. Deterministic. Returns the best point found.
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> start, double step, int max_evaluations,
                                double tolerance);

}  // namespace prismsim
