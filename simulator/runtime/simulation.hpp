#pragma once

#include <simgrid/forward.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "platform/topology.hpp"
#include "runtime/collective_runtime.hpp"
#include "runtime/run_observer.hpp"
#include "variability/variation.hpp"
#include "workload/program.hpp"

namespace prismsim {

/// Called when every rank has finished training step `step` (0-based); `step_time_s` is the time
/// from the end of the previous step (or the start) to the end of this one.
using StepCallback = std::function<void(int step, double step_time_s)>;

/// What one run simulates beyond the scenario: which replication, its seed, the variation to
/// inject (null or inactive: the deterministic run) and who watches it.
struct RunRequest {
  int run = 0;
  uint64_t seed = 0;
  const VariationModel* variation = nullptr;
  std::vector<RunObserver*> observers;
};

/// What a run produced besides its step times.
struct RunResult {
  int steps_completed = 0;        ///< steps every rank finished
  EventCounters counters;         ///< executions and transfers simulated
  double peak_temperature_c = 0;  ///< hottest GPU of the run (0 without a thermal model)
};

/// One simulated training job: the SimGrid engine, the platform and the collective groups, built
/// once from the scenario and its job; a run creates one actor per stream of each simulated rank
/// and interprets their programs. SimGrid allows one engine per process and one run per engine,
/// so replications fork() after construction and call run() in the child (montecarlo/).
class Simulation {
 public:
  Simulation(const Scenario& scenario, const Job& job);
  /// With a topology already built for the scenario's platform (taken over).
  Simulation(const Scenario& scenario, const Job& job, Topology topology);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  /// Simulates the scenario's steps as `request` says; `on_step` hears of each finished step.
  /// Call once per process.
  RunResult run(const RunRequest& request, const StepCallback& on_step);

  const Scenario& scenario() const { return scenario_; }
  const Job& job() const { return job_; }
  const Topology& topology() const { return topology_; }
  /// Ranks that have actors (see Job::representative).
  int simulated_ranks() const;
  /// How the largest group's first collective ran: "ring/simple/coarse" (algorithm, protocol,
  /// fidelity), or "none".
  std::string collective_summary();

 private:
  class Run;
  friend class Run;

  const Scenario& scenario_;
  const Job& job_;
  Topology topology_;
  simgrid::s4u::Engine* engine_ = nullptr;
  std::vector<simgrid::s4u::Host*> hosts_;
  IdVector<GroupId, std::unique_ptr<GroupRuntime>> groups_;  ///< null: no simulated rank calls it
  /// Position of `rank` in `group` (the rank must be a member).
  int position_in(GroupId group, int rank) const;

  /// The groups of each rank with its position in each, sorted by group: rank r's are
  /// memberships_[membership_begin_[r] .. membership_begin_[r + 1]). Memory linear in the ranks.
  std::vector<size_t> membership_begin_;
  std::vector<std::pair<GroupId, int>> memberships_;
  IdVector<SegmentId, double> segment_communication_s_;  ///< per segment: its analytic collectives
  int stream_count_ = 0;                                 ///< over all simulated ranks
};

}  // namespace prismsim
