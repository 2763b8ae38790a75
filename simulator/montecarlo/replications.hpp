#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/simulation.hpp"

namespace prismsim {

/// What one replication produced. A failed run keeps the steps it finished.
struct RunRecord {
  int run = 0;
  uint64_t seed = 0;
  std::vector<double> step_times_s;
  EventCounters counters;
  std::vector<RankTimes> rank_times;  ///< per rank, when the simulation reports them
  bool ok = false;
  std::string error;  ///< why the run failed, when it did
};

/// Runs `runs` replications of a built simulation, each in a child process forked from this one
/// (SimGrid runs once per process; fork after building shares the platform copy-on-write), at most
/// `jobs` at a time. Results come back in run order whatever the completion order.
/// A stop signal (SIGINT, SIGTERM, SIGHUP) ends it: no new run starts, running ones are ended with
/// the steps they streamed, runs never started keep an empty record; `*stop_signal` then names the
/// signal (else 0).
/// `on_run_done(done, runs)` is called after each run is gathered.
std::vector<RunRecord> run_replications(
    Simulation& simulation, int runs, uint64_t base_seed, int steps, int jobs,
    int* stop_signal = nullptr, const std::function<void(int, int)>& on_run_done = {});

/// The same for the replications numbered `run_ids` (each with its own seed, as in a study of
/// all runs): records come back in the order of `run_ids`.
std::vector<RunRecord> run_replications(
    Simulation& simulation, const std::vector<int>& run_ids, uint64_t base_seed, int steps,
    int jobs, int* stop_signal = nullptr,
    const std::function<void(int, int)>& on_run_done = {});

}  // namespace prismsim
