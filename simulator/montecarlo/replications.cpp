#include "montecarlo/replications.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "core/seeds.hpp"
#include "montecarlo/process_pool.hpp"

namespace prismsim {
namespace {

/// Message kinds a run's process writes to its pipe, each followed by its payload.
enum : uint8_t { kStep = 1, kCounters = 2, kRankTimes = 3 };

/// In a run's process: simulates, streams each finished step, then the counters (and rank
/// times). Returns the process's exit status.
int simulate_run(Simulation& simulation, int run, uint64_t base_seed, int fd, int steps) {
  simulation.set_run(run, run_seed(base_seed, static_cast<uint64_t>(run)));
  const int done = simulation.run([fd](int, double step_time_s) {
    RecordWriter().put(kStep).put(step_time_s).send(fd);
  });
  RecordWriter record;
  record.put(kCounters).put(simulation.counters());
  if (simulation.reports_rank_times()) {
    const auto& ranks = simulation.rank_times();
    record.put(kRankTimes).put(static_cast<uint64_t>(ranks.size()));
    record.put_bytes(ranks.data(), ranks.size() * sizeof(RankTimes));
  }
  record.send(fd);
  if (done < steps) {
    std::fprintf(stderr, "prismsim: error: the simulation stopped after %d of %d steps "
                         "(ranks deadlocked)\n", done, steps);
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
    record.error = fmt::format("run {} was killed by signal {} ({}) after {} step(s)", record.run,
                               WTERMSIG(status), strsignal(WTERMSIG(status)),
                               record.step_times_s.size());
  } else {
    record.error = fmt::format("run {} failed after {} of {} step(s)", record.run,
                               record.step_times_s.size(), steps);
  }
}

}  // namespace

std::vector<RunRecord> run_replications(Simulation& simulation, int runs, uint64_t base_seed,
                                        int steps, int jobs, int* stop_signal,
                                        const std::function<void(int, int)>& on_run_done) {
  std::vector<int> run_ids(static_cast<size_t>(runs));
  std::iota(run_ids.begin(), run_ids.end(), 0);
  return run_replications(simulation, run_ids, base_seed, steps, jobs, stop_signal, on_run_done);
}

std::vector<RunRecord> run_replications(Simulation& simulation, const std::vector<int>& run_ids,
                                        uint64_t base_seed, int steps, int jobs,
                                        int* stop_signal,
                                        const std::function<void(int, int)>& on_run_done) {
  std::vector<RunRecord> records(run_ids.size());
  for (size_t i = 0; i < run_ids.size(); ++i) {
    RunRecord& record = records[i];
    record.run = run_ids[i];
    record.seed = run_seed(base_seed, static_cast<uint64_t>(record.run));
    record.error = fmt::format("run {} was not started (interrupted)", record.run);
  }
  int done = 0;
  const int runs = static_cast<int>(run_ids.size());
  const int signal = run_tasks(
      runs, PoolOptions{jobs, false},
      [&](int task, int fd) {
        return simulate_run(simulation, run_ids[static_cast<size_t>(task)], base_seed, fd, steps);
      },
      [&](int task, TaskResult result) {
        collect(result, records[static_cast<size_t>(task)], steps);
        if (on_run_done) on_run_done(++done, runs);
      });
  if (stop_signal != nullptr) *stop_signal = signal;
  return records;
}

}  // namespace prismsim
