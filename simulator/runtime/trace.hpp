#pragma once

#include <string>
#include <vector>

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

/// Collects spans of selected ranks during one run and writes them as a Chrome trace (JSON
/// "traceEvents", readable by ui.perfetto.dev and chrome://tracing) or as Kineto traces: per
/// rank `rankR.pt.trace.json` with "distributedInfo", GPU kernels ("cat": "kernel"), NCCL kernels
/// for collectives and transfers with the profiler's size and group arguments.
class TraceRecorder {
 public:
  TraceRecorder(std::string path, std::vector<int> ranks, int run,
                TraceFormat format = TraceFormat::chrome);

  /// Whether `rank` is recorded (ranks are kept sorted).
  bool wants(int rank) const;
  int run() const { return run_; }
  void add(TraceSpan span) { spans_.push_back(std::move(span)); }
  /// Writes the file (Chrome) or the directory's files (Kineto); throws std::runtime_error.
  void write(const TraceLayout& layout) const;
  const std::string& path() const { return path_; }

 private:
  void write_chrome(const TraceLayout& layout) const;
  void write_kineto(const TraceLayout& layout) const;

  std::string path_;
  std::vector<int> ranks_;
  int run_ = 0;
  TraceFormat format_ = TraceFormat::chrome;
  std::vector<TraceSpan> spans_;
};

/// Parses a rank selection "0-7,64,128-135" (ranks below `ranks`); throws std::invalid_argument.
std::vector<int> parse_rank_list(const std::string& text, int ranks);

}  // namespace prismsim
