#include "stats/training_report.hpp"

#include <fmt/format.h>

#include <cmath>

#include "stats/results_writer.hpp"

namespace prismsim {
namespace {

using Layout = JsonWriter::Layout;

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

double mean_step_s(const TrainingReport& r) {
  return StepTimeModel(r.plan.sizes.front()).mean_step_s();
}

bool is_until(const TrainingReport& r) {
  return r.plan.length.kind == TrainLengthSpec::Kind::until;
}

}  // namespace

std::string human_duration(double s) {
  if (!std::isfinite(s)) return "inf";
  if (s < 120) return fmt::format("{:.4g} s", s);
  if (s < 7200) return fmt::format("{:.4g} min", s / 60);
  if (s < 172800) return fmt::format("{:.4g} h", s / 3600);
  return fmt::format("{:.4g} d", s / 86400);
}

void write_training_json(JsonWriter& j, const TrainingReport& r) {
  const TrainingSummary& s = r.summary;
  const TrainLengthSpec& length = r.plan.length;
  j.begin_object();
  j.key("length").begin_object(Layout::line);
  if (is_until(r)) {
    j.member("until_s", length.until_s);
  } else {
    j.member("steps", length.steps);
    if (length.tokens > 0) j.member("tokens", length.tokens);
  }
  j.end();
  j.member("replications", s.replications).member("finished", s.finished);
  j.key("step_time_model").begin_array();
  for (const StepTimeSet& set : r.plan.sizes) {
    j.begin_object(Layout::line)
        .member("replicas", set.replicas)
        .member("runs", set.runs.size())
        .member("mean_step_s", StepTimeModel(set).mean_step_s())
        .end();
  }
  j.end();
  if (!is_until(r)) {
    j.member("failure_free_s", s.failure_free_s);
    j.key("training_time_s");
    write_distribution(j, s.wall_s, s.wall_ci);
  }
  j.key("goodput");
  write_distribution(j, s.goodput, {});
  j.key("goodput_mean_ci")
      .begin_array(Layout::line)
      .value(s.goodput_mean_ci.low)
      .value(s.goodput_mean_ci.high)
      .end();
  j.key("work_steps");
  write_distribution(j, s.work_steps, {});
  j.key("time_by_cause_s").begin_object(Layout::line);
  for (int c = 0; c < kTimeCauses; ++c) {
    j.member(to_string(static_cast<TimeCause>(c)), s.mean_time_s[static_cast<size_t>(c)]);
  }
  j.end();
  j.key("fraction_by_cause").begin_object(Layout::line);
  for (int c = 0; c < kTimeCauses; ++c) {
    j.member(to_string(static_cast<TimeCause>(c)), s.mean_fraction[static_cast<size_t>(c)]);
  }
  j.end();
  j.key("interruptions");
  write_distribution(j, s.interruptions, {});
  j.member("planned_restarts_mean", s.mean_planned_restarts)
      .member("degradations_mean", s.mean_degradations)
      .member("checkpoints_mean", s.mean_checkpoints)
      .member("elastic_restarts_mean", s.mean_elastic_restarts);
  j.member("failure_rate_per_s", s.rates.total_per_s)
      .member("stopping_failure_rate_per_s", s.rates.crash_per_s);
  j.key("components").begin_array();
  for (size_t i = 0; i < s.components.size(); ++i) {
    const FailureComponentSpec& spec = r.plan.resilience.components[i];
    j.begin_object(Layout::line)
        .member("name", s.components[i].name)
        .member("per", to_string(spec.per))
        .member("effect", to_string(spec.effect))
        .member("units", r.plan.shape.units(spec.per))
        .member("job_rate_per_s", s.components[i].job_rate_per_s)
        .member("failures_mean", s.components[i].mean_failures)
        .end();
  }
  j.end();
  const CheckpointSpec& c = r.plan.resilience.checkpoint;
  j.key("checkpoint").begin_object(Layout::line);
  if (c.enabled) {
    j.member("interval_steps", s.interval_steps)
        .member("interval_s", static_cast<double>(s.interval_steps) * mean_step_s(r))
        .member("write_s", c.write_s)
        .member("load_s", c.load_s)
        .member("mode", c.async ? "async" : "sync");
  } else {
    j.member("interval_steps", 0);
  }
  j.end();
  const YoungDaly& y = s.reference;
  j.key("young_daly")
      .begin_object(Layout::line)
      .member("mtbf_s", y.mtbf_s)
      .member("checkpoint_cost_s", y.checkpoint_cost_s)
      .member("recovery_s", y.recovery_s)
      .member("young_interval_s", y.young_interval_s)
      .member("daly_interval_s", y.daly_interval_s)
      .wrap()
      .member("young_interval_steps", y.young_interval_steps)
      .member("daly_interval_steps", y.daly_interval_steps)
      .end();
  if (!s.deadlines.empty()) {
    j.key("deadlines").begin_array(Layout::line);
    for (const auto& d : s.deadlines) {
      j.begin_object(Layout::line).member("deadline_s", d.deadline_s);
      if (d.multiple > 0) j.member("of_failure_free_time", d.multiple);
      j.member("p_finish", d.p_finish);
      j.key("ci").begin_array(Layout::line).value(d.ci.low).value(d.ci.high).end();
      j.end();
    }
    j.end();
  }
  j.end();
}

std::string training_csv(const TrainingReport& r) {
  std::string out = "replication,seed,finished,wall_s,goodput";
  for (int c = 0; c < kTimeCauses; ++c) {
    out += fmt::format(",{}_s", to_string(static_cast<TimeCause>(c)));
  }
  out +=
      ",work_steps,steps_run,interruptions,planned_restarts,degradations,checkpoints,"
      "elastic_restarts";
  for (const FailureComponentSpec& c : r.plan.resilience.components) {
    out += "," + csv_cell("failures_" + c.name);
  }
  out += "\n";
  for (const ReplicationOutcome& o : r.outcomes) {
    out += fmt::format("{},{},{},{},{}", o.replication, o.seed, o.finished ? 1 : 0, o.wall_s,
                       o.goodput());
    for (double t : o.time_s) out += fmt::format(",{}", t);
    out += fmt::format(",{},{},{},{},{},{},{}", o.work_steps, o.steps_run, o.interruptions,
                       o.planned_restarts, o.degradations, o.checkpoints, o.elastic_restarts);
    for (int n : o.failures_by_component) out += fmt::format(",{}", n);
    out += "\n";
  }
  return out;
}

std::string training_text(const TrainingReport& r) {
  const TrainingSummary& s = r.summary;
  const TrainLengthSpec& length = r.plan.length;
  std::string text =
      fmt::format("whole run: {}, {} replications; step time from {} run(s), mean {}\n",
                  is_until(r) ? fmt::format("{} of wall time", human_duration(length.until_s))
                              : fmt::format("{} steps", length.steps),
                  s.replications, r.plan.sizes.front().runs.size(), human_seconds(mean_step_s(r)));
  if (s.rates.total_per_s > 0) {
    text += fmt::format(
        "  failures: {:.4g} per hour hit the job, {:.4g} of which stop it "
        "(MTBF {})\n",
        s.rates.total_per_s * 3600, s.rates.crash_per_s * 3600, human_duration(s.reference.mtbf_s));
  }
  if (!is_until(r) && s.wall_s.count > 0) {
    auto ci = [&](size_t i) {
      return s.wall_ci.size() == 3 ? fmt::format(" [{}, {}]", human_duration(s.wall_ci[i].low),
                                                 human_duration(s.wall_ci[i].high))
                                   : std::string();
    };
    text += fmt::format(
        "  training time: mean {}  p50 {}{}  p95 {}{}  p99 {}{}  (without "
        "failures {})\n",
        human_duration(s.wall_s.mean), human_duration(s.wall_s.p50), ci(0),
        human_duration(s.wall_s.p95), ci(1), human_duration(s.wall_s.p99), ci(2),
        human_duration(s.failure_free_s));
  }
  if (s.finished < s.replications && !is_until(r)) {
    text += fmt::format(
        "  {} of {} replications did not finish within 1,000 times the run's "
        "failure-free length\n",
        s.replications - s.finished, s.replications);
  }
  if (is_until(r)) {
    text += fmt::format("  work done: mean {:.6g} steps  p50 {:.6g}  min {:.6g}\n",
                        s.work_steps.mean, s.work_steps.p50, s.work_steps.min);
  }
  text += fmt::format("  goodput: mean {:.4f} [{:.4f}, {:.4f}]  p50 {:.4f}  min {:.4f}\n",
                      s.goodput.mean, s.goodput_mean_ci.low, s.goodput_mean_ci.high, s.goodput.p50,
                      s.goodput.min);
  std::string causes;
  for (int c = 1; c < kTimeCauses; ++c) {
    causes += fmt::format("{}{} {:.2f}%", c > 1 ? ", " : "", to_string(static_cast<TimeCause>(c)),
                          100 * s.mean_fraction[static_cast<size_t>(c)]);
  }
  text += fmt::format("  wall time lost to: {}\n", causes);
  text += fmt::format(
      "  interruptions: mean {:.4g} (sd {:.3g}); planned restarts {:.4g}, "
      "degradations {:.4g}, checkpoints {:.4g}\n",
      s.interruptions.mean, s.interruptions.std, s.mean_planned_restarts, s.mean_degradations,
      s.mean_checkpoints);
  const YoungDaly& y = s.reference;
  if (s.interval_steps > 0) {
    text += fmt::format(
        "  checkpoint every {} steps ({}); Young/Daly interval {} / {} ({:.0f} / "
        "{:.0f} steps)\n",
        s.interval_steps, human_duration(static_cast<double>(s.interval_steps) * mean_step_s(r)),
        human_duration(y.young_interval_s), human_duration(y.daly_interval_s),
        y.young_interval_steps, y.daly_interval_steps);
  }
  for (const auto& d : s.deadlines) {
    const std::string relative =
        d.multiple > 0 ? fmt::format(", {:g}x the failure-free time", d.multiple) : "";
    text += fmt::format("  P(finished by {}{}) = {:.4g} [{:.4g}, {:.4g}]\n",
                        human_duration(d.deadline_s), relative, d.p_finish, d.ci.low, d.ci.high);
  }
  return text;
}

const std::vector<std::string>& training_sweep_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> c = {
        "training_time_mean_s", "training_time_p50_s", "training_time_p95_s",
        "training_time_p99_s",  "goodput_mean",        "goodput_p50",
        "goodput_min",          "work_steps_mean",     "interruptions_mean"};
    for (int i = 1; i < kTimeCauses; ++i) {
      c.push_back(fmt::format("fraction_{}", to_string(static_cast<TimeCause>(i))));
    }
    c.push_back("young_interval_s");
    c.push_back("daly_interval_s");
    c.push_back("p_finish_by_deadline");
    return c;
  }();
  return columns;
}

std::vector<std::string> training_sweep_cells(const TrainingReport& r) {
  const TrainingSummary& s = r.summary;
  auto number = [](double v) { return fmt::format("{}", v); };
  const bool walls = s.wall_s.count > 0;
  std::vector<std::string> cells = {walls ? number(s.wall_s.mean) : "",
                                    walls ? number(s.wall_s.p50) : "",
                                    walls ? number(s.wall_s.p95) : "",
                                    walls ? number(s.wall_s.p99) : "",
                                    number(s.goodput.mean),
                                    number(s.goodput.p50),
                                    number(s.goodput.min),
                                    number(s.work_steps.mean),
                                    number(s.interruptions.mean)};
  for (size_t i = 1; i < s.mean_fraction.size(); ++i) cells.push_back(number(s.mean_fraction[i]));
  const bool reference = s.reference.young_interval_s > 0;
  cells.push_back(reference ? number(s.reference.young_interval_s) : "");
  cells.push_back(reference ? number(s.reference.daly_interval_s) : "");
  cells.push_back(s.deadlines.empty() ? "" : number(s.deadlines.front().p_finish));
  return cells;
}

}  // namespace prismsim
