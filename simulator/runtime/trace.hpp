#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/run_observer.hpp"
#include "workload/program.hpp"

namespace prismsim {

/// One span of a rank's stream on the timeline.
struct TraceSpan {
  int rank = 0;
  int stream = 0;
  double start_s = 0;
  double end_s = 0;
  std::string name;
  std::string category;  ///< kernel class, "communication", "compute", "collective", "p2p", "wait"
  int microbatch = -1;
  std::string op;          ///< collective, p2p: "all_reduce", ..., "recv"
  double bytes = 0;        ///< collective, p2p: message size
  std::vector<int> group;  ///< collective, p2p, communication: the ranks taking part, if known
  int process_group = -1;  ///< collective, p2p, communication: index into the recorder's groups
};

/// A communicator as PyTorch's profiler names it: every rank numbers the groups the same way, so
/// `name` is distinct per group and the same on each member; `description` is its role.
struct TraceProcessGroup {
  std::string name;         ///< "Process Group Name": "3" (a group of the job), "p2p 0-8"
  std::string description;  ///< "Process Group Description": "tp", "dp", "p2p", ...
  std::vector<int> ranks;
};

/// The GPU model, for Kineto's "deviceProperties".
struct TraceDevice {
  std::string name;         ///< GPU model
  double memory_bytes = 0;  ///< HBM capacity, bytes
};

/// How the trace is written.
enum class TraceFormat {
  chrome,  ///< one JSON file, one process per rank, one thread per stream
  kineto,  ///< a directory of PyTorch-profiler-style files, one per rank (`prismsim calibrate`)
};

/// What the timeline's processes and threads are called, and where ranks run.
struct TraceLayout {
  std::vector<std::string> stream_names;
  std::vector<std::string> rank_labels;  ///< per rank
  std::vector<int> device_of_rank;       ///< per rank: its GPU's index within its node
  int gpus_per_node = 1;
  TraceDevice device;
};

/// Records the spans of selected ranks during one run and writes them when it ends, as a Chrome
/// trace (JSON "traceEvents", readable by ui.perfetto.dev and chrome://tracing) or as Kineto
/// traces: per rank `rankR.pt.trace.json` with "deviceProperties", "distributedInfo", GPU kernels
/// ("cat": "kernel"), NCCL kernels for collectives and transfers with the profiler's size and
/// group arguments, and the host's `cpu_op` and `cudaLaunchKernel` events that launched each
/// kernel, linked to it by correlation id and an "ac2g" flow. A rank that is not simulated is
/// drawn with its representative's timeline; the kernels of a fused execution with the durations
/// its own GPU drew for them.
///
/// Every time is written in whole nanoseconds (microseconds with three decimals): a slice's start
/// and end are rounded and its duration is their difference, so slices on one track that touch
/// or nest in the simulation touch or nest exactly in the file. Process and thread ids start at 1.
class TraceRecorder : public RunObserver {
 public:
  /// `ranks`: the ranks to record; `gpus_per_node` places their GPUs in their nodes.
  TraceRecorder(std::string path, std::vector<int> ranks, TraceFormat format, const Job& job,
                int gpus_per_node, TraceDevice device = {});

  /// Whether `rank` is recorded.
  bool wants(int rank) const;
  const std::string& path() const { return path_; }

  bool watches(int rank) const override;
  bool wants_kernels(int rank) const override { return watches(rank); }
  void on_compute(const ComputeSpan& span) override;
  void on_op(const OpSpan& span) override;
  /// Writes the file (Chrome) or the directory's files (Kineto); throws std::runtime_error.
  void on_run_end() override;

 private:
  void add(TraceSpan span) { spans_.push_back(std::move(span)); }
  /// The index of the process group of point-to-point transfers between `a` and `b`.
  int p2p_group(int a, int b);
  void write_chrome(const TraceLayout& layout) const;
  void write_kineto(const TraceLayout& layout) const;

  std::string path_;
  std::vector<int> ranks_;  ///< sorted
  TraceFormat format_ = TraceFormat::chrome;
  const Job& job_;
  TraceLayout layout_;
  std::vector<std::vector<int>> drawn_as_;  ///< per simulated rank: the recorded ranks it draws
  std::vector<TraceSpan> spans_;
  std::vector<TraceProcessGroup> groups_;  ///< the job's groups, lockstep groups, then p2p pairs
  size_t lockstep_base_ = 0;               ///< index in groups_ of lockstep group 0
  std::map<std::pair<int, int>, int> p2p_groups_;
  /// (recorded rank, role "tp") -> index in groups_ of the rank's group of that role.
  std::map<std::pair<int, std::string>, size_t> group_of_role_;
};

/// Parses a rank selection "0-7,64,128-135" (ranks below `ranks`); throws std::invalid_argument.
std::vector<int> parse_rank_list(const std::string& text, int ranks);

}  // namespace prismsim
