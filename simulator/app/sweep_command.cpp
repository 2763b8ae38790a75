#include "app/sweep_command.hpp"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/cli_errors.hpp"
#include "app/output_directory.hpp"
#include "app/run_guard.hpp"
#include "app/shard.hpp"
#include "app/study.hpp"
#include "config/scenario_loader.hpp"
#include "config/sweep_loader.hpp"
#include "core/diagnostics.hpp"
#include "core/files.hpp"
#include "core/json.hpp"
#include "montecarlo/process_pool.hpp"
#include "workload/memory_estimate.hpp"

namespace po = boost::program_options;

namespace prismsim {
namespace {

const char* const kUsage =
    "usage: prismsim sweep SWEEP.yaml [--out DIR] [--jobs J] [--runs N] [--seed S]\n"
    "                      [--set PATH=VALUE]... [--shard K/N] [--max-memory SIZE] [--force]\n";

struct SweepOptions {
  std::string file;
  std::string out = "out";
  int jobs = 0;
  std::vector<std::string> overrides;  ///< --set, then --runs and --seed as simulation.* values
  std::string shard;                   ///< --shard K/N, or empty
  std::string max_memory;              ///< refuse sweeps expected to need more; empty: available
  bool force = false;                  ///< run even when the estimate exceeds the memory
};

// ---------------------------------------------------------------------------------------------
// Loading every point before simulating any.

/// Where one of a point's overrides came from: the sweep file, or the command line.
struct OverrideOrigin {
  const SweepAssignment* assignment = nullptr;  ///< nullptr: the command line
  int command_line_index = 0;                   ///< 1-based among the command line's --set
};

/// A diagnostic of a point's scenario, located where the user wrote what caused it: a --set
/// written in the sweep file points into the sweep file; one from the command line keeps its
/// number there.
Diagnostic relocate(const Diagnostic& d, const std::vector<OverrideOrigin>& origins) {
  Diagnostic out = d;
  if (!d.where.file || *d.where.file != "--set" || d.where.line < 1 ||
      d.where.line > static_cast<int>(origins.size())) {
    return out;
  }
  const OverrideOrigin& origin = origins[static_cast<size_t>(d.where.line - 1)];
  if (origin.assignment == nullptr) {
    out.where.line = origin.command_line_index;
    return out;
  }
  const size_t equals = origin.assignment->text.find('=');
  out.where = d.where.column <= static_cast<int>(equals) + 1 ? origin.assignment->path_loc
                                                             : origin.assignment->value_loc;
  return out;
}

/// Loads and validates the scenario of every point (no SimGrid). Throws InputError with the
/// problems of every point, each message saying which point it is about, unless the problem is
/// the same in every point.
std::vector<Scenario> load_points(const SweepSpec& spec,
                                  const std::vector<std::string>& command_line) {
  std::vector<Scenario> scenarios;
  struct Reported {
    Diagnostic diagnostic;  ///< prefixed with its first point
    Diagnostic plain;
    size_t points = 0;  ///< how many points have it
    size_t last_point = 0;
  };
  std::vector<Reported> reported;
  std::map<std::string, size_t> index;  // location and message -> reported
  for (size_t point = 0; point < spec.points.size(); ++point) {
    std::vector<std::string> overrides;
    std::vector<OverrideOrigin> origins;
    for (const SweepAssignment& a : spec.set) {
      overrides.push_back(a.text);
      origins.push_back({&a, 0});
    }
    for (size_t i = 0; i < command_line.size(); ++i) {
      overrides.push_back(command_line[i]);
      origins.push_back({nullptr, static_cast<int>(i) + 1});
    }
    const std::vector<SweepAssignment> grid = spec.point_assignments(point);
    for (const SweepAssignment& a : grid) {
      overrides.push_back(a.text);
      origins.push_back({&a, 0});
    }
    try {
      Scenario scenario = load_scenario(spec.scenario, overrides);
      check_memory(scenario);
      scenarios.push_back(std::move(scenario));
    } catch (const InputError& e) {
      for (const Diagnostic& d : e.diagnostics()) {
        const Diagnostic plain = relocate(d, origins);
        const std::string key = plain.str();
        auto [it, inserted] = index.emplace(key, reported.size());
        if (inserted) {
          Diagnostic prefixed = plain;
          prefixed.message =
              fmt::format("in point {} ({}): {}", point, spec.point_label(point), plain.message);
          reported.push_back({prefixed, plain, 0, point});
        }
        Reported& r = reported[it->second];
        if (inserted || r.last_point != point) ++r.points;
        r.last_point = point;
      }
    }
  }
  if (reported.empty()) return scenarios;
  std::vector<Diagnostic> all;
  for (const Reported& r : reported) {
    const bool everywhere = spec.points.size() > 1 && r.points == spec.points.size();
    all.push_back(everywhere ? r.plain : r.diagnostic);
  }
  throw InputError(std::move(all));
}

// ---------------------------------------------------------------------------------------------
// What a point's process sends back.

/// One point's statistics, as the table shows them.
struct PointResult {
  int runs = 0;
  int runs_completed = 0;
  DistributionSummary step_time, job_time;
  bool has_baseline = false;
  double baseline_step_time_s = 0;
  std::vector<std::string> errors;  ///< why runs failed, or why the point did
  /// simulation.train: the cells of training_sweep_columns() (empty without a whole run)
  std::vector<std::string> training_cells;
};

/// What a point's table row takes from its study: the runs that finished, the statistics.
void record_study(const StudyResults& r, PointResult& result) {
  for (const RunRecord& run : r.runs) {
    result.runs_completed += run.ok;
    if (!run.ok) result.errors.push_back(run.error);
  }
  result.step_time = r.step_time;
  result.job_time = r.job_time;
  if (r.baseline) {
    result.has_baseline = true;
    result.baseline_step_time_s = r.baseline->step_time_s;
  }
}

/// Prints, on stderr, each point whose runs did not all complete; returns how many.
int report_failed_points(const SweepSpec& spec, const std::vector<PointResult>& results) {
  int failed = 0;
  for (size_t point = 0; point < results.size(); ++point) {
    const PointResult& r = results[point];
    if (r.runs_completed == r.runs && r.errors.empty()) continue;
    ++failed;
    std::cerr << fmt::format("prismsim: error: point {} ({}): {} of {} runs completed{}\n", point,
                             spec.point_label(point), r.runs_completed, r.runs,
                             r.errors.empty() ? "" : "; " + r.errors.front());
  }
  return failed;
}

constexpr uint32_t kEndOfResult = 0x70727377;  // "prsw": the result arrived whole

std::string encode(const PointResult& r) {
  RecordWriter w;
  w.put(r.runs).put(r.runs_completed).put(r.step_time).put(r.job_time);
  w.put(static_cast<uint8_t>(r.has_baseline)).put(r.baseline_step_time_s);
  for (const auto* texts : {&r.errors, &r.training_cells}) {
    w.put(static_cast<uint64_t>(texts->size()));
    for (const std::string& text : *texts) w.put_string(text);
  }
  w.put(kEndOfResult);
  return w.bytes();
}

/// The result in `bytes`, or nullopt when it did not arrive whole.
std::optional<PointResult> decode(const std::string& bytes) {
  RecordReader in(bytes);
  PointResult r;
  uint8_t has_baseline = 0;
  uint64_t errors = 0;
  if (!in.get(r.runs) || !in.get(r.runs_completed) || !in.get(r.step_time) || !in.get(r.job_time) ||
      !in.get(has_baseline) || !in.get(r.baseline_step_time_s) || !in.get(errors) ||
      errors > bytes.size()) {
    return std::nullopt;
  }
  r.has_baseline = has_baseline != 0;
  r.errors.resize(errors);
  for (std::string& error : r.errors) {
    if (!in.get_string(error)) return std::nullopt;
  }
  uint64_t cells = 0;
  if (!in.get(cells) || cells > bytes.size()) return std::nullopt;
  r.training_cells.resize(cells);
  for (std::string& cell : r.training_cells) {
    if (!in.get_string(cell)) return std::nullopt;
  }
  uint32_t end = 0;
  if (!in.get(end) || end != kEndOfResult || !in.at_end()) return std::nullopt;
  return r;
}

/// In a point's process: runs its study into `dir`, sends the statistics; returns the exit status.
int simulate_point(const Scenario& scenario, const StudyOptions& options,
                   const std::filesystem::path& dir, int fd) {
  PointResult result;
  result.runs = scenario.simulation.runs;
  try {
    const StudyOutcome outcome = run_study(scenario, options, dir);
    const StudyResults& r = outcome.results;
    record_study(r, result);
    if (r.training) result.training_cells = training_sweep_cells(*r.training);
  } catch (const std::exception& e) {
    result.errors.push_back(e.what());
  }
  const std::string bytes = encode(result);
  return write_all(fd, bytes.data(), bytes.size()) ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// Running the points, each in its own process group.

/// What became of a point.
enum class PointState { waiting, finished, cut_short };

/// "DIR/points/007".
std::filesystem::path point_directory(const std::filesystem::path& out, size_t point) {
  return out / "points" / fmt::format("{:03}", point);
}

/// Why a point's process sent no whole result.
std::string no_result(int status) {
  return WIFSIGNALED(status)
             ? fmt::format("its process was killed by signal {} ({})", WTERMSIG(status),
                           strsignal(WTERMSIG(status)))
             : fmt::format("its process exited with status {} before sending its results",
                           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/// Runs every point, at most `slots` at once, each with `jobs_per_point` replications at once, each
/// point's process leading its own process group (so that ending it ends its runs). Fills
/// `results` and `states`; returns the stop signal that ended it early (points not finished are
/// cut_short), or 0.
int run_points(const std::vector<Scenario>& scenarios, const std::filesystem::path& out, int slots,
               int jobs_per_point, const std::vector<std::string>& command,
               std::vector<PointResult>& results, std::vector<PointState>& states) {
  StudyOptions options;
  options.command = command;
  options.jobs = jobs_per_point;
  options.show_progress = false;
  const int points = static_cast<int>(scenarios.size());
  int done = 0;
  ProgressBar progress("points");
  std::vector<std::string> directory_error(scenarios.size());
  const int signal = run_tasks(
      points, PoolOptions{slots, true},
      [&](int point, int fd) {
        const std::filesystem::path dir = point_directory(out, static_cast<size_t>(point));
        return simulate_point(scenarios[static_cast<size_t>(point)], options, dir, fd);
      },
      [&](int point, TaskResult task) {
        const size_t p = static_cast<size_t>(point);
        if (auto result = decode(task.bytes)) {
          results[p] = std::move(*result);
          states[p] = PointState::finished;
        } else {
          results[p].runs = scenarios[p].simulation.runs;
          results[p].errors.push_back(no_result(task.wait_status));
          states[p] = PointState::cut_short;  // unless it died on its own: below
        }
        progress.update(++done, points);
      });
  progress.finish();
  // A point without a result was cut short by the stop signal, or failed on its own.
  for (PointState& state : states) {
    if (state == PointState::waiting && signal != 0) state = PointState::cut_short;
    if (state == PointState::cut_short && signal == 0) state = PointState::finished;
  }
  return signal;
}

// ---------------------------------------------------------------------------------------------
// The table.

/// A CSV cell: quoted when it holds a separator, a quote, a line break or edge spaces.
std::string csv_cell(const std::string& text) {
  const bool quote = text.find_first_of(",\"\r\n") != std::string::npos ||
                     (!text.empty() && (text.front() == ' ' || text.back() == ' '));
  if (!quote) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

/// The eight statistics of the table, in its order.
std::vector<double> statistics(const DistributionSummary& d) {
  return {d.mean, d.std, d.min, d.p50, d.p90, d.p95, d.p99, d.max};
}
constexpr const char* kStatisticNames[] = {"mean", "std", "min", "p50", "p90", "p95", "p99", "max"};

std::string sweep_csv(const SweepSpec& spec, const std::vector<PointResult>& results,
                      const std::vector<PointState>& states) {
  std::vector<std::string> header = {"point"};
  for (const SweepParameter& parameter : spec.parameters) {
    header.push_back(csv_cell(parameter.column));
  }
  for (const std::string& column : sweep_result_columns()) header.push_back(column);
  // Whole runs (simulation.train) add their columns.
  const bool training = std::any_of(results.begin(), results.end(),
                                    [](const PointResult& r) { return !r.training_cells.empty(); });
  if (training) {
    for (const std::string& column : training_sweep_columns()) header.push_back(column);
  }
  std::string out = fmt::format("{}\n", fmt::join(header, ","));
  for (size_t point = 0; point < results.size(); ++point) {
    if (states[point] != PointState::finished) continue;
    const PointResult& r = results[point];
    std::vector<std::string> row = {std::to_string(point)};
    for (size_t p = 0; p < spec.parameters.size(); ++p) {
      row.push_back(csv_cell(spec.parameters[p].values[spec.points[point][p]]));
    }
    row.push_back(std::to_string(r.runs));
    row.push_back(std::to_string(r.runs_completed));
    for (const DistributionSummary* d : {&r.step_time, &r.job_time}) {
      for (double value : statistics(*d)) {
        row.push_back(d->count > 0 ? fmt::format("{}", value) : "");
      }
    }
    const bool slowdown = r.has_baseline && r.step_time.count > 0;
    row.push_back(r.has_baseline ? fmt::format("{}", r.baseline_step_time_s) : "");
    for (double p : {r.step_time.p50, r.step_time.p95, r.step_time.p99}) {
      row.push_back(slowdown ? fmt::format("{}", p / r.baseline_step_time_s) : "");
    }
    if (training) {
      for (size_t c = 0; c < training_sweep_columns().size(); ++c) {
        row.push_back(c < r.training_cells.size() ? r.training_cells[c] : "");
      }
    }
    out += fmt::format("{}\n", fmt::join(row, ","));
  }
  return out;
}

using Layout = JsonWriter::Layout;

/// A point's distribution on one line, or null without a sample.
void write_distribution(JsonWriter& j, const DistributionSummary& d) {
  if (d.count == 0) {
    j.null();
    return;
  }
  j.begin_object(Layout::line).member("count", d.count);
  const auto values = statistics(d);
  for (size_t i = 0; i < values.size(); ++i) j.member(kStatisticNames[i], values[i]);
  j.end();
}

std::string sweep_json(const SweepSpec& spec, const std::vector<std::string>& command_line,
                       const std::vector<PointResult>& results,
                       const std::vector<PointState>& states) {
  std::vector<std::string> set;
  for (const SweepAssignment& a : spec.set) set.push_back(a.as_written);
  set.insert(set.end(), command_line.begin(), command_line.end());
  JsonWriter j;
  j.begin_object()
      .member("name", spec.name)
      .member("scenario", spec.scenario_as_written)
      .member("grid", to_string(spec.grid));
  j.key("set").values(set);
  j.key("parameters").begin_array();
  for (const SweepParameter& parameter : spec.parameters) {
    j.begin_object(Layout::line);
    if (!parameter.variants) {
      j.member("path", parameter.column).key("values").values(parameter.values).end();
      continue;
    }
    j.member("name", parameter.column).key("variants").begin_object(Layout::line);
    for (size_t v = 0; v < parameter.values.size(); ++v) {
      std::vector<std::string> assignments;
      for (const SweepAssignment& a : parameter.assignments[v]) assignments.push_back(a.as_written);
      j.key(parameter.values[v]).values(assignments);
    }
    j.end().end();
  }
  j.end();
  j.member("points_total", spec.points.size());
  j.key("points").begin_array();
  for (size_t point = 0; point < results.size(); ++point) {
    if (states[point] != PointState::finished) continue;
    const PointResult& r = results[point];
    j.begin_object(Layout::line)
        .member("point", point)
        .member("directory", fmt::format("points/{:03}", point));
    j.key("values").begin_object(Layout::line);
    for (size_t p = 0; p < spec.parameters.size(); ++p) {
      j.member(spec.parameters[p].column, spec.parameters[p].values[spec.points[point][p]]);
    }
    j.end().member("runs", r.runs).member("runs_completed", r.runs_completed);
    j.wrap().key("step_time_s");
    write_distribution(j, r.step_time);
    j.wrap().key("job_time_s");
    write_distribution(j, r.job_time);
    j.wrap().key("baseline_step_time_s");
    const bool slowdown = r.has_baseline && r.step_time.count > 0;
    const double base = r.baseline_step_time_s;
    if (r.has_baseline) {
      j.value(base);
    } else {
      j.null();
    }
    j.key("slowdown");
    if (slowdown) {
      j.begin_object(Layout::line)
          .member("p50", r.step_time.p50 / base)
          .member("p95", r.step_time.p95 / base)
          .member("p99", r.step_time.p99 / base)
          .end();
    } else {
      j.null();
    }
    if (!r.training_cells.empty()) {
      j.wrap().key("training").begin_object(Layout::line);
      for (size_t c = 0; c < r.training_cells.size(); ++c) {
        j.key(training_sweep_columns()[c]);
        if (r.training_cells[c].empty()) {
          j.null();
        } else {
          j.raw(r.training_cells[c]);
        }
      }
      j.end();
    }
    j.end();
  }
  j.end().end();
  return j.take() + "\n";
}

/// One line per finished point: its values, runs completed and step-time p50, p95, p99.
std::string summary_table(const SweepSpec& spec, const std::vector<PointResult>& results,
                          const std::vector<PointState>& states) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"point"};
  for (const SweepParameter& parameter : spec.parameters) header.push_back(parameter.column);
  for (const char* column : {"runs", "step p50", "step p95", "step p99"}) {
    header.emplace_back(column);
  }
  rows.push_back(header);
  for (size_t point = 0; point < results.size(); ++point) {
    if (states[point] != PointState::finished) continue;
    const PointResult& r = results[point];
    std::vector<std::string> row = {fmt::format("{:03}", point)};
    for (size_t p = 0; p < spec.parameters.size(); ++p) {
      row.push_back(spec.parameters[p].values[spec.points[point][p]]);
    }
    row.push_back(fmt::format("{}/{}", r.runs_completed, r.runs));
    for (double value : {r.step_time.p50, r.step_time.p95, r.step_time.p99}) {
      row.push_back(r.step_time.count > 0 ? human_seconds(value) : "-");
    }
    rows.push_back(std::move(row));
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      // Text columns to the left, the times to the right.
      const bool right = c + 3 >= row.size();
      line += c == 0 ? "" : "  ";
      line +=
          right ? fmt::format("{:>{}}", row[c], width[c]) : fmt::format("{:<{}}", row[c], width[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Sharded sweeps: a shard's slice of the (point, run) pairs, each point's part in its own process.

/// What a point's process streams to the shard, each kind followed by its payload.
enum : uint8_t {
  kSliceBuilt = 1,
  kSliceRun = 2,
  kSliceBaseline = 3,
  kSliceEnd = 4,
  kSliceError = 5
};

void put_run(RecordWriter& w, const RunRecord& run) {
  w.put(run.run).put(run.seed).put(static_cast<uint8_t>(run.ok)).put(run.counters);
  w.put(static_cast<uint64_t>(run.step_times_s.size()));
  w.put_bytes(run.step_times_s.data(), run.step_times_s.size() * sizeof(double));
  w.put_string(run.error);
}

bool get_run(RecordReader& in, RunRecord& run, size_t limit) {
  uint8_t ok = 0;
  uint64_t steps = 0;
  if (!in.get(run.run) || !in.get(run.seed) || !in.get(ok) || !in.get(run.counters) ||
      !in.get(steps) || steps > limit) {
    return false;
  }
  run.ok = ok != 0;
  run.step_times_s.resize(steps);
  return in.get_bytes(run.step_times_s.data(), steps * sizeof(double)) && in.get_string(run.error);
}

/// Throws UsageError unless the points can be sharded: the same runs each, no whole runs.
void check_shardable(const SweepSpec& spec, const std::vector<Scenario>& scenarios) {
  const int runs = scenarios.front().simulation.runs;
  for (size_t point = 0; point < scenarios.size(); ++point) {
    if (scenarios[point].simulation.runs != runs) {
      throw UsageError(
          fmt::format("--shard needs every point to have the same simulation.runs: "
                      "point 0 has {}, point {} ({}) has {}",
                      runs, point, spec.point_label(point), scenarios[point].simulation.runs));
    }
    if (scenarios[point].train.active()) {
      throw UsageError(
          "--shard does not take points with simulation.train (the whole run needs "
          "every run's step times in one process): run the sweep unsharded");
    }
  }
}

/// In a point's process: simulates `runs` of the point (and its baseline), streaming each
/// finished run; returns the exit status.
int simulate_point_slice(const Scenario& scenario, const std::vector<int>& runs, bool baseline,
                         int jobs, int fd) {
  try {
    const SliceOutcome slice = run_slice(
        scenario, runs, baseline, jobs, false,
        [fd](const SliceOutcome& built) {
          RecordWriter w;
          w.put(kSliceBuilt).put(built.ranks_simulated).put(static_cast<uint8_t>(built.varied));
          w.put_string(built.collectives).send(fd);
        },
        [fd](const RunRecord& run) {
          if (!run.ok) return;  // sent at the end, unless a signal cut it short
          RecordWriter w;
          w.put(kSliceRun);
          put_run(w, run);
          w.send(fd);
        });
    RecordWriter w;
    if (slice.stop_signal == 0) {
      for (const RunRecord& run : slice.runs) {
        if (run.ok) continue;
        w.put(kSliceRun);
        put_run(w, run);
      }
    }
    if (slice.baseline) {
      w.put(kSliceBaseline).put(slice.baseline->step_time_s).put(slice.baseline->job_time_s);
    }
    w.put(kSliceEnd).put(slice.stop_signal);
    return w.send(fd) ? 0 : 1;
  } catch (const std::exception& e) {
    RecordWriter w;
    w.put(kSliceError).put_string(e.what());
    w.send(fd);
    return 1;
  }
}

/// What a point's process sent: its runs (in run order), whether it finished, an error.
struct PointSlice {
  PartialPoint point;
  bool built = false;
  bool finished = false;  ///< its end arrived without a stop signal
  std::string error;
};

PointSlice decode_slice(const std::string& bytes) {
  PointSlice out;
  RecordReader in(bytes);
  uint8_t kind = 0;
  while (in.get(kind)) {
    if (kind == kSliceBuilt) {
      uint8_t varied = 0;
      if (!in.get(out.point.ranks_simulated) || !in.get(varied) ||
          !in.get_string(out.point.collectives)) {
        break;
      }
      out.point.varied = varied != 0;
      out.built = true;
    } else if (kind == kSliceRun) {
      RunRecord run;
      if (!get_run(in, run, bytes.size())) break;
      out.point.runs.push_back(std::move(run));
    } else if (kind == kSliceBaseline) {
      StudyResults::Baseline b;
      if (!in.get(b.step_time_s) || !in.get(b.job_time_s)) break;
      out.point.baseline = b;
    } else if (kind == kSliceEnd) {
      int signal = 0;
      if (!in.get(signal)) break;
      out.finished = signal == 0;
    } else if (kind == kSliceError) {
      in.get_string(out.error);
      break;
    } else {
      break;
    }
  }
  return out;
}

/// `prismsim sweep --shard K/N`: the shard's (point, run) pairs into DIR/partial-result.txt,
/// resuming from the finished runs of an earlier try.
int run_sweep_shard(const SweepOptions& options, const SweepSpec& spec,
                    const std::vector<Scenario>& scenarios, const std::string& fingerprint,
                    const std::vector<std::string>& command) {
  const ShardSpec shard = parse_shard(options.shard);
  check_shardable(spec, scenarios);
  const int runs = scenarios.front().simulation.runs;
  const int points = static_cast<int>(scenarios.size());
  PartialResult partial =
      partial_identity("sweep", options.file, options.overrides, scenarios.front().simulation.seed,
                       runs, points, shard, fingerprint);
  partial.command = command;
  const ShardStart start = start_shard(options.out, partial);
  if (start.complete) return kExitOk;
  const std::optional<PartialResult>& earlier = start.earlier;
  const std::filesystem::path out(options.out);
  const std::string path = (out / kPartialResultFile).string();
  // Per point: what the earlier try finished, what is left.
  struct Work {
    int point = 0;
    std::vector<int> runs;
    bool baseline = false;
  };
  std::vector<Work> work;
  int64_t reused = 0;
  for (int point = 0; point < points; ++point) {
    const int64_t from = std::max(partial.first, int64_t{point} * runs);
    const int64_t to = std::min(partial.end, int64_t{point + 1} * runs);
    if (from >= to) continue;
    PartialPoint done;
    if (earlier && earlier->point_results.count(point)) done = earlier->point_results.at(point);
    std::set<int> finished;
    for (const RunRecord& run : done.runs) finished.insert(run.run);
    reused += static_cast<int64_t>(finished.size());
    Work w{point, {}, false};
    for (int64_t item = from; item < to; ++item) {
      const int run = static_cast<int>(item - int64_t{point} * runs);
      if (!finished.count(run)) w.runs.push_back(run);
    }
    w.baseline =
        from == int64_t{point} * runs && !done.baseline && (done.varied || done.runs.empty());
    partial.point_results[point] = std::move(done);
    if (!w.runs.empty() || w.baseline) work.push_back(std::move(w));
  }
  const int jobs = jobs_or_cpus(options.jobs);
  const int tasks = static_cast<int>(work.size());
  const int slots = std::max(1, std::min(tasks, jobs));
  bool all_finished = true;
  std::vector<std::string> errors;
  ProgressBar progress("points");
  int done_points = 0;
  const int signal = run_tasks(
      tasks, PoolOptions{slots, true},
      [&](int task, int fd) {
        const Work& w = work[static_cast<size_t>(task)];
        return simulate_point_slice(scenarios[static_cast<size_t>(w.point)], w.runs, w.baseline,
                                    std::max(1, jobs / slots), fd);
      },
      [&](int task, TaskResult result) {
        const Work& w = work[static_cast<size_t>(task)];
        PointSlice slice = decode_slice(result.bytes);
        PartialPoint& p = partial.point_results[w.point];
        if (slice.built) {
          p.collectives = slice.point.collectives;
          p.ranks_simulated = slice.point.ranks_simulated;
          p.varied = slice.point.varied;
        }
        if (slice.point.baseline) p.baseline = slice.point.baseline;
        for (RunRecord& run : slice.point.runs) p.runs.push_back(std::move(run));
        std::sort(p.runs.begin(), p.runs.end(),
                  [](const RunRecord& x, const RunRecord& y) { return x.run < y.run; });
        if (!slice.finished) all_finished = false;
        if (!slice.error.empty()) {
          errors.push_back(fmt::format("point {} ({}): {}", w.point,
                                       spec.point_label(static_cast<size_t>(w.point)),
                                       slice.error));
        } else if (!slice.finished && signal == 0) {
          errors.push_back(fmt::format("point {}: {}", w.point, no_result(result.wait_status)));
        }
        progress.update(++done_points, tasks);
      });
  progress.finish();
  if (signal != 0 || done_points < tasks) all_finished = false;
  partial.complete = all_finished;
  write_partial(out, partial);
  const int64_t recorded = partial.runs_recorded();
  std::cout << fmt::format("shard {}: {} of the {} (point, run) pairs {}-{} finished{}; wrote {}\n",
                           shard.str(), recorded, partial.end - partial.first, partial.first,
                           partial.end - 1,
                           earlier ? fmt::format(" ({} from the earlier try)", reused) : "", path);
  if (signal != 0) {
    std::cerr << fmt::format(
        "prismsim: interrupted by {}: shard {} kept its {} finished runs; "
        "run it again to finish it\n",
        signal_name(signal), shard.str(), recorded);
    return exit_status_for_signal(signal);
  }
  int status = errors.empty() ? kExitOk : kExitRunFailed;
  for (const std::string& error : errors) std::cerr << "prismsim: error: " << error << "\n";
  for (const auto& [point, p] : partial.point_results) {
    for (const RunRecord& run : p.runs) {
      if (!run.ok) {
        std::cerr << fmt::format("prismsim: error: point {}: {}\n", point, run.error);
        status = kExitRunFailed;
      }
    }
  }
  return status;
}

SweepOptions parse_options(int argc, char** argv, bool* help) {
  SweepOptions options;
  int runs = 0;
  long long seed = -1;
  po::options_description named("sweep options");
  named.add_options()("help,h", "show this help")("out,o", po::value(&options.out),
                                                  "output directory (default: out)")(
      "jobs,j", po::value(&options.jobs),
      "processes at once (default: CPU count): min(points, J) points at a time, each running "
      "J / that many replications at once")("runs", po::value(&runs),
                                            "runs of every point (overrides simulation.runs)")(
      "seed", po::value(&seed), "base seed of every point (overrides simulation.seed)")(
      "set", po::value(&options.overrides)->composing(),
      "override a scenario value in every point, after the sweep file's 'set' and before the "
      "grid's values, e.g. --set simulation.steps=4")(
      "shard", po::value(&options.shard),
      "K/N: simulate only the K-th of N slices of the (point, run) pairs and write "
      "DIR/partial-result.txt for prismsim merge (README: Running a study on Slurm)")(
      "max-memory", po::value(&options.max_memory),
      "refuse to start when the estimated peak memory (the largest point's, times the points "
      "run at once) exceeds SIZE (default: the machine's available memory)")(
      "force", po::bool_switch(&options.force), "run even when the estimate exceeds it");
  po::options_description hidden;
  hidden.add_options()("file", po::value(&options.file));
  po::options_description all;
  all.add(named).add(hidden);
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << kUsage << "\n" << named;
    *help = true;
    return options;
  }
  if (options.file.empty()) throw UsageError("missing sweep file");
  apply_run_options(vm, runs, seed, options.jobs, options.overrides);
  return options;
}

/// The sweep's memory refusal, if any: `slots` points run at once, each with `jobs_per_point`
/// runs at once, so the peak is at most the largest point's times `slots`.
std::optional<std::string> sweep_refusal(const std::vector<Scenario>& scenarios, int slots,
                                         int jobs_per_point, const std::string& max_memory) {
  RunEstimate total;
  for (const Scenario& s : scenarios) {
    const RunEstimate e = estimate_scenario_run(s, jobs_per_point);
    total.peak_bytes = std::max(total.peak_bytes, e.peak_bytes * slots);
    total.seconds += e.seconds;
    total.events += e.events;
  }
  return run_refusal(total, max_memory);
}

}  // namespace

int sweep_command(int argc, char** argv) {
  bool help = false;
  const SweepOptions options = parse_options(argc, argv, &help);
  if (help) return kExitOk;
  std::optional<ReadFileLog> log;
  if (!options.shard.empty()) {
    parse_shard(options.shard);  // bad --shard before reading anything
    log.emplace();
  }
  const std::vector<std::string> command =
      provenance_command("sweep", options.file, options.overrides);
  const SweepSpec spec = load_sweep(options.file);
  const std::vector<Scenario> scenarios = load_points(spec, options.overrides);
  const int points = static_cast<int>(scenarios.size());
  const int jobs = jobs_or_cpus(options.jobs);
  const int slots = std::min(points, jobs);
  // Refused before the output directory is touched: its previous outputs stay.
  if (!options.force) {
    if (const auto refusal =
            sweep_refusal(scenarios, slots, std::max(1, jobs / slots), options.max_memory)) {
      std::cerr << "prismsim: error: " << *refusal << "\n";
      return kExitBadInput;
    }
  }
  if (log) {
    const std::string fingerprint = study_fingerprint("sweep", log->files(), options.overrides);
    log.reset();
    return run_sweep_shard(options, spec, scenarios, fingerprint, command);
  }

  const std::filesystem::path out(options.out);
  make_writable_directory(out, options.out);
  clear_previous_outputs(out);  // never a mix of two studies (app/output_directory.hpp)
  make_writable_directory(out / "points", options.out);

  std::vector<PointResult> results(scenarios.size());
  std::vector<PointState> states(scenarios.size(), PointState::waiting);
  for (size_t point = 0; point < scenarios.size(); ++point) {
    const std::filesystem::path dir = point_directory(out, point);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      throw UsageError(fmt::format("cannot create directory '{}': {}", dir.string(), ec.message()));
    }
  }
  const int signal =
      run_points(scenarios, out, slots, std::max(1, jobs / slots), command, results, states);

  const std::string csv_path = (out / "sweep.csv").string();
  const std::string json_path = (out / "sweep.json").string();
  write_file(csv_path, sweep_csv(spec, results, states));
  write_file(json_path, sweep_json(spec, options.overrides, results, states));
  record_outputs(out, {csv_path, json_path});
  std::cout << fmt::format("sweep {}: {} points ({}) of {}\n", spec.name, points,
                           to_string(spec.grid), spec.scenario)
            << summary_table(spec, results, states)
            << fmt::format("wrote {}, {} and the points' outputs under {}\n", csv_path, json_path,
                           (out / "points").string());
  std::cout.flush();
  const auto finished = std::count(states.begin(), states.end(), PointState::finished);
  if (finished < points) {
    std::cerr << fmt::format(
        "prismsim: interrupted by {}: {} of {} points finished; the table "
        "holds them\n",
        signal_name(signal), finished, points);
    return exit_status_for_signal(signal);
  }
  const int failed = report_failed_points(spec, results);
  if (failed > 0) {
    std::cerr << fmt::format(
        "prismsim: error: {} of {} points did not complete every run; "
        "their rows show it\n",
        failed, points);
    return kExitRunFailed;
  }
  return kExitOk;
}

SweepIdentity sweep_identity(const std::string& path, const std::vector<std::string>& overrides) {
  std::optional<ReadFileLog> log(std::in_place);
  const SweepSpec spec = load_sweep(path);
  const std::vector<Scenario> scenarios = load_points(spec, overrides);
  SweepIdentity id;
  id.fingerprint = study_fingerprint("sweep", log->files(), overrides);
  log.reset();
  check_shardable(spec, scenarios);
  id.name = spec.name;
  id.points = static_cast<int>(scenarios.size());
  id.runs = scenarios.front().simulation.runs;
  id.seed = scenarios.front().simulation.seed;
  return id;
}

int merge_sweep(const PartialResult& study, const std::vector<SliceOutcome>& points,
                const std::filesystem::path& out,
                const std::function<void(const std::string&)>& check_fingerprint) {
  std::optional<ReadFileLog> log(std::in_place);
  const SweepSpec spec = load_sweep(study.input);  // from the study's working directory
  const std::vector<Scenario> scenarios = load_points(spec, study.overrides);
  const std::string fingerprint = study_fingerprint("sweep", log->files(), study.overrides);
  log.reset();
  check_fingerprint(fingerprint);
  if (scenarios.size() != points.size()) {
    throw UsageError(
        fmt::format("the sweep now has {} points, its shards {}", scenarios.size(), points.size()));
  }
  clear_previous_outputs(out);
  std::vector<PointResult> results(scenarios.size());
  std::vector<PointState> states(scenarios.size(), PointState::finished);
  for (size_t point = 0; point < scenarios.size(); ++point) {
    // As simulate_point reports a point's study.
    const std::filesystem::path dir = point_directory(out, point);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      throw UsageError(fmt::format("cannot create directory '{}': {}", dir.string(), ec.message()));
    }
    const StudyResults r = assemble_results(scenarios[point], points[point], "", {}, study.command);
    write_file(dir / "summary.json", summary_json(r));
    write_file(dir / "runs.csv", runs_csv(r));
    PointResult& result = results[point];
    result.runs = scenarios[point].simulation.runs;
    record_study(r, result);
  }
  const std::string csv_path = (out / "sweep.csv").string();
  const std::string json_path = (out / "sweep.json").string();
  write_file(csv_path, sweep_csv(spec, results, states));
  write_file(json_path, sweep_json(spec, study.overrides, results, states));
  record_outputs(out, {csv_path, json_path});
  std::cout << fmt::format("sweep {}: {} points ({}) of {}, merged from {} shards\n", spec.name,
                           scenarios.size(), to_string(spec.grid), spec.scenario, study.shard.count)
            << summary_table(spec, results, states)
            << fmt::format("wrote {}, {} and the points' outputs under {}\n", csv_path, json_path,
                           (out / "points").string());
  const int failed = report_failed_points(spec, results);
  return failed > 0 ? kExitRunFailed : kExitOk;
}

}  // namespace prismsim
