#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/rank_times.hpp"
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

/// One replication to simulate: which run of the study (its seed derives from the study's base
/// seed), with what variation, and what to record besides its step times.
struct Replication {
  int run = 0;
  const VariationModel* variation = nullptr;  ///< null: the deterministic run
  bool rank_times = false;                    ///< send back where each rank's time went
  RunObserver* observer = nullptr;            ///< also watches the run, in its process (a trace)
};

/// Runs `runs` 0 .. runs-1, all with `variation`.
std::vector<Replication> replications(int runs, const VariationModel* variation);

/// Simulates `replications` of a built simulation, each in a child process forked from this one
/// (SimGrid runs once per process; fork after building shares the platform copy-on-write), at most
/// `jobs` at a time. Records come back in the order of `replications` whatever the completion
/// order. A stop signal (SIGINT, SIGTERM, SIGHUP) ends it: no new run starts, running ones are
/// ended with the steps they streamed, runs never started keep an empty record; `*stop_signal`
/// then names the signal (else 0). `on_run_done(done, total)` is called after each run is gathered,
/// `on_record` with its record (in completion order).
std::vector<RunRecord> run_replications(
    Simulation& simulation, const std::vector<Replication>& replications, uint64_t base_seed,
    int jobs, int* stop_signal = nullptr, const std::function<void(int, int)>& on_run_done = {},
    const std::function<void(const RunRecord&)>& on_record = {});

}  // namespace prismsim
