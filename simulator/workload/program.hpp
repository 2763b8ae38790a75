#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "collectives/collective.hpp"
#include "config/variability_spec.hpp"
#include "core/ids.hpp"
#include "platform/topology.hpp"

namespace prismsim {

/// What a kernel is, for variability and traces. `idle` is not a kernel: the GPU waiting for the
/// host to launch the next one (it varies with neither the GPU's speed nor kernel noise, and
/// traces show it as a gap).
enum class KernelClass { gemm, attention, elementwise, optimizer, communication, idle };
const char* to_string(KernelClass kernel_class);

/// One GPU kernel (or a collective charged analytically) with its nominal duration.
struct Kernel {
  std::string name;
  KernelClass kernel_class = KernelClass::gemm;
  double seconds = 0;
  CommScope scope = CommScope::intra_node;  ///< communication: where its group's GPUs are
  double bytes = 0;                         ///< communication: message size (nccl-tests convention)
  CollectiveOp op = CollectiveOp::all_reduce;  ///< communication: the operation
  /// Host time before the host can launch this kernel, beyond its launch: the Python of the
  /// layer it opens (`host.layer_launch`).
  double host_before_s = 0;
};

/// Kernels that run back to back with no outside interaction: simulated as one execution whose
/// amount is the sum of theirs. Shared by every rank (and pass) that runs the same kernels.
struct Segment {
  std::string name;  ///< "fwd layers 0-9", "optimizer"
  std::vector<Kernel> kernels;
  double seconds = 0;  ///< sum of the kernels
  /// Of `seconds`, the GPU's waits for launches before the host first waits for the GPU: what a
  /// host that far ahead would already have issued (ahead across a posted receive's wait).
  double host_wait_s = 0;
  /// The host waits for the GPU inside the segment: a blocking copy, or its Python before a
  /// collective in the network that ends the segment.
  bool host_waits = false;

  void add(Kernel kernel) {
    seconds += kernel.seconds;
    kernels.push_back(std::move(kernel));
  }
};

using SegmentId = Id<struct SegmentTag>;  ///< indexes Job::segments
using GroupId = Id<struct GroupTag>;      ///< indexes Job::groups
using EventId = Id<struct EventTag>;      ///< one of a rank's events: 0 .. Program::events-1

/// Which pipeline pass an op belongs to, for variation drawn per pass.
struct PassRef {
  int index = 0;  ///< the pass's place in the rank's schedule (0, 1, ...)
  bool forward = true;
  bool first = false;  ///< the pass's first op (its launch gap comes before it)
};

/// What a stream of a rank does, in order: one of the alternatives of `Op`.
namespace ops {

/// Run the kernels of one segment.
struct RunSegment {
  SegmentId segment;
  std::optional<int> microbatch;  ///< for traces and variation per microbatch
  std::optional<PassRef> pass;
};
/// Stay busy for a given time (a layer stack's layer).
struct ComputeFor {
  double seconds = 0;
};
/// Run a collective on a group of ranks.
struct Collective {
  CollectiveOp op = CollectiveOp::all_reduce;
  double bytes = 0;  ///< size in nccl-tests' convention
  GroupId group;
  int root = 0;  ///< broadcast/reduce: group position of the root
  std::optional<int> microbatch;
};
/// Post a point-to-point send of `bytes` to rank `peer`. A blocking send completes before the
/// stream goes on (after the receive that follows it, when one does: the two are posted as one
/// batch, as Megatron's send_forward_recv_backward does); otherwise it completes on its own.
struct Send {
  int peer = 0;
  double bytes = 0;
  std::optional<int> microbatch;
  bool blocking = false;
  bool backward = false;  ///< a gradient (pipelines keep the two directions apart)
};
/// Receive `bytes` from rank `peer` (blocks until it arrives). With `posted`, the receive was
/// posted by an earlier PostRecv (the oldest not yet awaited from that peer and direction) and
/// this waits for it.
struct Recv {
  int peer = 0;
  double bytes = 0;
  std::optional<int> microbatch;
  bool backward = false;
  bool posted = false;
};
/// Post a receive from rank `peer` that a later Recv with `posted` waits for: the transfer can
/// run while the stream computes (Megatron's overlap_p2p_comm).
struct PostRecv {
  int peer = 0;
  bool backward = false;
};
/// Mark one of this rank's events as reached (once per step).
struct Record {
  EventId event;
};
/// Block until this rank's event was recorded in this step.
struct Wait {
  EventId event;
};

}  // namespace ops

using Op = std::variant<ops::RunSegment, ops::ComputeFor, ops::Collective, ops::Send, ops::Recv,
                        ops::PostRecv, ops::Record, ops::Wait>;

/// Whether `op` is compute (run back to back with neighbouring compute as one execution).
inline bool is_compute(const Op& op) {
  return std::holds_alternative<ops::RunSegment>(op) || std::holds_alternative<ops::ComputeFor>(op);
}
/// The microbatch an op belongs to, for traces.
std::optional<int> microbatch_of(const Op& op);

/// What one rank runs in every training step: one op list per stream. Streams run concurrently
/// and synchronise through events, as CUDA streams do; stream 0 is the compute stream.
struct Program {
  std::vector<std::vector<Op>> streams = {{}};
  int events = 0;  ///< event ids used: 0 .. events-1

  /// A new event id.
  EventId add_event() { return EventId(events++); }
};

/// Ranks taking part in one collective, in ring order. Each group is one communicator: a stream
/// that runs collectives concurrently with another stream of the same ranks uses its own group.
struct CollectiveGroup {
  std::vector<int> ranks;
  std::string name;  ///< "tp", "dp", ... for traces
};

/// Everything the runtime executes: per rank, a program (identical ranks may share one; a
/// transformer rank has its own, since its peers differ) and the GPU it runs on; the collective
/// groups and the compute segments the programs refer to (segments are shared).
struct Job {
  std::vector<std::shared_ptr<const Program>> program_of_rank;  ///< null for ranks not simulated
  std::vector<int> gpu_of_rank;
  IdVector<GroupId, CollectiveGroup> groups;
  IdVector<SegmentId, Segment> segments;
  /// By symmetry some ranks run exactly like another one and are not simulated:
  /// representative[r] is the simulated rank whose timeline r shares (r itself when simulated).
  /// Empty: every rank is simulated.
  std::vector<int> representative;
  /// With representatives on a network whose shared links can saturate: the network the
  /// representatives' flows see (Topology::quotient). Empty otherwise.
  LinkQuotient link_quotient;
  /// Ranks that analytic layer collectives hold in lockstep (a tensor- and context-parallel group
  /// whose collectives are charged inside the fused compute): with variation, each of its fused
  /// executions lasts as long as its slowest member's. lockstep_of_rank[r] indexes `lockstep`;
  /// empty: every rank runs on its own.
  std::vector<std::vector<int>> lockstep;
  std::vector<int> lockstep_of_rank;

  int rank_count() const { return static_cast<int>(gpu_of_rank.size()); }
  bool simulated(int rank) const {
    return representative.empty() || representative[static_cast<size_t>(rank)] == rank;
  }
};

/// Nominal duration of compute op `op` of `job`: its segment's kernels, or its fixed time; 0 for
/// other ops.
double nominal_seconds(const Job& job, const Op& op);

}  // namespace prismsim
