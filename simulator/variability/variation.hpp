#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/scenario.hpp"
#include "platform/topology.hpp"
#include "variability/distribution.hpp"
#include "variability/thermal.hpp"
#include "workload/program.hpp"

namespace prismsim {

/// How long one fused execution took, in seconds, and the part of it spent in collectives charged
/// analytically inside it.
struct ExecutionTime {
  double seconds = 0;
  double communication_s = 0;
};

/// A scenario's `variability:` resolved against its job: the distribution each kernel of each
/// segment draws from, the jitter of each collective group, where the slow nodes are. Built once
/// per study variant before the runs fork; pure (no SimGrid). See docs/variability.md.
class VariationModel {
 public:
  VariationModel(const VariabilitySpec& spec, const Scenario& scenario, const Topology& topology,
                 const Job& job);
  VariationModel(const VariationModel&) = delete;  // refers to the job and topology it was given
  VariationModel& operator=(const VariationModel&) = delete;

  /// False when the spec adds no variation: runs then take the deterministic path.
  bool active() const { return active_; }
  const VariabilitySpec& spec() const { return spec_; }

 private:
  friend class RunVariation;

  /// A segment laid out for fast draws: its compute kernels in order, split into runs (chunks)
  /// at its analytic collectives, each kernel's nominal time split into the part that slows with
  /// the clock (GEMM, attention) and the rest (memory-bound).
  struct SegmentPlan {
    /// Per compute kernel (idle time waiting for the host included): at most one is not 0.
    std::vector<double> clock_s, other_s, idle_s;
    std::vector<int> sampler;       ///< per compute kernel: index into samplers_, or -1
    std::vector<size_t> chunk_end;  ///< per chunk: one past its last compute kernel
    std::vector<double> chunk_clock_s, chunk_other_s, chunk_idle_s;  ///< per chunk: nominal sums
    struct Collective {
      double seconds = 0;
      int jitter = -1;          ///< sampler of its scope's jitter, or -1
      bool inter_node = false;  ///< scaled by the network regime
    };
    std::vector<Collective> collectives;  ///< one between consecutive chunks
    /// Sums over the chunks and the collectives, for executions that need no per-chunk times:
    /// clock-bound plus other compute, idle; collectives without jitter, apart by the regime's
    /// scaling; and the collectives that draw jitter (none: the segment draws no jitter).
    double compute_sum_s = 0, idle_sum_s = 0;
    double steady_intra_s = 0, steady_inter_s = 0;
    std::vector<size_t> jittered;
    bool kernel_noise = false;  ///< some kernel draws noise
    bool has_inter_node = false;
    double communication_s = 0;  ///< nominal, of the analytic collectives
  };

  int sampler_for(const DistributionSpec& spec);
  int kernel_sampler(const Kernel& kernel);
  /// Sampler of the jitter of collective `op` in `scope`: by operation, else by scope; -1: none.
  int jitter_sampler(CollectiveOp op, CommScope scope) const;
  SegmentPlan plan(const std::vector<Kernel>& kernels);

  VariabilitySpec spec_;
  const Job& job_;
  const Topology& topology_;
  bool active_ = false;
  bool varies_units_ = false;  ///< persistent slowdowns or thermal state per GPU
  std::vector<Sampler> samplers_;
  std::map<const DistributionSpec*, int> sampler_of_spec_;        ///< specs live in spec_
  std::map<std::pair<std::string, int>, int> sampler_of_kernel_;  ///< (name, class) -> sampler
  IdVector<SegmentId, SegmentPlan> segment_plans_;
  SegmentPlan plain_plan_;  ///< compute ops given by seconds (layer stacks)
  std::map<CommScope, int> jitter_;
  std::map<std::pair<CollectiveOp, CommScope>, int> jitter_by_op_;
  std::map<CommScope, int> transfer_jitter_;
  /// Per job group: its scope, when some collective jitter applies to it.
  IdVector<GroupId, std::optional<CommScope>> group_scope_;
  IdVector<GroupId, std::vector<GroupId>>
      group_copies_;  ///< per simulated group: groups it stands for
  std::vector<double> regime_cdf_;
  int per_gpu_ = -1, per_node_ = -1, per_rack_ = -1;
  std::vector<std::pair<int, int>> slow_nodes_;  ///< (node, sampler)
  int random_slowdown_ = -1;
  /// Slow GPUs: (GPU, sampler of all its compute, of its forward passes, of its backward ones).
  struct SlowGpu {
    int gpu = 0;
    int all = -1, forward = -1, backward = -1;
  };
  std::vector<SlowGpu> slow_gpus_;
  /// Samplers of the levels (-1: absent).
  int run_level_ = -1, step_level_ = -1, node_step_level_ = -1, gpu_step_level_ = -1;
  int microbatch_level_ = -1, forward_pass_level_ = -1, backward_pass_level_ = -1;
  int launch_gap_ = -1, host_step_ = -1;
  bool levels_ = false;               ///< some level or slow GPU varies an op's compute
  std::vector<int> replica_of_rank_;  ///< data-parallel coordinate (microbatch draws)
  int ambient_ = -1;
  int wan_rtt_ = -1;
  int rack_nodes_ = 1;
  bool thermal_ = false;
  ThermalModel thermal_model_;
};

/// The variation of one run: per-GPU persistent slowdowns and thermal states, and the draw
/// counters that key every stream. Every draw comes from a stream keyed by (run seed, purpose,
/// entity), so removing one source never changes another's draws.
class RunVariation {
 public:
  RunVariation(const VariationModel& model, uint64_t run_seed);

  /// Duration of the compute ops `ops`, fused into one execution of simulated rank `rank` that
  /// starts at `now_s` in step `step`. Advances the thermal state of the rank's lockstep members
  /// (its GPUs) to the end of the execution. With `kernel_seconds`, also gives each member's
  /// duration of every kernel of `ops` in order (a plain op is one kernel; an analytic collective
  /// includes the wait for the slowest member): what a profiler on that GPU would record.
  ExecutionTime execute(int rank, const std::vector<const Op*>& ops, double now_s, int step,
                        std::vector<std::vector<double>>* kernel_seconds = nullptr,
                        double skipped_idle_s = 0);
  /// The GPUs of simulated rank `rank`'s lockstep members, in the order of `kernel_seconds`.
  const std::vector<int>& member_gpus(int rank) const {
    return units_[static_cast<size_t>(rank)].gpus;
  }
  /// Slowdown (>= 1) of the next call, `op`, on network group `group` by its member at
  /// `position`.
  double collective_slowdown(GroupId group, CollectiveOp op, int position);
  /// Seconds the host of simulated rank `rank` (its slowest lockstep member) takes before pass
  /// `pass` of step `step` (launch gap), and at the start of step `step`; 0 without.
  double launch_gap_s(int rank, int step, const PassRef& pass) const;
  double host_step_s(int rank, int step) const;
  /// Whether launch gaps are drawn (before each pass; observed ranks split executions there).
  bool has_launch_gaps() const { return model_.launch_gap_ >= 0; }
  bool has_host_step() const { return model_.host_step_ >= 0; }
  /// Whether GPUs carry a thermal state (an execution's start then matters, not only its end).
  bool has_thermal() const { return model_.thermal_; }
  /// Factor (>= 1) multiplying the size of simulated rank `rank`'s next transfer to `peer`.
  double transfer_slowdown(int rank, int peer);
  /// Factor dividing inter-node bandwidth during step `step` (1 without regimes).
  double regime(int step) const;
  /// One-way latency of each WAN link in this run, from its round-trip draw: (link, seconds).
  std::vector<std::pair<int, double>> wan_latencies() const;
  /// Hottest temperature any simulated GPU reached, in degrees C (0 without thermal).
  double peak_temperature_c() const { return peak_temperature_c_; }

 private:
  struct Unit {
    std::vector<int> gpus;   ///< the lockstep members' GPUs
    std::vector<int> nodes;  ///< of the members' GPUs
    /// Slow GPUs (what-if) per member: factor of its forward passes, of its backward passes and
    /// of its other compute.
    std::vector<double> slow_forward, slow_backward, slow_other;
    int replica = 0;
    std::vector<double> slowdown;
    double max_slowdown = 1;  ///< of `slowdown`
    std::vector<double> ambient_c, temperature_c;
    std::vector<uint64_t> kernel_keys;
    /// Per member: the key of its GPU's stream of launch gaps, of forward and of backward pass
    /// levels (the draws of every pass; see `stream`).
    std::vector<uint64_t> launch_gap_keys, forward_keys, backward_keys;
    uint64_t microbatch_key = 0;  ///< of the replica's stream of microbatch levels
    uint64_t comm_key = 0;
    int level_step = -1;              ///< the step `step_levels` hold
    std::vector<double> step_levels;  ///< per member: run x step x node_step x gpu_step
    uint64_t executions = 0;
    uint64_t transfers = 0;
    double updated_s = 0;
    bool varies = false;
  };

  double persistent_slowdown(int gpu) const;
  /// The product of the level factors of member `i` of `unit` for `op` in step `step`.
  double level_factor(Unit& unit, size_t i, const Op& op, int step);
  /// Draw of sampler `sampler` in the stream of `purpose` for `entity`, draw `index`.
  double draw(int sampler, uint64_t purpose, uint64_t entity, uint64_t index = 0) const;
  /// The key of the stream of `purpose` for `entity`: draw `index` of it is
  /// draw_in(sampler, key, index), the same value as draw(sampler, purpose, entity, index).
  uint64_t stream(uint64_t purpose, uint64_t entity) const;
  double draw_in(int sampler, uint64_t stream_key, uint64_t index) const;
  void record_chunk(const VariationModel::SegmentPlan& plan, size_t chunk, double inverse_clock,
                    double slowdown, double chunk_s, std::vector<double>& out);
  double ambient_c(int gpu) const;

  const VariationModel& model_;
  uint64_t seed_;
  std::vector<uint64_t> purpose_keys_;              ///< stream_key(seed_, purpose), by purpose
  std::vector<Unit> units_;                         ///< by rank; empty for ranks not simulated
  IdVector<GroupId, std::vector<uint64_t>> calls_;  ///< [group][position] calls made
  std::vector<double> chunk_max_;                   ///< scratch
  std::vector<double> busy_;                        ///< scratch: per member
  std::vector<double> clock_;                       ///< scratch: per member
  std::vector<double> factors_;                     ///< scratch: per kernel
  std::vector<size_t> collective_at_;  ///< scratch: where each chunk's collective is recorded
  std::vector<double> level_;          ///< scratch: per member, the op's level factor
  double run_factor_ = 1;              ///< the run level's draw
  double peak_temperature_c_ = 0;
};

}  // namespace prismsim
