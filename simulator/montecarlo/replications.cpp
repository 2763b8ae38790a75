#include "montecarlo/replications.hpp"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>

#include "core/seeds.hpp"
#include "montecarlo/process_pool.hpp"

namespace prismsim {
namespace {

/// Message kinds a run's process writes to its pipe, each followed by its payload.
enum : uint8_t { kStep = 1, kCounters = 2, kRankTimes = 3 };

/// In a run's process: simulates, streams each finished step, then the counters (and rank
/// times). Returns the process's exit status.
int simulate_run(Simulation& simulation, const Replication& replication, uint64_t seed, int fd) {
  RankTimesRecorder rank_times(simulation.job());
  RunRequest request{replication.run, seed, replication.variation, {}};
  if (replication.observer != nullptr) request.observers.push_back(replication.observer);
  if (replication.rank_times) request.observers.push_back(&rank_times);
  const RunResult result = simulation.run(request, [fd](int, double step_time_s) {
    RecordWriter().put(kStep).put(step_time_s).send(fd);
  });
  RecordWriter record;
  record.put(kCounters).put(result.counters);
  if (replication.rank_times) {
    const auto& ranks = rank_times.times();
    record.put(kRankTimes).put(static_cast<uint64_t>(ranks.size()));
    record.put_bytes(ranks.data(), ranks.size() * sizeof(RankTimes));
  }
  record.send(fd);
  const int steps = simulation.scenario().simulation.steps;
  if (result.steps_completed < steps) {
    std::fprintf(stderr,
                 "prismsim: error: the simulation stopped after %d of %d steps "
                 "(ranks deadlocked)\n",
                 result.steps_completed, steps);
    return 3;
  }
  return 0;
}

/// Fills `record` from what a run's process sent and how it ended.
void collect(const TaskResult& result, RunRecord& record, int steps) {
  RecordReader reader(result.bytes);
  uint8_t kind = 0;
  while (reader.get(kind)) {
    if (kind == kStep) {
      double step_time_s = 0;
      if (!reader.get(step_time_s)) break;
      record.step_times_s.push_back(step_time_s);
    } else if (kind == kCounters) {
      if (!reader.get(record.counters)) break;
    } else if (kind == kRankTimes) {
      uint64_t count = 0;
      if (!reader.get(count) || count > result.bytes.size()) break;
      record.rank_times.resize(count);
      if (!reader.get_bytes(record.rank_times.data(), count * sizeof(RankTimes))) break;
    }
  }
  const int status = result.wait_status;
  record.error.clear();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
      static_cast<int>(record.step_times_s.size()) == steps) {
    record.ok = true;
  } else if (WIFSIGNALED(status)) {
    record.error =
        fmt::format("run {} was killed by signal {} ({}) after {} step(s)", record.run,
                    WTERMSIG(status), strsignal(WTERMSIG(status)), record.step_times_s.size());
  } else {
    record.error = fmt::format("run {} failed after {} of {} step(s)", record.run,
                               record.step_times_s.size(), steps);
  }
}

}  // namespace

std::vector<Replication> replications(int runs, const VariationModel* variation) {
  std::vector<Replication> out;
  for (int run = 0; run < runs; ++run) out.push_back({run, variation, false, nullptr});
  return out;
}

std::vector<RunRecord> run_replications(Simulation& simulation,
                                        const std::vector<Replication>& replications,
                                        uint64_t base_seed, int jobs, int* stop_signal,
                                        const std::function<void(int, int)>& on_run_done,
                                        const std::function<void(const RunRecord&)>& on_record) {
  std::vector<RunRecord> records(replications.size());
  for (size_t i = 0; i < replications.size(); ++i) {
    RunRecord& record = records[i];
    record.run = replications[i].run;
    record.seed = run_seed(base_seed, static_cast<uint64_t>(record.run));
    record.error = fmt::format("run {} was not started (interrupted)", record.run);
  }
  const int steps = simulation.scenario().simulation.steps;
  const int total = static_cast<int>(replications.size());
  int done = 0;
  const int signal = run_tasks(
      total, PoolOptions{jobs, false},
      [&](int task, int fd) {
        const size_t i = static_cast<size_t>(task);
        return simulate_run(simulation, replications[i], records[i].seed, fd);
      },
      [&](int task, TaskResult result) {
        collect(result, records[static_cast<size_t>(task)], steps);
        if (on_run_done) on_run_done(++done, total);
        if (on_record) on_record(records[static_cast<size_t>(task)]);
      });
  if (stop_signal != nullptr) *stop_signal = signal;
  return records;
}

}  // namespace prismsim
