#include "sample_readers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/diagnostics.hpp"
#include "core/files.hpp"
#include "core/text.hpp"
#include "json_scanner.hpp"
#include "nccl_log.hpp"

namespace prismsim {
namespace {

/// The largest rank or device number a trace may name (what an int holds).
constexpr int64_t kMaxRank = std::numeric_limits<int>::max();

[[noreturn]] void fail_file(const std::string& path, const std::string& message) {
  throw InputError(
      {Diagnostic{SourceLoc{std::make_shared<const std::string>(path), 0, 0}, message}});
}

std::string read_whole_file(const std::string& path) {
  std::string reason;
  auto text = read_file(path, &reason);
  if (!text) fail_file(path, "cannot read the file: " + reason);
  return std::move(*text);
}

/// The fields of one trace event that calibration reads.
struct TraceEvent {
  std::string ph, cat, name, dtype, collective_name, shape;
  double dur = std::numeric_limits<double>::quiet_NaN();
  double ts = 0;
  double device = -1, pid = -1, tid = -1, stream = -1;
  double in_nelems = 0, out_nelems = 0;
  double external_id = -1;
  double correlation = -1;
  std::vector<int> group_ranks;
};

/// N of a "ProfilerStep#N" annotation, or -1.
int64_t profiler_step(const std::string& name) {
  constexpr std::string_view prefix = "ProfilerStep#";
  if (name.rfind(prefix, 0) != 0) return -1;
  const auto n = parse_number(std::string_view(name).substr(prefix.size()));
  return n && *n >= 0 && *n == std::floor(*n) && *n < 9e15 ? static_cast<int64_t>(*n) : -1;
}

/// A number, or a string holding one (pids and tids are either); -1 otherwise.
double number_or_string(JsonScanner& json) {
  if (json.peek() == '"') return parse_number(json.string()).value_or(-1);
  return json.number();
}

class KinetoReader {
 public:
  KinetoReader(const std::string& path, SampleSet& set)
      : text_(read_whole_file(path)), json_(text_, path), path_(path), set_(set) {}

  void read() {
    if (json_.peek() == '[') {
      events();  // the plain array form of the Chrome trace format
    } else {
      json_.object([&](const std::string& key) {
        if (key == "traceEvents") {
          events();
        } else if (key == "distributedInfo" && json_.peek() == '{') {
          json_.object([&](const std::string& k) {
            if (k == "rank") {
              const double rank = json_.number();
              if (!(rank >= 0 && rank < 1e9) || rank != std::floor(rank)) {
                json_.fail("\"rank\" must be a non-negative integer");
              }
              rank_ = static_cast<int>(rank);
            } else {
              json_.skip_value();
            }
          });
        } else {
          json_.skip_value();
        }
      });
    }
    if (json_.peek() != '\0') json_.fail("unexpected text after the end of the trace");
    finish();
  }

 private:
  struct PendingKernel {
    uint32_t name = 0;    ///< index into raw_names_
    uint32_t stream = 0;  ///< index into streams_
    int device = 0;
    double external_id = -1;
    double seconds = 0;
    double start_us = 0;
    double correlation = -1;
  };
  /// A ProfilerStep#N annotation: on the host (user_annotation) or the GPU (gpu_user_annotation).
  struct StepWindow {
    double begin_us = 0, end_us = 0;
    int64_t step = 0;
  };
  struct PendingCollective {
    CollectiveInfo info;
    int device = 0;
    double seconds = 0;
    double start_us = 0;
    std::string group;  ///< "0,8,16": its ranks, or empty
  };

  void events() {
    json_.array([&] {
      const size_t start = json_.position();
      TraceEvent e;
      event(e);
      const bool gpu_kernel = e.ph == "X" && (e.cat == "kernel" || e.cat == "Kernel");
      if (!gpu_kernel) {
        if (const int64_t step = e.ph == "X" ? profiler_step(e.name) : -1;
            step >= 0 && e.dur >= 0) {
          (e.cat == "gpu_user_annotation" ? gpu_steps_ : host_steps_)
              .push_back({e.ts, e.ts + e.dur, step});
        } else if (e.correlation >= 0 && (e.cat == "cuda_runtime" || e.cat == "cuda_driver")) {
          launch_us_[e.correlation] = e.ts;
        }
        if (set_.options().by_shape && e.external_id >= 0 && !e.shape.empty()) {
          shapes_[e.external_id] = e.shape;
        }
        ++summary_.ignored;
        return;
      }
      if (e.name.empty()) json_.fail_at(start, "a GPU kernel event without a \"name\"");
      if (std::isnan(e.dur)) json_.fail_at(start, "a GPU kernel event without a \"dur\"");
      if (e.dur < 0) {
        json_.fail_at(start, fmt::format("negative duration {} us of kernel '{}'", e.dur, e.name));
      }
      if (e.dur == 0) {
        if (summary_.zero_length++ == 0) summary_.first_zero_length = json_.where(start).str();
        return;
      }
      const double device_id = e.device >= 0 ? e.device : e.pid;
      if (!(device_id >= -1 && device_id <= kMaxRank)) {
        json_.fail_at(start, fmt::format("a GPU kernel event's {} must be an integer from 0 to "
                                         "{}, got {}",
                                         e.device >= 0 ? "device" : "pid", kMaxRank, device_id));
      }
      const int device = static_cast<int>(device_id);
      const double seconds = e.dur * 1e-6;
      std::optional<CollectiveInfo> info;
      if (is_nccl_kernel(e.name)) {
        // The profiler's name of the collective, else the kernel's (never empty for NCCL's).
        if (!e.collective_name.empty()) info = collective_from_name(e.collective_name);
        if (!info) info = collective_from_name(e.name);
      }
      if (info) {
        info->bytes = std::max(e.in_nelems, e.out_nelems) * dtype_bytes(e.dtype);
        if (!e.group_ranks.empty()) {
          info->scope = scope_of_ranks(e.group_ranks, set_.options().gpus_per_node);
        }
        std::string group;
        for (int r : e.group_ranks) group += (group.empty() ? "" : ",") + std::to_string(r);
        collectives_.push_back({*info, device, seconds, e.ts, std::move(group)});
        return;
      }
      const std::string stream =
          e.stream >= 0 ? fmt::format("{}", e.stream) : fmt::format("{}", e.tid);
      kernels_pending_.push_back({intern(raw_names_, raw_name_index_, e.name),
                                  intern(streams_, stream_index_, stream), device, e.external_id,
                                  seconds, e.ts, e.correlation});
    });
  }

  static uint32_t intern(std::vector<std::string>& names,
                         std::unordered_map<std::string, uint32_t>& index,
                         const std::string& name) {
    const auto [it, added] = index.emplace(name, static_cast<uint32_t>(names.size()));
    if (added) names.push_back(name);
    return it->second;
  }

  void event(TraceEvent& e) {
    if (json_.peek() != '{') json_.fail("expected a trace event object");
    json_.object([&](const std::string& key) {
      if (key == "ph")
        e.ph = json_.string();
      else if (key == "cat")
        e.cat = json_.string();
      else if (key == "name")
        e.name = json_.string();
      else if (key == "dur")
        e.dur = json_.number();
      else if (key == "ts")
        e.ts = json_.number();
      else if (key == "pid")
        e.pid = number_or_string(json_);
      else if (key == "tid")
        e.tid = number_or_string(json_);
      else if (key == "args" && json_.peek() == '{')
        args(e);
      else
        json_.skip_value();
    });
  }

  void args(TraceEvent& e) {
    json_.object([&](const std::string& key) {
      const char next = json_.peek();
      if (key == "device" && next != '"')
        e.device = json_.number();
      else if (key == "stream" && next != '"')
        e.stream = json_.number();
      else if (key == "External id" && next != '"')
        e.external_id = json_.number();
      else if (key == "correlation" && next != '"')
        e.correlation = json_.number();
      else if (key == "In msg nelems" && next != '"')
        e.in_nelems = json_.number();
      else if (key == "Out msg nelems" && next != '"')
        e.out_nelems = json_.number();
      else if (key == "dtype" && next == '"')
        e.dtype = json_.string();
      else if (key == "Collective name" && next == '"')
        e.collective_name = json_.string();
      else if (key == "Process Group Ranks" && next == '"')
        group_ranks(e);
      else if (key == "Input Dims" && set_.options().by_shape) {
        const size_t start = json_.position();
        json_.skip_value();
        for (char c : std::string_view(text_).substr(start, json_.position() - start)) {
          if (c != ' ' && c != '\n' && c != '\t' && c != '\r') e.shape += c;
        }
      } else {
        json_.skip_value();
      }
    });
  }

  /// The ranks of "Process Group Ranks" ("[0, 8, 16]"): every integer in the string. A rank
  /// beyond kMaxRank is an error located at its digits (at the string when it has escapes).
  void group_ranks(TraceEvent& e) {
    const size_t quote = json_.position();
    const std::string_view text = json_.string();
    const auto in_file =
        reinterpret_cast<uintptr_t>(text.data()) - reinterpret_cast<uintptr_t>(text_.data());
    const bool unescaped = in_file < text_.size();  // a view into the file, not the scratch copy
    for (size_t i = 0; i < text.size();) {
      if (text[i] < '0' || text[i] > '9') {
        ++i;
        continue;
      }
      const size_t start = i;
      int64_t value = 0;
      for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
        if (value <= kMaxRank) value = value * 10 + (text[i] - '0');  // stops growing past it
      }
      if (value > kMaxRank) {
        json_.fail_at(unescaped ? in_file + start : quote,
                      fmt::format("rank {} in \"Process Group Ranks\" is beyond the largest "
                                  "supported, {}",
                                  text.substr(start, i - start), kMaxRank));
      }
      e.group_ranks.push_back(static_cast<int>(value));
    }
  }

  void finish() {
    if (kernels_pending_.empty() && collectives_.empty() && summary_.zero_length == 0) {
      fail_file(path_,
                "no GPU kernel events: expected events with \"ph\": \"X\" and \"cat\": "
                "\"kernel\" (a PyTorch profiler trace recorded with CUDA activities)");
    }
    const int gpn = set_.options().gpus_per_node;
    std::map<int, int32_t> gpu_of_device;
    auto gpu = [&](int device) {
      auto [it, added] = gpu_of_device.try_emplace(device, -1);
      if (added) {
        it->second = rank_ >= 0
                         ? set_.gpu(fmt::format("rank {}", rank_), fmt::format("{}", rank_ / gpn))
                         : set_.gpu(fmt::format("{} device {}", path_, device), "");
      }
      return it->second;
    };
    // Steps: the GPU-side ProfilerStep# window holding the kernel's start, else the host-side
    // window holding its launch (the runtime call of the same correlation id) or its start.
    std::set<int64_t> steps_seen;
    auto step_of = [&](const PendingKernel& k) -> int64_t {
      const bool on_gpu = !gpu_steps_.empty();
      double t = k.start_us;
      if (!on_gpu && k.correlation >= 0) {
        if (const auto it = launch_us_.find(k.correlation); it != launch_us_.end()) t = it->second;
      }
      for (const StepWindow& w : on_gpu ? gpu_steps_ : host_steps_) {
        if (t >= w.begin_us && t < w.end_us) return w.step;
      }
      return -1;
    };
    for (const PendingKernel& k : kernels_pending_) {
      std::string_view shape;
      if (set_.options().by_shape) {
        const auto it = shapes_.find(k.external_id);
        if (it != shapes_.end()) shape = it->second;
      }
      const int64_t step = step_of(k);
      if (step >= 0) steps_seen.insert(step);
      set_.add(set_.kernel_signature(raw_names_[k.name], shape, streams_[k.stream]), gpu(k.device),
               k.seconds, step);
    }
    summary_.steps = steps_seen.size();
    // Calls of a group on this rank in time order: the k-th is the k-th on every member.
    std::stable_sort(collectives_.begin(), collectives_.end(),
                     [](const auto& a, const auto& b) { return a.start_us < b.start_us; });
    std::map<std::string, uint64_t> calls_of_group;
    const int window = rank_ >= 0 ? set_.next_window(rank_) : 0;
    for (const PendingCollective& c : collectives_) {
      if (rank_ >= 0 && !c.group.empty() && c.info.kind == SampleKind::collective) {
        set_.add_call(c.info, c.group, window, calls_of_group[c.group]++, c.seconds);
      } else {
        set_.add(set_.collective_signature(c.info), gpu(c.device), c.seconds);
      }
    }
    summary_.path = path_;
    summary_.format = "kineto trace";
    summary_.samples = kernels_pending_.size() + collectives_.size();
    set_.add_input(summary_);
  }

  std::string text_;
  JsonScanner json_;
  std::string path_;
  SampleSet& set_;
  int rank_ = -1;
  InputSummary summary_;
  std::vector<std::string> raw_names_, streams_;
  std::unordered_map<std::string, uint32_t> raw_name_index_, stream_index_;
  std::unordered_map<double, std::string> shapes_;  ///< by External id of CPU operators
  std::vector<PendingKernel> kernels_pending_;
  std::vector<PendingCollective> collectives_;
  std::vector<StepWindow> host_steps_, gpu_steps_;
  std::unordered_map<double, double> launch_us_;  ///< correlation id -> launch time (runtime call)
};

/// A CSV line's fields with their 1-based columns; fields may be double-quoted ("" is a quote).
std::vector<std::pair<std::string, int>> csv_fields(const std::string& line, const SourceLoc& where,
                                                    Diagnostics& diags) {
  std::vector<std::pair<std::string, int>> fields;
  size_t i = 0;
  while (true) {
    std::string field;
    const int column = static_cast<int>(i) + 1;
    if (i < line.size() && line[i] == '"') {
      for (++i;; ++i) {
        if (i >= line.size()) {
          diags.error(SourceLoc{where.file, where.line, column}, "unterminated quoted field");
          return {};
        }
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            ++i;
          } else {
            ++i;
            break;
          }
        } else {
          field += line[i];
        }
      }
    } else {
      for (; i < line.size() && line[i] != ','; ++i) field += line[i];
    }
    while (!field.empty() && (field.back() == '\r' || field.back() == ' ')) field.pop_back();
    fields.emplace_back(std::move(field), column);
    if (i >= line.size()) break;
    if (line[i] != ',') {
      diags.error(SourceLoc{where.file, where.line, static_cast<int>(i) + 1},
                  "expected ',' after a quoted field");
      return {};
    }
    ++i;
  }
  return fields;
}

}  // namespace

void read_kineto_trace(const std::string& path, SampleSet& set) { KinetoReader(path, set).read(); }

void read_samples_csv(const std::string& path, SampleSet& set) {
  const auto file = std::make_shared<const std::string>(path);
  std::istringstream in(read_whole_file(path));
  Diagnostics diags;
  enum Column { name, duration, gpu, node, step };
  const std::vector<std::string> known = {"name", "duration_us", "gpu", "node", "step"};
  std::vector<int> column_of(known.size(), -1);  // field index of each known column
  size_t columns = 0;                            // known columns in the header
  std::string line;
  int line_no = 0;
  size_t samples = 0;
  std::set<int64_t> csv_steps;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r" || line[0] == '#') continue;
    const auto fields = csv_fields(line, SourceLoc{file, line_no, 1}, diags);
    if (fields.empty()) continue;
    if (column_of[name] < 0) {  // the header
      for (size_t f = 0; f < fields.size(); ++f) {
        const auto it = std::find(known.begin(), known.end(), fields[f].first);
        if (it == known.end()) {
          diags.error(
              SourceLoc{file, line_no, fields[f].second},
              fmt::format("unknown column '{}': expected name, duration_us, gpu, node, step",
                          fields[f].first));
          continue;
        }
        int& column = column_of[static_cast<size_t>(it - known.begin())];
        if (column >= 0) {
          diags.error(SourceLoc{file, line_no, fields[f].second},
                      fmt::format("duplicate column '{}' (first at column {})", fields[f].first,
                                  fields[static_cast<size_t>(column)].second));
          continue;
        }
        column = static_cast<int>(f);
      }
      columns = fields.size();
      if (column_of[name] < 0 || column_of[duration] < 0) {
        diags.error(SourceLoc{file, line_no, 1},
                    "expected a header with the columns name and duration_us (and optionally gpu, "
                    "node, step)");
        break;
      }
      if (column_of[node] >= 0 && column_of[gpu] < 0) {
        diags.error(SourceLoc{file, line_no, fields[static_cast<size_t>(column_of[node])].second},
                    "a node column needs a gpu column (GPUs are grouped by node)");
      }
      if (!diags.empty()) break;
      continue;
    }
    if (fields.size() != columns) {
      diags.error(
          SourceLoc{file, line_no, 1},
          fmt::format("expected {} fields like the header, found {}", columns, fields.size()));
      continue;
    }
    const auto field = [&](Column c) -> const std::pair<std::string, int>& {
      return fields[static_cast<size_t>(column_of[c])];
    };
    const auto& [kernel, name_column] = field(name);
    if (kernel.empty()) diags.error(SourceLoc{file, line_no, name_column}, "empty kernel name");
    const auto& [text, duration_column] = field(duration);
    const auto us = parse_number(text);
    if (!us || !std::isfinite(*us) || *us <= 0) {
      diags.error(
          SourceLoc{file, line_no, duration_column},
          fmt::format("duration_us must be a positive number of microseconds, got '{}'", text));
    }
    int64_t step_value = -1;
    if (column_of[step] >= 0) {
      const auto s = parse_number(field(step).first);
      if (s && *s >= 0 && *s == std::floor(*s) && *s < 9e15) {
        step_value = static_cast<int64_t>(*s);
        csv_steps.insert(step_value);
      } else {
        diags.error(
            SourceLoc{file, line_no, field(step).second},
            fmt::format("step must be a non-negative integer, got '{}'", field(step).first));
      }
    }
    if (!diags.empty()) {  // from the first error on, rows are only checked
      if (diags.size() >= 20) break;
      continue;
    }
    int32_t gpu_index = -1;
    if (column_of[gpu] >= 0 && !field(gpu).first.empty()) {
      gpu_index = set.gpu(field(gpu).first, column_of[node] >= 0 ? field(node).first : "");
    }
    const auto collective = is_nccl_kernel(kernel) ? collective_from_name(kernel) : std::nullopt;
    const uint32_t signature =
        collective ? set.collective_signature(*collective) : set.kernel_signature(kernel, "", "");
    set.add(signature, gpu_index, *us * 1e-6, step_value);
    ++samples;
  }
  if (diags.empty() && column_of[name] < 0) {
    diags.error(SourceLoc{file, 1, 1},
                "empty file: expected a header name,duration_us[,gpu][,node][,step]");
  } else if (diags.empty() && samples == 0) {
    diags.error(SourceLoc{file, line_no, 1}, "no samples after the header");
  }
  diags.throw_if_any();
  set.add_input({path, "samples csv", samples, 0, 0, "", csv_steps.size()});
}

void read_nccl_tests_log(const std::string& path, SampleSet& set) {
  const NcclLog log = read_nccl_log(path);
  CollectiveInfo unnamed;
  unnamed.op = "collective";
  CollectiveInfo info =
      collective_from_name(std::filesystem::path(path).filename().string()).value_or(unnamed);
  info.scope = log.nodes > 1 ? CommScope::inter_node : CommScope::intra_node;
  size_t samples = 0;
  for (const NcclMeasurement& m : log.points) {
    info.bytes = m.bytes;
    const uint32_t signature = set.collective_signature(info);
    for (double t : {m.time_s, m.in_place_time_s}) {
      if (t <= 0) continue;
      set.add(signature, -1, t);
      ++samples;
    }
  }
  set.add_input({path, "nccl-tests log", samples, 0, 0, ""});
}

SampleSet read_calibration_inputs(const std::vector<std::string>& paths,
                                  const SignatureOptions& options) {
  SampleSet set(options);
  std::vector<Diagnostic> problems;  // every file's, before giving up
  for (const std::string& path : paths) {
    try {
      read_calibration_input(path, set);
    } catch (const InputError& e) {
      problems.insert(problems.end(), e.diagnostics().begin(), e.diagnostics().end());
    }
  }
  if (!problems.empty()) throw InputError(problems);
  set.match_calls();
  return set;
}

void read_calibration_input(const std::string& path, SampleSet& set) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".gz") {
    fail_file(path, fmt::format("compressed files are not read: decompress it first (gunzip -k {})",
                                path));
  }
  if (ext == ".json") {
    read_kineto_trace(path, set);
  } else if (ext == ".csv") {
    read_samples_csv(path, set);
  } else {
    read_nccl_tests_log(path, set);
  }
}

}  // namespace prismsim
