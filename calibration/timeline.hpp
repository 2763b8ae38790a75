#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace prismsim {

/// What an op of a timeline is, from its op type.
enum class TimelineOpKind {
  forward,     ///< a forward compute pass (of one microbatch)
  backward,    ///< a backward compute pass
  collective,  ///< a data-parallel or embedding collective (all-reduce, reduce-scatter, all-gather)
  p2p,         ///< a pipeline send or receive
  other,       ///< optimizer, garbage collection, ...
};

/// One recorded op of one rank.
struct TimelineOp {
  int32_t rank = 0;
  int32_t stage = -1;    ///< pipeline stage; -1 unknown
  int32_t replica = -1;  ///< data-parallel rank; -1 unknown
  int64_t step = 0;
  int32_t microbatch = -1;  ///< of compute ops; -1 unknown or not a compute op
  uint32_t optype = 0;      ///< index into Timeline::optypes
  TimelineOpKind kind = TimelineOpKind::other;
  double start_s = 0;     ///< relative to any origin shared by every rank within a step
  double duration_s = 0;  ///< >= 0
  int line = 0;           ///< its line in the file (1-based)
};

/// An op timeline: every recorded op of several ranks over several steps.
struct Timeline {
  std::string path;
  std::vector<std::string> optypes;
  std::vector<TimelineOp> ops;  ///< in file order
};

/// True when `path`'s first non-comment line is a timeline header: it names any of `optype`,
/// `op`, `start_ts`, `start`, `duration` (a samples CSV has `duration_us`).
bool is_timeline_csv(const std::string& path);

/// The kind of an op type: names with forward/backward and compute are passes, names with
/// all-reduce, reduce-scatter, all-gather (any of '-', '_') collectives, send/recv p2p.
TimelineOpKind timeline_op_kind(const std::string& optype);

/// What a pipeline send or receive op type names: its direction (forward: activations to the next
/// stage; backward: gradients to the previous one) and its side. Nothing when it names neither or
/// both of a pair (Megatron's combined send_forward_recv_backward), or is no p2p op type. Names
/// are read as by timeline_op_kind (any case, '-' or '_').
struct P2pSide {
  bool forward = true;
  bool send = true;
};
std::optional<P2pSide> timeline_p2p_side(const std::string& optype);

/// Reads an op timeline CSV (docs/calibration.md, "Timelines"): columns `rank`, `step`, `optype`
/// (or `op`), `start_ts` (or `start`, s), `duration` (s) are required; `stage`, `dp_rank` (or
/// `replica`), `mb_id` (or `microbatch`) optional; `seq_id`, `mc`, `gmc` are known and not used.
/// Throws InputError (file:line:col) for unknown or missing columns, fields that are not numbers,
/// negative durations, and a rank's ops out of step order (a step before one already seen).
Timeline read_timeline_csv(const std::string& path);

}  // namespace prismsim
