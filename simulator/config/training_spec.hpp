#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/variability_spec.hpp"
#include "core/diagnostics.hpp"

namespace prismsim {

/// How long a whole training run is (`simulation.train`): a number of steps (tokens are turned
/// into steps when the scenario is loaded), or a fixed wall-clock duration.
struct TrainLengthSpec {
  enum class Kind { none, steps, until };
  Kind kind = Kind::none;
  int64_t steps = 0;   ///< steps: full-size steps of work to do
  double tokens = 0;   ///< > 0 when the length was given in tokens (steps = ceil(tokens / batch))
  double until_s = 0;  ///< until: the wall-clock length of the run, s
  int replications = 1000;          ///< Monte Carlo replications of the whole run
  std::vector<double> deadlines_s;  ///< wall-clock deadlines whose P(finish by) is reported
  /// Deadlines as multiples of the failure-free time ("1.1x"), reported after `deadlines_s`.
  std::vector<double> relative_deadlines;
  SourceLoc loc;  ///< of `simulation.train`

  bool active() const { return kind != Kind::none; }
};

/// What a failure unit is: every unit of the kind fails independently at the component's rate.
enum class FailureUnit { gpu, node, nic, switch_, rack, job };
/// What a failure does: `crash` stops the job (detected after a while; the nodes it takes down
/// are replaced), `degrade` slows the job down until it is detected and its node removed,
/// `planned` stops the job after a checkpoint (maintenance: nothing is lost).
enum class FailureEffect { crash, degrade, planned };

const char* to_string(FailureUnit unit);
const char* to_string(FailureEffect effect);

/// One failing component of the job (`resilience.failures.components`).
struct FailureComponentSpec {
  std::string name;
  FailureUnit per = FailureUnit::gpu;
  double rate_per_unit_s = 0;  ///< failures per unit per second
  FailureEffect effect = FailureEffect::crash;
  /// Nodes taken out of service by one failure; -1: the unit's own (a GPU, NIC or node: 1; a
  /// leaf switch: the nodes below it; a rack: its nodes; the job: none).
  int nodes_down = -1;
  bool has_detect = false;
  /// Time from the failure to its detection, s (default: resilience.recovery.detect).
  DistributionSpec detect_s;
  DistributionSpec slowdown = DistributionSpec::constant_at(1);  ///< degrade: step-time factor
  SourceLoc loc;
};

/// Checkpointing (`resilience.checkpoint`).
struct CheckpointSpec {
  bool enabled = false;
  int64_t interval_steps = 0;  ///< > 0: every this many steps
  double interval_s = 0;       ///< > 0: every this long, turned into steps at the mean step time
  SourceLoc interval_loc;
  double size_bytes = 0;      ///< checkpoint size (for write and load times), bytes
  double write_Bps = 0;       ///< storage write bandwidth, bytes/s
  double read_Bps = 0;        ///< storage read bandwidth (load at restart), bytes/s
  double write_s = 0;         ///< time to write one checkpoint, s
  double load_s = 0;          ///< time to load one at restart, s
  bool async = false;         ///< the write overlaps training (after a blocking snapshot)
  double snapshot_s = 0;      ///< async: training stops this long to copy the state aside, s
  double async_slowdown = 1;  ///< async: step-time factor while a write is in progress
};

/// Failures, recovery and checkpointing of a whole training run (the scenario's `resilience:`).
struct ResilienceSpec {
  bool present = false;
  SourceLoc loc;
  std::vector<FailureComponentSpec> components;
  double rate_scale = 1;  ///< multiplies every component's rate
  DistributionSpec detect_s = DistributionSpec::constant_at(0);   ///< default detection time, s
  DistributionSpec restart_s = DistributionSpec::constant_at(0);  ///< reschedule + init, s
  int spares = 0;  ///< hot spare nodes ready to replace failed ones
  SourceLoc spares_loc;
  /// Time until a failed node is repaired or replaced and back in the pool, s; constant 0: at
  /// once (spares then never run out).
  DistributionSpec replacement_s = DistributionSpec::constant_at(0);
  /// Elastic continuation: smaller data-parallel sizes the job may run at when nodes are
  /// missing, largest first (empty: the job waits for nodes at full size).
  std::vector<int> elastic_replicas;
  SourceLoc elastic_loc;
  CheckpointSpec checkpoint;
};

}  // namespace prismsim
