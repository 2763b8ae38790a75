#include "training/step_time_model.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "training/random_streams.hpp"

namespace prismsim {
namespace {

DistributionSpec standard_normal() {
  DistributionSpec d;
  d.family = DistributionSpec::Family::normal;
  d.mean = 0;
  d.stddev = 1;
  d.floor = -std::numeric_limits<double>::infinity();
  return d;
}

size_t index_below(uint64_t word, size_t n) {
  __extension__ using Wide = unsigned __int128;
  return static_cast<size_t>((static_cast<Wide>(word) * n) >> 64);
}

}  // namespace

StepTimeModel::StepTimeModel(const StepTimeSet& set)
    : replicas_(set.replicas), standard_normal_(standard_normal()) {
  assert(!set.runs.empty() && "a step-time model needs at least one run");
  double total = 0;
  for (const auto& steps : set.runs) {
    assert(!steps.empty() && "every run of a step-time model has steps");
    Run run;
    run.steps_s = steps;
    run.min_s = *std::min_element(steps.begin(), steps.end());
    run.max_s = *std::max_element(steps.begin(), steps.end());
    assert(run.min_s > 0 && "step times are positive");
    if (run.min_s == run.max_s) {
      run.mean_s = run.min_s;  // exact: a constant step sums without rounding drift
    } else {
      double sum = 0;
      for (double s : steps) sum += s;
      run.mean_s = sum / static_cast<double>(steps.size());
      double squares = 0;
      for (double s : steps) squares += (s - run.mean_s) * (s - run.mean_s);
      // The population variance: steps are drawn from the run's own steps, with replacement.
      run.sd_s = std::sqrt(squares / static_cast<double>(steps.size()));
    }
    total += run.mean_s;
    runs_.push_back(std::move(run));
  }
  mean_s_ = runs_.size() == 1 ? runs_.front().mean_s : total / static_cast<double>(runs_.size());
}

double StepTimeModel::sum_steps(int run_index, int64_t steps, uint64_t key) const {
  assert(steps >= 1);
  const Run& run = runs_[static_cast<size_t>(run_index)];
  const double k = static_cast<double>(steps);
  if (run.sd_s == 0) return k * run.mean_s;
  if (steps <= kExactSteps) {
    double sum = 0;
    for (int64_t i = 0; i < steps; ++i) {
      sum += run.steps_s[index_below(training_random::word(key, static_cast<uint64_t>(i)),
                                     run.steps_s.size())];
    }
    return sum;
  }
  const double z = standard_normal_.draw(training_random::word(key, 0));
  const double sum = k * run.mean_s + std::sqrt(k) * run.sd_s * z;
  return std::clamp(sum, k * run.min_s, k * run.max_s);
}

}  // namespace prismsim
