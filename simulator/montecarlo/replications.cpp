#include "montecarlo/replications.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "core/seeds.hpp"
#include "montecarlo/child_processes.hpp"

namespace prismsim {
namespace {

/// Message kinds a child writes to its pipe, each followed by its payload.
enum : uint8_t { kStep = 1, kCounters = 2, kRankTimes = 3 };

/// In the child: simulate, stream each finished step, then the counters. Never returns.
[[noreturn]] void child_main(Simulation& simulation, int run, uint64_t base_seed, int fd, int steps) {
  int status = 0;
  try {
    simulation.set_run(run, run_seed(base_seed, static_cast<uint64_t>(run)));
    const int done = simulation.run([fd](int, double step_time_s) {
      const uint8_t kind = kStep;
      write_all(fd, &kind, 1);
      write_all(fd, &step_time_s, sizeof step_time_s);
    });
    const uint8_t kind = kCounters;
    write_all(fd, &kind, 1);
    write_all(fd, &simulation.counters(), sizeof(EventCounters));
    if (simulation.reports_rank_times()) {
      const uint8_t times = kRankTimes;
      const auto& ranks = simulation.rank_times();
      const uint64_t count = ranks.size();
      write_all(fd, &times, 1);
      write_all(fd, &count, sizeof count);
      write_all(fd, ranks.data(), count * sizeof(RankTimes));
    }
    if (done < steps) {
      std::fprintf(stderr, "prismsim: error: the simulation stopped after %d of %d steps "
                           "(ranks deadlocked)\n", done, steps);
      status = 3;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prismsim: error: %s\n", e.what());
    status = 4;
  }
  std::fflush(stderr);
  ::close(fd);
  ::_exit(status);
}

struct Child {
  int run = 0;
  pid_t pid = -1;
  int fd = -1;
  size_t slot = 0;  ///< in the interrupt guard
};

void collect(const Child& child, RunRecord& record, int steps) {
  uint8_t kind = 0;
  while (read_all(child.fd, &kind, 1)) {
    if (kind == kStep) {
      double step_time_s = 0;
      if (!read_all(child.fd, &step_time_s, sizeof step_time_s)) break;
      record.step_times_s.push_back(step_time_s);
    } else if (kind == kCounters) {
      if (!read_all(child.fd, &record.counters, sizeof record.counters)) break;
    } else if (kind == kRankTimes) {
      uint64_t count = 0;
      if (!read_all(child.fd, &count, sizeof count)) break;
      record.rank_times.resize(count);
      if (!read_all(child.fd, record.rank_times.data(), count * sizeof(RankTimes))) break;
    }
  }
  ::close(child.fd);
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
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
                                        int steps, int jobs, bool* interrupted,
                                        const std::function<void(int, int)>& on_run_done) {
  std::vector<int> run_ids(static_cast<size_t>(runs));
  std::iota(run_ids.begin(), run_ids.end(), 0);
  return run_replications(simulation, run_ids, base_seed, steps, jobs, interrupted, on_run_done);
}

std::vector<RunRecord> run_replications(Simulation& simulation, const std::vector<int>& run_ids,
                                        uint64_t base_seed, int steps, int jobs,
                                        bool* interrupted,
                                        const std::function<void(int, int)>& on_run_done) {
  int done = 0;
  int runs = static_cast<int>(run_ids.size());
  std::vector<RunRecord> records(run_ids.size());
  for (size_t i = 0; i < run_ids.size(); ++i) {
    RunRecord& record = records[i];
    record.run = run_ids[i];
    record.seed = run_seed(base_seed, static_cast<uint64_t>(record.run));
    record.error = fmt::format("run {} was not started (interrupted)", record.run);
  }
  std::deque<Child> running;
  std::fflush(stdout);
  std::fflush(stderr);
  // Ctrl-C stops launching runs and ends the running ones; what finished is kept.
  InterruptGuard guard;
  for (int run = 0; run < runs || !running.empty();) {
    if (guard.interrupted() && run < runs) runs = run;  // launch no more
    if (run < runs && static_cast<int>(running.size()) < jobs) {
      records[static_cast<size_t>(run)].error.clear();
      int fds[2];
      if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
      const pid_t pid = ::fork();
      if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
      if (pid == 0) {
        ::signal(SIGINT, SIG_DFL);  // Ctrl-C ends a child at once
        ::close(fds[0]);
        for (const Child& other : running) ::close(other.fd);
        child_main(simulation, run_ids[static_cast<size_t>(run)], base_seed, fds[1], steps);
      }
      ::close(fds[1]);
      running.push_back({run, pid, fds[0], guard.watch(pid, false)});
      ++run;
      continue;
    }
    // Oldest first: a younger child blocked on a full pipe waits only until its turn.
    const Child child = running.front();
    running.pop_front();
    collect(child, records[static_cast<size_t>(child.run)], steps);
    guard.forget(child.slot);
    if (on_run_done) on_run_done(++done, runs);
  }
  if (interrupted != nullptr) *interrupted = guard.interrupted();
  return records;
}

}  // namespace prismsim
