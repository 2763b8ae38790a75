#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "collectives/plan.hpp"
#include "config/scenario.hpp"
#include "platform/topology.hpp"

namespace prismsim {

/// Contention-aware cost of one phase of a coarse plan, from link loads on the topology.
struct PhaseCost {
  double bandwidth_s = 0;        ///< busiest link: bytes it carries / its bandwidth
  double max_hop_latency_s = 0;  ///< largest route latency among the phase's messages
  int latency_steps = 0;         ///< sequential message latencies in the full algorithm
  double message_latency_s = 0;  ///< their sum: latency_steps x max_hop_latency_s, or hop by hop
                                 ///< along the slowest path of a pipelined phase
  double pipeline_fill_s = 0;    ///< a pipeline's fill and drain: its path's extra chunk times
  int forwarding_steps = 1;      ///< store-and-forward steps the phase's data passes in turn
  int overlapping_chunks = 0;    ///< CollectivePlan::overlapping_chunks
  double member_stream_s = 0;    ///< the busiest sender's bytes at its NVLink rate
};

/// Where each of `gpus` sits (node, slot), as plans need it.
GroupLayout layout_of(const std::vector<int>& gpus, const Topology& topology);

/// NCCL's protocol of a protocol name (LL, LL128, Simple, any case; NVLS runs Simple).
std::optional<NcclProtocol> nccl_protocol(std::string_view name);
/// What NCCL's tuner knows of a group on `platform` for `op` (see TunerInputs).
TunerInputs tuner_inputs(const GroupLayout& layout, const PlatformSpec& platform, CollectiveOp op);

/// The planner of a group on `platform`: its channels, point-to-point channels and NVLS rate.
CollectivePlanner planner_for(GroupLayout layout, const PlatformSpec& platform);

/// What a coarse phase puts on a topology, whatever its links' speeds and latencies: the bytes
/// each link carries, its messages' distinct routes and its pipelined paths' routes hop by hop.
struct PhaseLoads {
  int latency_steps = 0;
  int forwarding_steps = 1;
  int overlapping_chunks = 0;
  std::vector<std::pair<int, double>> link_bytes;  ///< (link, bytes), in order of first use
  int busiest_sender_link = -1;     ///< the NVLink port of the member that sends the most bytes
  double busiest_sender_bytes = 0;  ///< what that member sends in the phase
  std::vector<std::vector<int>> routes;  ///< distinct routes of the phase's messages
  struct Path {
    std::vector<std::vector<int>> hops;  ///< each hop's route
    double chunk_bytes = 0;
  };
  std::vector<Path> paths;  ///< CollectivePlan::phase_paths, routed
};

/// The loads of each coarse phase of `plan` (see estimate_phases); they depend on the topology's
/// structure only, so a fit can cost them again for other link parameters.
std::vector<PhaseLoads> phase_loads(const CollectivePlan& plan, int group_size,
                                    const std::vector<int>& gpu_of_position,
                                    const Topology& topology);
/// Costs phase loads on `topology`'s links (same structure as the one they were routed on).
std::vector<PhaseCost> cost_phases(const std::vector<PhaseLoads>& loads, const Topology& topology);

/// Costs each coarse phase of `plan` for a group whose position p runs on GPU gpu_of_position[p].
std::vector<PhaseCost> estimate_phases(const CollectivePlan& plan, int group_size,
                                       const std::vector<int>& gpu_of_position,
                                       const Topology& topology);

/// Bytes a message of `bytes` puts on the wire under `protocol`: bytes / efficiency, or bytes
/// for a streamed protocol (which pays its rate in streaming_seconds instead).
double wire_bytes(double bytes, const ProtocolSpec& protocol);

/// A streamed protocol's rate, paid once per phase for one forwarding step's share of the busiest
/// sender's bytes at efficiency x its NVLink bandwidth (LL and LL128 are bound by the GPU's
/// handling of flagged lines, not by the link they cross): member_stream_s / forwarding_steps /
/// efficiency. 0 for other protocols.
double streaming_seconds(const PhaseCost& phase, const ProtocolSpec& protocol);

/// The part of a coarse phase that is not simulated: the algorithm's other message latencies, the
/// protocol's per-step cost, the pipeline's fill and the streaming time. A coarse run simulates one
/// message latency and the busiest link's transfer (sent at wire_bytes), then waits this long.
double phase_remainder_seconds(const PhaseCost& phase, const ProtocolSpec& protocol);

/// Predicted duration: launch + protocol base latency + per phase (message latencies +
/// latency_steps x protocol step latency + the busiest link's wire time + fill + streaming time).
/// The figure that selects algorithms and protocols, and that calibration fits.
double predicted_seconds(const std::vector<PhaseCost>& phases, double launch_latency_s,
                         const ProtocolSpec& protocol);

/// The algorithm and protocol a call runs with, and its predicted duration.
struct CollectiveChoice {
  Algorithm algorithm = Algorithm::ring;
  const ProtocolSpec* protocol = nullptr;  ///< points into the platform's tuning
  std::vector<PhaseCost> phases;
  double seconds = 0;
  bool local_copy = false;  ///< a one-member group: NCCL copies the buffer on the device
};

/// Picks the fastest (algorithm, protocol) by predicted_seconds among those that can run `op` on
/// the planner's group (or only `forced`, unless automatic), as NCCL's tuner does. A one-member
/// group is a device copy: read and write the buffer at the GPU's memory bandwidth x
/// collectives.local_copy_efficiency. Throws std::invalid_argument when `forced` cannot run the
/// call.
CollectiveChoice choose_collective(const CollectivePlanner& planner,
                                   const std::vector<int>& gpu_of_position,
                                   const Topology& topology, const PlatformSpec& platform,
                                   CollectiveOp op, double bytes, Algorithm forced, int root = 0);

/// The time by which a loop of back-to-back calls of `choice` advances per call (nccl-tests
/// times such a loop): broadcast and reduce calls overlap along their chain, a member starting
/// the next call once it has forwarded this one's chunks, so the busiest member's time per call
/// counts: launch + base latency + per phase (its busiest link's wire time + chunks x step
/// latency + the streaming time). Negative where calls do not overlap (every member waits for
/// the whole group: rings, trees) or for a one-GPU copy.
double back_to_back_period_seconds(const CollectiveChoice& choice, const PlatformSpec& platform);

/// nccl-tests' time per call over `iterations` back-to-back calls whose first takes
/// `first_call_s`: (first + (iterations - 1) x min(period, first)) / iterations, or the first
/// call's time where calls do not overlap.
double back_to_back_seconds(double first_call_s, double period_s, int iterations);

/// The phase costs of the call with an algorithm (the planner's plan, costed on a topology).
using PhaseCoster = std::function<std::vector<PhaseCost>(Algorithm)>;
/// choose_collective with the phases of each candidate algorithm from `phases_of` (a fit costs
/// cached phase loads for new link parameters).
CollectiveChoice choose_collective(const CollectivePlanner& planner, const PlatformSpec& platform,
                                   CollectiveOp op, double bytes, Algorithm forced,
                                   const PhaseCoster& phases_of);

/// Predicted duration of `op` on the group of `gpus` (nothing else on the network) with `forced`
/// where it can run the call and the automatic choice elsewhere, as training jobs run calls.
double predicted_call_seconds(const std::vector<int>& gpus, const Topology& topology,
                              const PlatformSpec& platform, CollectiveOp op, double bytes,
                              Algorithm forced);

}  // namespace prismsim
