#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <simgrid/forward.h>

#include "config/scenario.hpp"
#include "platform/topology.hpp"
#include "runtime/collective_runtime.hpp"
#include "runtime/trace.hpp"
#include "workload/program.hpp"

namespace prismsim {

/// Called when every rank has finished training step `step` (0-based); `step_time_s` is the time
/// from the end of the previous step (or the start) to the end of this one.
using StepCallback = std::function<void(int step, double step_time_s)>;

/// One simulated training run: the SimGrid engine, the platform and one actor per stream of each
/// rank.
/// Construction builds the engine and platform; run() creates the actors and simulates. SimGrid
/// allows one engine per process and one run per engine, so replications fork() after
/// construction and call run() in the child (see montecarlo/).
class Simulation {
 public:
  Simulation(const Scenario& scenario, const Job& job);
  /// With a topology already built for the scenario's platform (taken over).
  Simulation(const Scenario& scenario, const Job& job, Topology topology);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  /// Simulates the scenario's steps; returns the number of steps every rank completed.
  /// Call once per process.
  int run(const StepCallback& on_step);

  const EventCounters& counters() const { return counters_; }
  /// Records a timeline of `trace`'s ranks when run() simulates run trace->run() (set_run).
  void set_trace(TraceRecorder* trace) { trace_ = trace; }
  /// Which replication this process simulates.
  void set_run(int run) { run_ = run; }
  /// Ranks that have actors (see Job::representative).
  int simulated_ranks() const;
  /// How the largest group's first collective ran: "ring/simple/coarse" (algorithm, protocol,
  /// fidelity), or "none".
  std::string collective_summary();

 private:
  /// Per rank: how often each event was recorded, and where streams wait for it.
  struct RankEvents {
    std::vector<int> recorded;
    simgrid::s4u::MutexPtr mutex;
    simgrid::s4u::ConditionVariablePtr changed;
  };

  void stream_main(int rank, int stream);
  void finish_step(int step);
  void write_trace() const;

  const Scenario& scenario_;
  const Job& job_;
  Topology topology_;
  simgrid::s4u::Engine* engine_ = nullptr;
  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<std::unique_ptr<GroupRuntime>> groups_;
  std::vector<std::vector<int>> position_;        ///< [group][rank] position in the group, or -1
  std::vector<RankEvents> events_;                ///< per rank
  std::vector<std::vector<int>> traced_as_;       ///< per simulated rank: the traced ranks it draws
  std::vector<int> streams_done_;                 ///< per step: streams that finished it
  int stream_count_ = 0;                          ///< over all ranks
  double last_step_end_s_ = 0;
  int steps_completed_ = 0;
  StepCallback on_step_;
  EventCounters counters_;
  TraceRecorder* trace_ = nullptr;
  int run_ = 0;
};

}  // namespace prismsim
