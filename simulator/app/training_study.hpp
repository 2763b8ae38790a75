#pragma once

#include <vector>

#include "config/scenario.hpp"
#include "montecarlo/replications.hpp"
#include "stats/training_report.hpp"

namespace prismsim {

/// The step times of each of the scenario's elastic sizes (resilience.recovery.elastic), in
/// order: each size's scenario (elastic_scenario) is simulated like the study's own, same runs,
/// steps and seed, in a process of its own (SimGrid runs once per process), `jobs` runs at once.
/// Call it before the study builds its engine. A stop signal (SIGINT, SIGTERM, SIGHUP) ends it
/// with `*stop_signal` naming the signal and no sizes (else 0). Throws InputError when a size does
/// not fit in memory, std::runtime_error when its simulation fails.
std::vector<StepTimeSet> simulate_elastic_sizes(const Scenario& scenario, int jobs,
                                                int* stop_signal);

/// The whole run of `scenario` (simulation.train) over the step times of `runs` (the study's
/// replications at full size) and of `elastic` sizes, `jobs` replications at once. Throws
/// InputError when the checkpoint interval is shorter than the mean simulated step,
/// std::runtime_error when no run has a step.
TrainingReport run_training_study(const Scenario& scenario, const std::vector<RunRecord>& runs,
                                  std::vector<StepTimeSet> elastic, int jobs);

}  // namespace prismsim
