#include "app/training_study.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "core/text.hpp"
#include "montecarlo/process_pool.hpp"
#include "runtime/simulation.hpp"
#include "training/training_plan.hpp"
#include "variability/variation.hpp"
#include "workload/job_builder.hpp"
#include "workload/memory_estimate.hpp"

namespace prismsim {
namespace {

/// In a size's process: simulates `scenario`'s runs and sends their step times (uint64 runs, then
/// per run its step times as a string of doubles), or UINT64_MAX and why it failed.
int simulate_size(const Scenario& scenario, int jobs, int fd) {
  RecordWriter w;
  try {
    Topology topology(scenario.platform);
    const Job job = build_job(scenario, topology);
    Simulation simulation(scenario, job, std::move(topology));
    const VariationModel variation(scenario.variability, scenario, simulation.topology(), job);
    const auto records =
        run_replications(simulation, replications(scenario.simulation.runs, &variation),
                         scenario.simulation.seed, jobs);
    uint64_t runs = 0;
    for (const RunRecord& r : records) runs += !r.step_times_s.empty();
    w.put(runs);
    for (const RunRecord& r : records) {
      if (r.step_times_s.empty()) continue;
      w.put(static_cast<uint64_t>(r.step_times_s.size()));
      w.put_bytes(r.step_times_s.data(), r.step_times_s.size() * sizeof(double));
    }
  } catch (const std::exception& e) {
    w = RecordWriter{};
    w.put(UINT64_MAX).put_string(e.what());
  }
  return w.send(fd) ? 0 : 1;
}

/// The step times a size's process sent; throws std::runtime_error when it failed.
StepTimeSet decode_size(const Scenario& scenario, const TaskResult& task) {
  const std::string what = fmt::format("the elastic size of {} replicas", scenario.parallelism.dp);
  RecordReader in(task.bytes);
  uint64_t runs = 0;
  if (!in.get(runs)) throw std::runtime_error(what + ": its simulation ended without results");
  if (runs == UINT64_MAX) {
    std::string why;
    in.get_string(why);
    throw std::runtime_error(what + ": " + why);
  }
  StepTimeSet set{scenario.parallelism.dp, {}};
  for (uint64_t r = 0; r < runs; ++r) {
    uint64_t steps = 0;
    if (!in.get(steps) || steps > task.bytes.size()) {
      throw std::runtime_error(what + ": its simulation ended without results");
    }
    std::vector<double> times(steps);
    if (!in.get_bytes(times.data(), steps * sizeof(double))) {
      throw std::runtime_error(what + ": its simulation ended without results");
    }
    set.runs.push_back(std::move(times));
  }
  if (set.runs.empty()) throw std::runtime_error(what + ": no simulated step finished");
  return set;
}

}  // namespace

std::vector<StepTimeSet> simulate_elastic_sizes(const Scenario& scenario, int jobs,
                                                int* stop_signal) {
  std::vector<Scenario> sizes;
  for (int replicas : scenario.resilience.elastic_replicas) {
    sizes.push_back(elastic_scenario(scenario, replicas));
    check_memory(sizes.back());  // before simulating anything
  }
  std::vector<TaskResult> results(sizes.size());
  // One size at a time, each running `jobs` replications at once in its own process group.
  *stop_signal = run_tasks(
      static_cast<int>(sizes.size()), PoolOptions{1, true},
      [&](int size, int fd) { return simulate_size(sizes[static_cast<size_t>(size)], jobs, fd); },
      [&](int size, TaskResult task) { results[static_cast<size_t>(size)] = std::move(task); });
  std::vector<StepTimeSet> sets;
  if (*stop_signal != 0) return sets;
  for (size_t i = 0; i < sizes.size(); ++i) sets.push_back(decode_size(sizes[i], results[i]));
  return sets;
}
TrainingReport run_training_study(const Scenario& scenario, const std::vector<RunRecord>& runs,
                                  std::vector<StepTimeSet> elastic, int jobs) {
  StepTimeSet full{scenario.parallelism.dp, {}};
  for (const RunRecord& run : runs) {
    if (!run.step_times_s.empty()) full.runs.push_back(run.step_times_s);
  }
  if (full.runs.empty()) {
    throw std::runtime_error("no simulated step finished: the whole run cannot be simulated");
  }
  std::vector<StepTimeSet> sizes = {std::move(full)};
  for (StepTimeSet& set : elastic) sizes.push_back(std::move(set));
  TrainingReport report;
  report.plan = training_plan(scenario, std::move(sizes));
  const CheckpointSpec& c = scenario.resilience.checkpoint;
  const double step = StepTimeModel(report.plan.sizes.front()).mean_step_s();
  if (c.enabled && c.interval_s > 0 && c.interval_s < step) {
    Diagnostics diags;
    diags.error(c.interval_loc,
                fmt::format("'resilience.checkpoint.interval' is {}, shorter than the simulated "
                            "mean step of {}; give at least one step",
                            human_duration(c.interval_s), human_seconds(step)));
    diags.throw_if_any();
  }
  report.outcomes = simulate_training(report.plan, jobs);
  report.summary = summarize_training(report.plan, report.outcomes);
  return report;
}

}  // namespace prismsim
