#include "runtime/trace.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "core/files.hpp"
#include "core/json.hpp"

namespace prismsim {

TraceRecorder::TraceRecorder(std::string path, std::vector<int> ranks, TraceFormat format,
                             const Job& job, int gpus_per_node)
    : path_(std::move(path)), ranks_(std::move(ranks)), format_(format), job_(job) {
  std::sort(ranks_.begin(), ranks_.end());
  size_t streams = 1;
  for (const auto& program : job.program_of_rank) {
    if (program) streams = std::max(streams, program->streams.size());
  }
  const std::vector<std::string> names = {"compute", "data-parallel", "data-parallel reduce"};
  for (size_t s = 0; s < streams; ++s) {
    layout_.stream_names.push_back(s < names.size() ? names[s] : fmt::format("stream {}", s));
  }
  drawn_as_.resize(static_cast<size_t>(job.rank_count()));
  for (int rank = 0; rank < job.rank_count(); ++rank) {
    const int gpu = job.gpu_of_rank[static_cast<size_t>(rank)];
    const int representative =
        job.simulated(rank) ? rank : job.representative[static_cast<size_t>(rank)];
    layout_.rank_labels.push_back(
        representative == rank
            ? fmt::format("rank {} (GPU {})", rank, gpu)
            : fmt::format("rank {} (GPU {}, as rank {})", rank, gpu, representative));
    layout_.device_of_rank.push_back(gpu % gpus_per_node);
    if (wants(rank)) drawn_as_[static_cast<size_t>(representative)].push_back(rank);
  }
}

bool TraceRecorder::wants(int rank) const {
  return std::binary_search(ranks_.begin(), ranks_.end(), rank);
}

bool TraceRecorder::watches(int rank) const {
  return !drawn_as_[static_cast<size_t>(rank)].empty();
}

void TraceRecorder::on_op(const OpSpan& s) {
  TraceSpan span;
  if (const auto* call = std::get_if<ops::Collective>(s.op)) {
    const CollectiveGroup& g = job_.groups[call->group];
    span = {.name = fmt::format("{} {}", g.name, to_string(call->op)),
            .category = "collective",
            .microbatch = call->microbatch.value_or(-1),
            .op = to_string(call->op),
            .bytes = call->bytes,
            .group = g.ranks};
  } else if (const auto* recv = std::get_if<ops::Recv>(s.op)) {
    span = {.name = fmt::format("recv from rank {}", recv->peer),
            .category = "p2p",
            .microbatch = recv->microbatch.value_or(-1),
            .op = "recv",
            .bytes = recv->bytes,
            .group = {recv->peer, s.rank}};
  } else if (std::holds_alternative<ops::Wait>(*s.op)) {
    if (s.end_s <= s.start_s) return;
    span.name = span.category = "wait";
  } else {
    return;
  }
  span.stream = s.stream;
  span.start_s = s.start_s;
  span.end_s = s.end_s;
  for (int as : drawn_as_[static_cast<size_t>(s.rank)]) {
    span.rank = as;
    add(span);
  }
}

void TraceRecorder::on_compute(const ComputeSpan& s) {
  // Without variation, kernels in proportion to their nominal durations.
  const double scale = (s.end_s - s.start_s) / s.nominal_s;
  for (int as : drawn_as_[static_cast<size_t>(s.rank)]) {
    // With variation, the kernels as this rank's own GPU ran them.
    const std::vector<double>* own = nullptr;
    if (s.member_kernel_s != nullptr) {
      const std::vector<int>& gpus = *s.member_gpus;
      const auto it = std::find(gpus.begin(), gpus.end(), job_.gpu_of_rank[static_cast<size_t>(as)]);
      if (it != gpus.end()) own = &(*s.member_kernel_s)[static_cast<size_t>(it - gpus.begin())];
    }
    std::vector<int> lockstep;
    if (!job_.lockstep_of_rank.empty() && job_.lockstep_of_rank[static_cast<size_t>(as)] >= 0) {
      lockstep = job_.lockstep[static_cast<size_t>(job_.lockstep_of_rank[static_cast<size_t>(as)])];
    }
    double at = s.start_s;
    size_t next = 0;
    for (const Op* op : *s.ops) {
      const auto add_kernel = [&](const std::string& name, const char* category, double seconds,
                                  double bytes) {
        const double d = own != nullptr ? (*own)[next++] : seconds * scale;
        if (category == std::string_view("idle")) {  // waiting for the host: a gap
          at += d;
          return;
        }
        TraceSpan kernel;
        kernel.rank = as;
        kernel.stream = s.stream;
        kernel.start_s = at;
        kernel.end_s = at + d;
        kernel.name = name;
        kernel.category = category;
        kernel.microbatch = microbatch_of(*op).value_or(-1);
        if (category == std::string_view("communication")) {
          kernel.op = name;
          kernel.bytes = bytes;
          kernel.group = lockstep;
        }
        add(std::move(kernel));
        at += d;
      };
      const auto* run = std::get_if<ops::RunSegment>(op);
      if (run == nullptr) {
        add_kernel("compute", "compute", nominal_seconds(job_, *op), 0);
        continue;
      }
      for (const Kernel& k : job_.segments[run->segment].kernels) {
        add_kernel(k.name, to_string(k.kernel_class), k.seconds, k.bytes);
      }
    }
  }
}

void TraceRecorder::on_run_end() {
  if (format_ == TraceFormat::kineto) {
    write_kineto(layout_);
  } else {
    write_chrome(layout_);
  }
}

using Layout = JsonWriter::Layout;

void TraceRecorder::write_chrome(const TraceLayout& layout) const {
  AtomicFile file(path_);  // whole or not at all
  std::ostream& out = file.stream();
  JsonWriter j;
  j.begin_object(Layout::compact).member("displayTimeUnit", "ms").key("traceEvents");
  j.begin_array(Layout::rows);
  for (int rank : ranks_) {
    j.begin_object(Layout::compact).member("ph", "M").member("name", "process_name");
    j.member("pid", rank).key("args").begin_object(Layout::compact);
    j.member("name", layout.rank_labels.at(static_cast<size_t>(rank))).end().end();
    j.begin_object(Layout::compact).member("ph", "M").member("name", "process_sort_index");
    j.member("pid", rank).key("args").begin_object(Layout::compact);
    j.member("sort_index", rank).end().end();
    for (size_t s = 0; s < layout.stream_names.size(); ++s) {
      j.begin_object(Layout::compact).member("ph", "M").member("name", "thread_name");
      j.member("pid", rank).member("tid", s).key("args").begin_object(Layout::compact);
      j.member("name", layout.stream_names[s]).end().end();
    }
  }
  for (const TraceSpan& span : spans_) {
    j.begin_object(Layout::compact).member("ph", "X").member("name", span.name);
    j.member("cat", span.category).member("pid", span.rank).member("tid", span.stream);
    j.key("ts").fixed(span.start_s * 1e6, 3).key("dur").fixed((span.end_s - span.start_s) * 1e6, 3);
    if (span.microbatch >= 0) {
      j.key("args").begin_object(Layout::compact).member("microbatch", span.microbatch).end();
    }
    j.end();
    j.flush(out);
  }
  j.end().end();
  j.flush(out);
  out << "\n";
  file.commit();
}

namespace {

/// "all_reduce" -> "AllReduce".
std::string camel_case(const std::string& snake) {
  std::string out;
  bool upper = true;
  for (char c : snake) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

/// The NCCL kernel a span stands for.
std::string nccl_kernel_name(const TraceSpan& span) {
  if (span.category == "p2p") return "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)";
  if (span.category == "collective") {
    return fmt::format("ncclDevKernel_{}_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                       camel_case(span.op));
  }
  return "ncclDevKernel_" + span.name;  // analytic: "tp_all_reduce"
}

/// The arguments PyTorch's profiler records for an NCCL kernel, as members of `j`'s object.
void write_nccl_args(JsonWriter& j, const TraceSpan& span) {
  if (span.bytes > 0) {
    const double elements = std::round(span.bytes / 2);
    j.member("Collective name", span.op);
    j.key("In msg nelems").fixed(elements, 0).key("Out msg nelems").fixed(elements, 0);
    j.member("dtype", "BFloat16");
  }
  if (!span.group.empty()) {
    std::string ranks;
    for (int r : span.group) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    j.member("Group size", span.group.size()).member("Process Group Ranks", "[" + ranks + "]");
  }
}

}  // namespace

void TraceRecorder::write_kineto(const TraceLayout& layout) const {
  std::error_code ec;
  std::filesystem::create_directories(path_, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create trace directory '{}'", path_));
  const size_t world = layout.rank_labels.size();
  // Each rank's spans, in recording order (ranks_ is sorted).
  std::vector<std::vector<const TraceSpan*>> spans_of(ranks_.size());
  for (const TraceSpan& span : spans_) {
    const auto at = std::lower_bound(ranks_.begin(), ranks_.end(), span.rank);
    if (at != ranks_.end() && *at == span.rank) {
      spans_of[static_cast<size_t>(at - ranks_.begin())].push_back(&span);
    }
  }
  for (size_t r = 0; r < ranks_.size(); ++r) {
    const int rank = ranks_[r];
    const std::string file =
        (std::filesystem::path(path_) / fmt::format("rank{}.pt.trace.json", rank)).string();
    const int device = layout.device_of_rank.at(static_cast<size_t>(rank));
    AtomicFile atomic(file);  // whole or not at all
    std::ostream& out = atomic.stream();
    JsonWriter j;
    j.begin_object(Layout::compact).member("schemaVersion", 1).key("distributedInfo");
    j.begin_object(Layout::compact).member("backend", "nccl").member("rank", rank);
    j.member("world_size", world).end().member("displayTimeUnit", "ms").key("traceEvents");
    j.begin_array(Layout::rows);
    j.begin_object(Layout::compact).member("ph", "M").member("name", "process_name");
    j.member("pid", device).key("args").begin_object(Layout::compact);
    j.member("name", layout.rank_labels.at(static_cast<size_t>(rank))).end().end();
    for (const TraceSpan* kernel : spans_of[r]) {
      const TraceSpan& span = *kernel;
      if (span.category == "wait") continue;  // waits are not GPU kernels
      const int stream = 7 + span.stream;
      const bool nccl = span.category == "collective" || span.category == "p2p" ||
                        span.category == "communication";
      j.begin_object(Layout::compact).member("ph", "X").member("cat", "kernel");
      j.member("name", nccl ? nccl_kernel_name(span) : span.name);
      j.member("pid", device).member("tid", stream);
      j.key("ts").fixed(span.start_s * 1e6, 3).key("dur").fixed((span.end_s - span.start_s) * 1e6, 3);
      j.key("args").begin_object(Layout::compact).member("device", device).member("stream", stream);
      if (nccl) write_nccl_args(j, span);
      j.end().end();
      j.flush(out);
    }
    j.end().end();
    j.flush(out);
    out << "\n";
    atomic.commit();
  }
}

std::vector<int> parse_rank_list(const std::string& text, int ranks) {
  const auto invalid = [&] {
    return std::invalid_argument(
        fmt::format("invalid rank list '{}': expected ranks and ranges like 0-7,64", text));
  };
  // A non-negative decimal number filling `digits` exactly.
  const auto number = [&](const std::string& digits) {
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      throw invalid();
    }
    return std::stoi(digits);
  };
  std::vector<int> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    const size_t dash = item.find('-');
    const int first = number(item.substr(0, dash));
    const int last = dash == std::string::npos ? first : number(item.substr(dash + 1));
    if (last < first) throw invalid();
    if (last >= ranks) {
      throw std::invalid_argument(fmt::format("rank {} does not exist (ranks 0-{})", last, ranks - 1));
    }
    for (int r = first; r <= last; ++r) out.push_back(r);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace prismsim
