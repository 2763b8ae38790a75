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
  std::string category;  ///< kernel class, "collective", "p2p", "wait"
  int microbatch = -1;
};

/// Collects spans of selected ranks during one run and writes them as a Chrome trace (JSON
/// "traceEvents", readable by ui.perfetto.dev and chrome://tracing): one process per rank, one
/// thread per stream.
class TraceRecorder {
 public:
  TraceRecorder(std::string path, std::vector<int> ranks, int run);

  /// Whether `rank` is recorded (ranks are kept sorted).
  bool wants(int rank) const;
  int run() const { return run_; }
  void add(TraceSpan span) { spans_.push_back(std::move(span)); }
  /// Writes the file; `stream_names[i]` names stream i; `rank_label(rank)` labels a process.
  void write(const std::vector<std::string>& stream_names,
             const std::vector<std::string>& rank_labels) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<int> ranks_;
  int run_ = 0;
  std::vector<TraceSpan> spans_;
};

/// Parses a rank selection "0-7,64,128-135" (ranks below `ranks`); throws std::invalid_argument.
std::vector<int> parse_rank_list(const std::string& text, int ranks);

}  // namespace prismsim
