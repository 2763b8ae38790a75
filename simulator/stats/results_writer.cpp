#include "stats/results_writer.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/json.hpp"
#include "core/seeds.hpp"
#include "platform/sim_platform.hpp"
#include "workload/transformer_job.hpp"
#include "workload/transformer_model.hpp"

#ifndef PRISMSIM_VERSION
#define PRISMSIM_VERSION "unknown"
#endif

namespace prismsim {

std::pair<DistributionSummary, DistributionSummary> summarize_runs(
    const std::vector<RunRecord>& runs, int steps) {
  std::vector<double> step_times, job_times;
  for (const auto& run : runs) {
    step_times.insert(step_times.end(), run.step_times_s.begin(), run.step_times_s.end());
    if (static_cast<int>(run.step_times_s.size()) == steps) {
      double job = 0;
      for (double t : run.step_times_s) job += t;
      job_times.push_back(job);
    }
  }
  return {summarize(std::move(step_times)), summarize(std::move(job_times))};
}

std::string breakdown_csv(const std::vector<RunRecord>& runs,
                          const std::vector<std::string>& labels, const Scenario& scenario,
                          const Job& job, const Topology& topology) {
  std::string out =
      "run,which,job_time_s,rank,gpu,node,stage,replica,compute_s,layer_collective_s,"
      "collective_s,pipeline_wait_s,stream_wait_s\n";
  const RankGrid grid(scenario.parallelism);
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunRecord& run = runs[i];
    double job_time = 0;
    for (double t : run.step_times_s) job_time += t;
    for (size_t rank = 0; rank < run.rank_times.size(); ++rank) {
      const RankTimes& t = run.rank_times[rank];
      const int gpu = job.gpu_of_rank[rank];
      const auto coords = grid.coords(static_cast<int>(rank));
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", run.run, labels[i], job_time,
                         rank, gpu, topology.locate(gpu).node,
                         coords[static_cast<size_t>(ParallelDim::pp)],
                         coords[static_cast<size_t>(ParallelDim::dp)], t.compute_s,
                         t.layer_collective_s, t.collective_s, t.pipeline_wait_s, t.stream_wait_s);
    }
  }
  return out;
}

namespace {

/// The fraction of the runs that finished every step whose job time exceeds `deadline_s`.
double p_exceeds(const StudyResults& results, double deadline_s) {
  const auto steps = static_cast<size_t>(results.scenario->simulation.steps);
  size_t finished = 0, missed = 0;
  for (const RunRecord& run : results.runs) {
    if (run.step_times_s.size() != steps) continue;
    double job = 0;
    for (double t : run.step_times_s) job += t;
    ++finished;
    missed += job > deadline_s;
  }
  return finished == 0 ? 0.0 : static_cast<double>(missed) / static_cast<double>(finished);
}

}  // namespace

StudyResults gather_results(const Scenario& scenario, std::string collectives, int ranks_simulated,
                            std::vector<RunRecord> runs) {
  StudyResults results;
  results.scenario = &scenario;
  results.collectives = std::move(collectives);
  results.ranks_simulated = ranks_simulated;
  std::vector<double> steps, jobs;
  std::vector<std::vector<double>> steps_by_run, job_by_run;
  for (const auto& run : runs) {
    steps.insert(steps.end(), run.step_times_s.begin(), run.step_times_s.end());
    if (!run.step_times_s.empty()) steps_by_run.push_back(run.step_times_s);
    if (static_cast<int>(run.step_times_s.size()) == scenario.simulation.steps) {
      double job = 0;
      for (double t : run.step_times_s) job += t;
      jobs.push_back(job);
      job_by_run.push_back({job});
    }
  }
  results.step_time = summarize(std::move(steps));
  results.job_time = summarize(jobs);
  // The resampling has its own seed, derived from the study's: same inputs, same intervals.
  const uint64_t seed = splitmix64(scenario.simulation.seed ^ 0x626f6f74737472ULL);
  const std::vector<double> quantiles = {0.50, 0.95, 0.99};
  if (!steps_by_run.empty()) {
    results.step_time_ci =
        bootstrap_quantiles(steps_by_run, quantiles, kConfidenceLevel, kBootstrapResamples, seed);
  }
  if (!job_by_run.empty()) {
    results.job_time_ci =
        bootstrap_quantiles(job_by_run, quantiles, kConfidenceLevel, kBootstrapResamples, seed + 1);
  }
  results.runs = std::move(runs);
  for (double deadline : scenario.simulation.deadlines_s) {
    results.deadline_miss.push_back({deadline, p_exceeds(results, deadline), 0});
  }
  return results;
}

void add_relative_deadlines(StudyResults& results, double deterministic_job_s) {
  for (double multiple : results.scenario->simulation.relative_deadlines) {
    const double deadline = multiple * deterministic_job_s;
    results.deadline_miss.push_back({deadline, p_exceeds(results, deadline), multiple});
  }
}

using Layout = JsonWriter::Layout;

/// `{count, mean, ..., max[, ci: {p50, p95, p99}]}`.
void write_distribution(JsonWriter& j, const DistributionSummary& d,
                        const std::vector<Interval>& ci) {
  j.begin_object()
      .member("count", d.count)
      .member("mean", d.mean)
      .member("std", d.std)
      .member("min", d.min)
      .member("p50", d.p50)
      .member("p90", d.p90)
      .member("p95", d.p95)
      .member("p99", d.p99)
      .member("max", d.max);
  if (ci.size() == 3) {
    j.key("ci").begin_object(Layout::line);
    const char* names[] = {"p50", "p95", "p99"};
    for (size_t i = 0; i < 3; ++i) {
      j.key(names[i]).begin_array(Layout::line).value(ci[i].low).value(ci[i].high).end();
    }
    j.end();
  }
  j.end();
}

void compare_to_measured(StudyResults& results, const std::string& file,
                         const std::vector<double>& measured) {
  std::vector<double> simulated;
  for (const auto& run : results.runs) {
    simulated.insert(simulated.end(), run.step_times_s.begin(), run.step_times_s.end());
  }
  if (simulated.empty()) return;
  const DistributionSummary m = summarize(measured);
  const DistributionSummary& s = results.step_time;
  results.comparison = StudyResults::Comparison{file,
                                                measured.size(),
                                                ks_distance(simulated, measured),
                                                s.p50 / m.p50 - 1,
                                                s.p95 / m.p95 - 1,
                                                s.p99 / m.p99 - 1};
}

/// `{"mean": .., "p50": .., "p95": .., "p99": ..}` of `d`, divided by `divide_by`.
void write_percentiles(JsonWriter& j, const DistributionSummary& d, double divide_by) {
  j.begin_object(Layout::line)
      .member("mean", d.mean / divide_by)
      .member("p50", d.p50 / divide_by)
      .member("p95", d.p95 / divide_by)
      .member("p99", d.p99 / divide_by)
      .end();
}

/// `"baseline"` and `"variability"` for a scenario with variation.
void write_variation(JsonWriter& j, const StudyResults& r) {
  if (r.sources.empty()) return;
  if (r.baseline) {
    j.key("baseline")
        .begin_object(Layout::line)
        .member("step_time_s", r.baseline->step_time_s)
        .member("job_time_s", r.baseline->job_time_s)
        .end();
  }
  j.key("variability").begin_object();
  j.key("sources").values(r.sources);
  if (r.baseline) {
    j.key("slowdown").begin_object(Layout::line).key("step_time");
    write_percentiles(j, r.step_time, r.baseline->step_time_s);
    j.key("job_time");
    write_percentiles(j, r.job_time, r.baseline->job_time_s);
    j.end();
  }
  if (!r.attribution.empty()) {
    j.key("attribution").begin_array();
    for (const auto& a : r.attribution) {
      auto change = [&](const DistributionSummary& full, const DistributionSummary& without) {
        j.begin_object(Layout::line)
            .member("p50", full.p50 - without.p50)
            .member("p95", full.p95 - without.p95)
            .member("p99", full.p99 - without.p99)
            .end();
      };
      j.begin_object(Layout::line).member("source", a.source);
      j.key("without").begin_object(Layout::line).key("step_time_s");
      write_percentiles(j, a.step_time, 1);
      j.key("job_time_s");
      write_percentiles(j, a.job_time, 1);
      j.end();
      j.key("added").begin_object(Layout::line).key("step_time_s");
      change(r.step_time, a.step_time);
      j.key("job_time_s");
      change(r.job_time, a.job_time);
      j.end().end();
    }
    j.end();
  }
  j.end();
}

std::string summary_json(const StudyResults& r) {
  const Scenario& s = *r.scenario;
  int completed = 0;
  for (const auto& run : r.runs) completed += run.ok;
  const auto& d = r.step_time;
  const EventCounters counters = r.runs.empty() ? EventCounters{} : r.runs.front().counters;
  JsonWriter j;
  j.begin_object()
      .member("prismsim_version", PRISMSIM_VERSION)
      .member("scenario", s.name)
      .member("platform", s.platform.name)
      .member("workload", s.workload.name)
      .member("gpus", s.parallelism.ranks())
      .member("ranks_simulated", r.ranks_simulated);
  j.key("parallelism")
      .begin_object(Layout::line)
      .member("dp", s.parallelism.dp)
      .member("tp", s.parallelism.tp)
      .member("pp", s.parallelism.pp)
      .member("cp", s.parallelism.cp)
      .end();
  j.member("runs", s.simulation.runs)
      .member("runs_completed", completed)
      .member("steps", s.simulation.steps)
      .member("seed", s.simulation.seed);
  j.key("network_model").begin_object();
  for (const auto& [key, value] : network_model_settings()) j.member(key, value);
  j.end();
  j.member("collectives", r.collectives);
  j.key("events_per_run")
      .begin_object(Layout::line)
      .member("executions", counters.executions)
      .member("transfers", counters.transfers)
      .end();
  if (d.count > 0 && s.workload.kind == WorkloadKind::transformer) {
    j.member("model_flops_utilization", model_flops_utilization(s, d.mean));
  }
  j.key("step_time_s");
  write_distribution(j, d, r.step_time_ci);
  j.key("job_time_s");
  write_distribution(j, r.job_time, r.job_time_ci);
  if (const auto& c = r.comparison) {
    j.key("comparison")
        .begin_object(Layout::line)
        .member("file", c->file)
        .member("measured", c->measured)
        .member("ks_distance", c->ks_distance)
        .member("p50_error", c->p50_error)
        .member("p95_error", c->p95_error)
        .member("p99_error", c->p99_error)
        .end();
  }
  write_variation(j, r);
  j.key("confidence_intervals")
      .begin_object(Layout::line)
      .member("level", kConfidenceLevel)
      .member("method", "percentile bootstrap over runs")
      .member("resamples", kBootstrapResamples)
      .end();
  if (!r.deadline_miss.empty()) {
    j.key("deadlines").begin_array(Layout::line);
    for (const auto& deadline : r.deadline_miss) {
      j.begin_object(Layout::line).member("deadline_s", deadline.deadline_s);
      if (deadline.multiple > 0) j.member("of_deterministic_job_time", deadline.multiple);
      j.member("p_job_time_exceeds", deadline.p_exceeds).end();
    }
    j.end();
  }
  if (r.training) {
    j.key("training");
    write_training_json(j, *r.training);
  }
  if (const Provenance& p = r.provenance; !p.command.empty()) {
    // What the study was made from, and what the platform's parameters were fitted on.
    j.key("provenance").begin_object();
    j.key("command").values(p.command);
    j.key("overrides").values(p.overrides);
    j.key("inputs").begin_array();
    for (const InputFile& f : p.inputs) {
      j.begin_object(Layout::line).member("path", f.path).member("sha256", f.sha256).end();
    }
    j.end().member("prismsim_version", PRISMSIM_VERSION);
    j.key("platform_calibration")
        .begin_object()
        .member("compute", s.platform.calibration.compute)
        .member("collectives", s.platform.calibration.collectives)
        .end();
    j.end();
  }
  j.end();
  return j.take() + "\n";
}

std::string runs_csv(const StudyResults& r) {
  std::string out = "run,seed,step,step_time_s\n";
  for (const auto& run : r.runs) {
    for (size_t step = 0; step < run.step_times_s.size(); ++step) {
      out += fmt::format("{},{},{},{}\n", run.run, run.seed, step, run.step_times_s[step]);
    }
  }
  return out;
}

double model_flops_utilization(const Scenario& s, double step_s) {
  const double flops =
      model_flops_per_sequence(s.workload.model) * static_cast<double>(s.workload.global_batch);
  return flops /
         (step_s * s.parallelism.ranks() * s.platform.gpu.peak_flops.at(s.workload.precision));
}

std::string summary_text(const StudyResults& r) {
  const Scenario& s = *r.scenario;
  const auto& d = r.step_time;
  int completed = 0;
  for (const auto& run : r.runs) completed += run.ok;
  std::string text = fmt::format(
      "scenario {}: {} GPUs (dp {} x tp {} x pp {}{}) on {}, workload {}\n"
      "runs {} of {} completed, {} step(s) each, seed {}, collectives {}\n",
      s.name, s.parallelism.ranks(), s.parallelism.dp, s.parallelism.tp, s.parallelism.pp,
      s.parallelism.cp > 1 ? fmt::format(" x cp {}", s.parallelism.cp) : "", s.platform.name,
      s.workload.name, completed, s.simulation.runs, s.simulation.steps, s.simulation.seed,
      r.collectives);
  if (r.ranks_simulated < s.parallelism.ranks()) {
    text += fmt::format(
        "{} of {} ranks simulated: the others run exactly like the first rank of "
        "their tensor-parallel group\n",
        r.ranks_simulated, s.parallelism.ranks());
  }
  if (d.count > 0) {
    text += fmt::format("step time: mean {}  p50 {}  p95 {}  p99 {}  max {}\n",
                        human_seconds(d.mean), human_seconds(d.p50), human_seconds(d.p95),
                        human_seconds(d.p99), human_seconds(d.max));
    if (s.workload.kind == WorkloadKind::transformer) {
      text += fmt::format("model flops utilisation at the mean step: {:.1f}%\n",
                          100 * model_flops_utilization(s, d.mean));
    }
  }
  const auto& j = r.job_time;
  if (j.count > 0) {
    text += fmt::format("job time ({} steps): mean {}  p50 {}  p95 {}  p99 {}  max {}\n",
                        s.simulation.steps, human_seconds(j.mean), human_seconds(j.p50),
                        human_seconds(j.p95), human_seconds(j.p99), human_seconds(j.max));
  }
  if (r.comparison) {
    const auto& c = *r.comparison;
    text += fmt::format(
        "against {} ({} measured steps): KS distance {:.3f}, p50 {:+.1f}%, "
        "p95 {:+.1f}%, p99 {:+.1f}%\n",
        c.file, c.measured, c.ks_distance, 100 * c.p50_error, 100 * c.p95_error, 100 * c.p99_error);
  }
  if (!r.sources.empty()) {
    text += fmt::format("variation from: {}\n", fmt::join(r.sources, ", "));
  }
  if (r.baseline && d.count > 0) {
    text += fmt::format(
        "without variation: step {}, job {}; slowdown of step p50 x{:.4f}  p95 "
        "x{:.4f}  p99 x{:.4f}\n",
        human_seconds(r.baseline->step_time_s), human_seconds(r.baseline->job_time_s),
        d.p50 / r.baseline->step_time_s, d.p95 / r.baseline->step_time_s,
        d.p99 / r.baseline->step_time_s);
  }
  for (const auto& a : r.attribution) {
    text +=
        fmt::format("  {:<16} adds to step p50 {:+.4g} s  p95 {:+.4g} s  p99 {:+.4g} s\n", a.source,
                    d.p50 - a.step_time.p50, d.p95 - a.step_time.p95, d.p99 - a.step_time.p99);
  }
  for (const auto& deadline : r.deadline_miss) {
    const std::string relative =
        deadline.multiple > 0 ? fmt::format(", {:g}x the deterministic job", deadline.multiple)
                              : "";
    text += fmt::format("P(job time > {}{}) = {:.4g} over {} runs\n",
                        human_seconds(deadline.deadline_s), relative, deadline.p_exceeds, j.count);
  }
  if (r.training) text += training_text(*r.training);
  return text;
}

}  // namespace prismsim
