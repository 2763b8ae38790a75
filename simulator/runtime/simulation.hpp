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
#include "variability/variation.hpp"
#include "workload/program.hpp"

namespace prismsim {

/// Called when every rank has finished training step `step` (0-based); `step_time_s` is the time
/// from the end of the previous step (or the start) to the end of this one.
using StepCallback = std::function<void(int step, double step_time_s)>;

/// Where one rank's compute stream spent a run, in seconds.
struct RankTimes {
  double compute_s = 0;        ///< kernels (fused executions), without analytic collectives
  double layer_collective_s = 0;  ///< analytic tensor/context-parallel collectives in the compute
  double collective_s = 0;     ///< blocking collectives in the network
  double pipeline_wait_s = 0;  ///< receiving activations or gradients (the pipeline bubble)
  double stream_wait_s = 0;    ///< waiting for another stream (gradient reduction, gathers)
};

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
  /// Which replication this process simulates, and its seed.
  void set_run(int run, uint64_t seed) {
    run_ = run;
    seed_ = seed;
  }
  /// Variation to inject (nullptr or inactive: the deterministic run); set before run().
  void set_variation(const VariationModel* model) { variation_model_ = model; }
  /// Per rank (representatives for ranks not simulated): where the compute stream's time went;
  /// all zero unless set_report_rank_times(true).
  const std::vector<RankTimes>& rank_times() const { return rank_times_; }
  /// Whether replications send rank_times() back (a per-rank breakdown of chosen runs).
  void set_report_rank_times(bool report) { report_rank_times_ = report; }
  bool reports_rank_times() const { return report_rank_times_; }
  const Topology& topology() const { return topology_; }
  /// Hottest GPU temperature of the run, in degrees C (0 without a thermal model).
  double peak_temperature_c() const {
    return variation_ ? variation_->peak_temperature_c() : 0.0;
  }
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
  /// Sets the network regime of `step`: inter-node bandwidth divided by its slowdown.
  void apply_regime(int step);
  /// Nominal seconds of the analytic collectives inside a compute op.
  double segment_communication_s(const Op& op) const;
  /// Adds the kernels of a fused execution of `rank` that started at `start` to the trace.
  void trace_kernels(int rank, int stream, double start, double nominal_s,
                     const std::vector<const Op*>& fused,
                     const std::vector<std::vector<double>>& member_kernel_s);
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
  uint64_t seed_ = 0;
  const VariationModel* variation_model_ = nullptr;
  std::unique_ptr<RunVariation> variation_;   ///< this run's draws, when variation is active
  std::vector<std::pair<simgrid::s4u::Link*, double>> inter_node_links_;  ///< nominal Bps
  double regime_slowdown_ = 1;
  std::vector<RankTimes> rank_times_;
  bool report_rank_times_ = false;
  std::vector<double> segment_communication_s_;  ///< per segment: its analytic collectives
};

}  // namespace prismsim
