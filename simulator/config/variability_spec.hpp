#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "core/diagnostics.hpp"

namespace prismsim {

struct MixtureComponent;

/// A probability distribution as read from YAML, already validated and normalised (a lognormal
/// given by its median or mean is stored by mu; a gamma given by its mean, by scale).
/// variability/distribution.hpp samples it.
struct DistributionSpec {
  enum class Family { constant, normal, lognormal, gamma, uniform, empirical, mixture };
  Family family = Family::constant;
  double value = 1;             ///< constant
  double mean = 0;              ///< normal
  double stddev = 0;            ///< normal
  double floor = 0;             ///< normal: truncated to values above the floor (default 0)
  double mu = 0;                ///< lognormal: mean of the log
  double sigma = 0;             ///< lognormal: standard deviation of the log
  double shape = 0;             ///< gamma: k
  double scale = 0;             ///< gamma: theta
  double shift = 0;             ///< lognormal, gamma: added to every draw
  double low = 0;               ///< uniform
  double high = 0;              ///< uniform
  std::vector<double> samples;  ///< empirical: drawn uniformly, with replacement
  /// mixture: weighted components; weights sum to 1
  std::vector<MixtureComponent> components;

  static DistributionSpec constant_at(double v);
  bool is_constant() const { return family == Family::constant; }
};

/// One component of a mixture (a struct, not a std::pair: a pair's constraints need
/// DistributionSpec complete inside its own definition, which clang refuses).
struct MixtureComponent {
  double weight = 0;
  DistributionSpec distribution;
};

inline DistributionSpec DistributionSpec::constant_at(double v) {
  DistributionSpec d;
  d.value = v;
  return d;
}

/// Where a slow node is: a node id, or the node of the GPU that runs one rank, given by its rank
/// or by its coordinates in the parallel grid (pipeline stage, data-parallel replica, tensor- and
/// context-parallel position; unspecified coordinates are 0).
struct SlowNodeSpec {
  int node = -1;                               ///< >= 0: this node
  int rank = -1;                               ///< >= 0: the node of this rank
  int stage = 0, replica = 0, tp = 0, cp = 0;  ///< used when node and rank are -1
  DistributionSpec slowdown;                   ///< drawn once per run
  SourceLoc loc;
};

/// Lumped RC thermal model of each GPU (see docs/variability.md).
struct ThermalSpec {
  DistributionSpec ambient_c = DistributionSpec::constant_at(25);  ///< drawn per node or rack
  bool ambient_per_rack = false;                                   ///< false: per node
  double resistance_c_per_w = 0.08;  ///< temperature rise per watt at steady state
  double time_constant_s = 30;       ///< R x C
  double idle_power_w = 100;
  double busy_power_w = 700;   ///< at full clock
  double throttle_c = 85;      ///< clocks derate above this temperature
  double derate_per_c = 0.02;  ///< fraction of clock lost per degree above throttle_c
  double min_clock = 0.5;      ///< clocks never derate below this fraction
  double power_cap_w = 0;      ///< > 0: clocks capped so busy power stays under it
  double initial_c = -1;       ///< < 0: start at the idle steady state
};

/// A slow GPU (what-if): named by GPU id, by rank, or by grid coordinates (as a slow node), with
/// the slowdown of its compute and optionally other ones for its forward and backward passes.
struct SlowGpuSpec {
  int gpu = -1;                                                  ///< >= 0: this GPU
  int rank = -1;                                                 ///< >= 0: the GPU of this rank
  int stage = 0, replica = 0, tp = 0, cp = 0;                    ///< used when gpu and rank are -1
  DistributionSpec slowdown = DistributionSpec::constant_at(1);  ///< drawn once per run
  std::optional<DistributionSpec> forward, backward;  ///< of its passes, instead of `slowdown`
  SourceLoc loc;
};

/// Random effects at the levels of a training job (docs/variability.md, "Levels"): slowdowns of
/// compute, each drawn once per unit of its level and shared by everything the unit holds.
struct LevelsSpec {
  std::optional<DistributionSpec> run;        ///< per run, every GPU (placement, cluster state)
  std::optional<DistributionSpec> step;       ///< per step, every GPU (host, data, network)
  std::optional<DistributionSpec> node_step;  ///< per step and node
  std::optional<DistributionSpec> gpu_step;   ///< per step and GPU (clock, thermal state)
  /// Per step, data-parallel replica and microbatch: every stage's forward and backward pass of
  /// that microbatch (its data: sequence lengths of packed samples).
  std::optional<DistributionSpec> microbatch;
  std::optional<DistributionSpec> forward_pass, backward_pass;  ///< per pass and GPU

  bool empty() const {
    return !run && !step && !node_step && !gpu_step && !microbatch && !forward_pass &&
           !backward_pass;
  }
};

/// Variation of the host's own time, in seconds (added, not multiplied).
struct HostVariationSpec {
  std::optional<DistributionSpec> launch_gap_s;  ///< before each pass, per GPU: CPU-side gaps
  std::optional<DistributionSpec> step_s;        ///< per step and GPU, at the step's start

  bool empty() const { return !launch_gap_s && !step_s; }
};

/// Scope of a collective: within one node, across nodes of a datacenter, across datacenters.
enum class CommScope { intra_node, inter_node, cross_datacenter };
const char* to_string(CommScope scope);

/// One state of the per-step shared network regime.
struct RegimeSpec {
  double probability = 1;
  double slowdown = 1;  ///< inter-node bandwidth divided by this during the step
};

/// The `variability:` section. Every part is optional; an absent part adds no variation.
struct VariabilitySpec {
  /// Nodes per rack (per-rack speed and ambient draws); 0: the nodes under one leaf switch.
  int rack_nodes = 0;
  SourceLoc loc;  ///< of the section, for checks made after loading
  /// Per-kernel multiplicative slowdowns, drawn for every kernel. A kernel name's entry wins over
  /// its class's, which wins over `default`. Names may end in '*' (prefix match).
  std::map<std::string, DistributionSpec> kernel_classes;  ///< "gemm", "attention", ...
  std::vector<std::pair<std::string, DistributionSpec>> kernel_names;
  bool has_kernel_default = false;
  DistributionSpec kernel_default;

  /// Persistent slowdowns drawn once per run and multiplied: per GPU, per node, per rack.
  bool has_gpu_speed = false;
  DistributionSpec per_gpu = DistributionSpec::constant_at(1);
  DistributionSpec per_node = DistributionSpec::constant_at(1);
  DistributionSpec per_rack = DistributionSpec::constant_at(1);

  std::vector<SlowNodeSpec> slow_nodes;
  std::vector<SlowGpuSpec> slow_gpus;
  double random_slow_node_probability = 0;  ///< per node and run
  DistributionSpec random_slow_node_slowdown = DistributionSpec::constant_at(1);

  bool has_thermal = false;
  ThermalSpec thermal;

  /// Per-collective slowdowns by scope (draws below 1 count as 1: the fabric model is the
  /// fastest a collective can run).
  std::map<CommScope, DistributionSpec> jitter;
  /// The same for one operation (all_gather, ...) in one scope: wins over `jitter`.
  std::map<std::pair<CollectiveOp, CommScope>, DistributionSpec> jitter_by_op;
  /// Per point-to-point transfer (pipeline sends) by scope: the transfer's size, hence its
  /// bandwidth time, is multiplied by the draw (draws below 1 count as 1).
  std::map<CommScope, DistributionSpec> transfer_jitter;
  std::vector<RegimeSpec> regimes;  ///< empty: none
  bool has_wan_rtt = false;
  DistributionSpec wan_rtt_s;  ///< round-trip time of each WAN link, drawn per run

  LevelsSpec levels;
  HostVariationSpec host;

  /// The sources present, by name ("kernels", "gpus", "slow_nodes", "slow_gpus", "thermal",
  /// "network_jitter", "transfer_jitter", "network_regimes", "wan_rtt", and per level "run",
  /// "step", "node_step", "gpu_step", "microbatch", "pass", and "launch_gaps", "host_step"),
  /// for attribution.
  std::vector<std::string> sources() const;
  /// This spec without one source (a name from sources()).
  VariabilitySpec without(const std::string& source) const;
  bool empty() const { return sources().empty(); }
};

}  // namespace prismsim
