#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "config/variability_spec.hpp"

namespace prismsim {

/// What a kernel is, for variability and traces.
enum class KernelClass { gemm, attention, elementwise, optimizer, communication };
const char* to_string(KernelClass kernel_class);

/// One GPU kernel (or a collective charged analytically) with its nominal duration.
struct Kernel {
  std::string name;
  KernelClass kernel_class = KernelClass::gemm;
  double seconds = 0;
  CommScope scope = CommScope::intra_node;  ///< communication: where its group's GPUs are
  double bytes = 0;                         ///< communication: message size (nccl-tests convention)
};

/// Kernels that run back to back with no outside interaction: simulated as one execution whose
/// amount is the sum of theirs. Shared by every rank (and pass) that runs the same kernels.
struct Segment {
  std::string name;  ///< "fwd layers 0-9", "optimizer"
  std::vector<Kernel> kernels;
  double seconds = 0;  ///< sum of the kernels

  void add(Kernel kernel) {
    seconds += kernel.seconds;
    kernels.push_back(std::move(kernel));
  }
};

/// One thing a stream of a rank does, in order.
struct Op {
  enum class Kind {
    compute,     ///< run Job::segments[segment] (or `seconds` when segment < 0)
    collective,  ///< run a collective on Job::groups[group]
    send,        ///< post a point-to-point send of `bytes` to rank `peer`; it completes on its own
    recv,        ///< receive `bytes` from rank `peer` (blocks until it arrives)
    record,      ///< mark event `event` of this rank as reached (once per step)
    wait,        ///< block until this rank's event `event` was recorded in this step
  };

  Kind kind = Kind::compute;
  double seconds = 0;
  int segment = -1;
  CollectiveOp collective = CollectiveOp::all_reduce;
  double bytes = 0;  ///< collective: size in nccl-tests' convention; send/recv: payload
  int group = -1;    ///< collective: index into Job::groups
  int root = 0;      ///< broadcast/reduce: group position of the root
  int peer = -1;     ///< send/recv: the other rank
  int event = -1;    ///< record/wait
  int microbatch = -1;  ///< for traces: the microbatch a compute or transfer belongs to

  static Op compute_for(double seconds) { return Op{Kind::compute, seconds}; }
  static Op run_segment(int segment, int microbatch = -1) {
    Op op{Kind::compute};
    op.segment = segment;
    op.microbatch = microbatch;
    return op;
  }
  static Op collective_on(CollectiveOp op, double bytes, int group) {
    return Op{Kind::collective, 0, -1, op, bytes, group};
  }
  static Op transfer(Kind kind, int peer, double bytes, int microbatch) {
    Op op{kind};
    op.peer = peer;
    op.bytes = bytes;
    op.microbatch = microbatch;
    return op;
  }
  static Op sync(Kind kind, int event) {
    Op op{kind};
    op.event = event;
    return op;
  }
};

/// What one rank runs in every training step: one op list per stream. Streams run concurrently
/// and synchronise through events, as CUDA streams do; stream 0 is the compute stream.
struct Program {
  std::vector<std::vector<Op>> streams = {{}};
  int events = 0;  ///< event ids used: 0 .. events-1
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
  std::vector<CollectiveGroup> groups;
  std::vector<Segment> segments;
  /// By symmetry some ranks run exactly like another one and are not simulated:
  /// representative[r] is the simulated rank whose timeline r shares (r itself when simulated).
  /// Empty: every rank is simulated.
  std::vector<int> representative;
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

}  // namespace prismsim
