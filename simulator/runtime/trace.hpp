#pragma once

#include <string>
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
};

/// Records the spans of selected ranks during one run and writes them when it ends, as a Chrome
/// trace (JSON "traceEvents", readable by ui.perfetto.dev and chrome://tracing) or as Kineto
/// traces: per rank `rankR.pt.trace.json` with "distributedInfo", GPU kernels ("cat": "kernel"),
/// NCCL kernels for collectives and transfers with the profiler's size and group arguments. A rank
/// that is not simulated is drawn with its representative's timeline; the kernels of a fused
/// execution with the durations its own GPU drew for them.
class TraceRecorder : public RunObserver {
 public:
  /// `ranks`: the ranks to record; `gpus_per_node` places their GPUs in their nodes.
  TraceRecorder(std::string path, std::vector<int> ranks, TraceFormat format, const Job& job,
                int gpus_per_node);

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
  void write_chrome(const TraceLayout& layout) const;
  void write_kineto(const TraceLayout& layout) const;

  std::string path_;
  std::vector<int> ranks_;  ///< sorted
  TraceFormat format_ = TraceFormat::chrome;
  const Job& job_;
  TraceLayout layout_;
  std::vector<std::vector<int>> drawn_as_;  ///< per simulated rank: the recorded ranks it draws
  std::vector<TraceSpan> spans_;
};

/// Parses a rank selection "0-7,64,128-135" (ranks below `ranks`); throws std::invalid_argument.
std::vector<int> parse_rank_list(const std::string& text, int ranks);

}  // namespace prismsim
