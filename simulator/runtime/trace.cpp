#include "runtime/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "core/files.hpp"
#include "core/json.hpp"

namespace prismsim {

TraceRecorder::TraceRecorder(std::string path, std::vector<int> ranks, TraceFormat format,
                             const Job& job, int gpus_per_node, TraceDevice device)
    : path_(std::move(path)), ranks_(std::move(ranks)), format_(format), job_(job) {
  std::sort(ranks_.begin(), ranks_.end());
  layout_.gpus_per_node = std::max(1, gpus_per_node);
  layout_.device = std::move(device);
  // Process groups as every rank numbers them: the job's groups, then the lockstep groups.
  for (const CollectiveGroup& g : job.groups) {
    groups_.push_back(
        {std::to_string(groups_.size()), g.name.empty() ? "default_pg" : g.name, g.ranks});
  }
  lockstep_base_ = groups_.size();
  for (const std::vector<int>& members : job.lockstep) {
    groups_.push_back({std::to_string(groups_.size()), "layer", members});
  }
  for (size_t g = 0; g < job.groups.size(); ++g) {
    for (int member : job.groups[GroupId(g)].ranks) {
      if (wants(member)) group_of_role_.try_emplace({member, job.groups[GroupId(g)].name}, g);
    }
  }
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

int TraceRecorder::p2p_group(int a, int b) {
  const auto key = std::minmax(a, b);
  const auto [it, added] = p2p_groups_.try_emplace(key, static_cast<int>(groups_.size()));
  if (added) {
    groups_.push_back(
        {fmt::format("p2p {}-{}", key.first, key.second), "p2p", {key.first, key.second}});
  }
  return it->second;
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
            .group = g.ranks,
            .process_group = call->group.value()};
  } else if (const auto* recv = std::get_if<ops::Recv>(s.op)) {
    span = {.name = fmt::format("recv from rank {}", recv->peer),
            .category = "p2p",
            .microbatch = recv->microbatch.value_or(-1),
            .op = "recv",
            .bytes = recv->bytes,
            .group = {recv->peer, s.rank},
            .process_group = p2p_group(recv->peer, s.rank)};
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
  // Without variation, kernels in proportion to their nominal durations (less the waits for the
  // host that a host ahead had already issued).
  const double run_s = s.nominal_s - s.host_wait_skipped_s;
  const double scale = run_s > 0 ? (s.end_s - s.start_s) / run_s : 1;
  for (int as : drawn_as_[static_cast<size_t>(s.rank)]) {
    // With variation, the kernels as this rank's own GPU ran them.
    const std::vector<double>* own = nullptr;
    if (s.member_kernel_s != nullptr) {
      const std::vector<int>& gpus = *s.member_gpus;
      const auto it =
          std::find(gpus.begin(), gpus.end(), job_.gpu_of_rank[static_cast<size_t>(as)]);
      if (it != gpus.end()) own = &(*s.member_kernel_s)[static_cast<size_t>(it - gpus.begin())];
    }
    int lockstep_group = -1;
    if (!job_.lockstep_of_rank.empty() && job_.lockstep_of_rank[static_cast<size_t>(as)] >= 0) {
      lockstep_group = static_cast<int>(
          lockstep_base_ + static_cast<size_t>(job_.lockstep_of_rank[static_cast<size_t>(as)]));
    }
    // An analytic layer collective ("tp_all_reduce") runs in the rank's group of its prefix's
    // role, else (no such group) among the ranks held in lockstep.
    const auto group_of = [&](const std::string& kernel) {
      const auto it = group_of_role_.find({as, kernel.substr(0, kernel.find('_'))});
      return it != group_of_role_.end() ? static_cast<int>(it->second) : lockstep_group;
    };
    double at = s.start_s;
    double skip_s = s.host_wait_skipped_s;  // taken off the first waits for the host
    size_t next = 0;
    for (const Op* op : *s.ops) {
      const auto add_kernel = [&](const std::string& name, const char* category, double seconds,
                                  double bytes) {
        if (category == std::string_view("idle")) {  // waiting for the host: a gap
          const double gap_s = own != nullptr ? (*own)[next++] : seconds;
          const double skipped_s = std::min(skip_s, gap_s);
          skip_s -= skipped_s;
          at += (gap_s - skipped_s) * (own != nullptr ? 1 : scale);
          return;
        }
        const double d = own != nullptr ? (*own)[next++] : seconds * scale;
        TraceSpan kernel;
        kernel.rank = as;
        kernel.stream = s.stream;
        // Within the fused execution, whatever the rounding of the sum of its kernels.
        kernel.start_s = std::min(at, s.end_s);
        kernel.end_s = std::min(at + d, s.end_s);
        kernel.name = name;
        kernel.category = category;
        kernel.microbatch = microbatch_of(*op).value_or(-1);
        if (category == std::string_view("communication")) {
          kernel.op = name;
          kernel.bytes = bytes;
          kernel.process_group = group_of(name);
          if (kernel.process_group >= 0) {
            kernel.group = groups_[static_cast<size_t>(kernel.process_group)].ranks;
          }
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

namespace {

/// Simulated seconds as whole nanoseconds (times are never negative).
int64_t to_ns(double seconds) { return std::max<int64_t>(0, std::llround(seconds * 1e9)); }

/// Nanoseconds as the trace's microseconds with three decimals, exactly.
void write_us(JsonWriter& j, int64_t ns) { j.raw(fmt::format("{}.{:03}", ns / 1000, ns % 1000)); }

/// A span's start and end on the nanosecond grid: the end is rounded, not the duration, so spans
/// that touch in the simulation touch in the file.
struct NsSpan {
  int64_t start = 0, end = 0;
  explicit NsSpan(const TraceSpan& span)
      : start(to_ns(span.start_s)), end(std::max(start, to_ns(span.end_s))) {}
};

/// "ts" and "dur" members of a slice.
void write_time(JsonWriter& j, int64_t start_ns, int64_t end_ns) {
  j.key("ts");
  write_us(j, start_ns);
  j.key("dur");
  write_us(j, end_ns - start_ns);
}

/// A metadata event naming a process or thread ("process_name", "thread_sort_index", ...).
template <typename T>
void write_metadata(JsonWriter& j, const char* name, int64_t pid, int64_t tid, const char* key,
                    const T& value) {
  j.begin_object(Layout::compact).member("ph", "M").member("name", name).member("pid", pid);
  if (tid > 0) j.member("tid", tid);
  j.key("args").begin_object(Layout::compact).member(key, value).end().end();
}

}  // namespace

void TraceRecorder::write_chrome(const TraceLayout& layout) const {
  AtomicFile file(path_);  // whole or not at all
  std::ostream& out = file.stream();
  JsonWriter j;
  j.begin_object(Layout::compact).member("displayTimeUnit", "ms").key("traceEvents");
  j.begin_array(Layout::rows);
  // Process r + 1 is rank r, thread s + 1 its stream s (Perfetto reserves id 0).
  for (int rank : ranks_) {
    const int64_t pid = rank + 1;
    write_metadata(j, "process_name", pid, 0, "name",
                   layout.rank_labels.at(static_cast<size_t>(rank)));
    write_metadata(j, "process_sort_index", pid, 0, "sort_index", rank);
    for (size_t s = 0; s < layout.stream_names.size(); ++s) {
      const auto tid = static_cast<int64_t>(s) + 1;
      write_metadata(j, "thread_name", pid, tid, "name", layout.stream_names[s]);
      write_metadata(j, "thread_sort_index", pid, tid, "sort_index", tid);
    }
  }
  for (const TraceSpan& span : spans_) {
    const NsSpan ns(span);
    j.begin_object(Layout::compact).member("ph", "X").member("name", span.name);
    j.member("cat", span.category).member("pid", span.rank + 1).member("tid", span.stream + 1);
    write_time(j, ns.start, ns.end);
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
  if (span.category == "p2p")
    return "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)";
  if (span.category == "collective") {
    return fmt::format("ncclDevKernel_{}_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                       camel_case(span.op));
  }
  return "ncclDevKernel_" + span.name;  // analytic: "tp_all_reduce"
}

/// "[0, 8, 16]", as the profiler writes a list in a string.
std::string rank_list(const std::vector<int>& ranks) {
  std::string out = "[";
  for (int r : ranks) out += (out.size() > 1 ? ", " : "") + std::to_string(r);
  return out + "]";
}

/// The arguments PyTorch's profiler records for an NCCL kernel and its `record_param_comms` op,
/// as members of `j`'s object.
void write_nccl_args(JsonWriter& j, const TraceSpan& span, int rank,
                     const std::vector<TraceProcessGroup>& groups) {
  if (span.bytes > 0) {
    const double elements = std::round(span.bytes / 2);
    j.member("Collective name", span.op);
    j.key("In msg nelems").fixed(elements, 0).key("Out msg nelems").fixed(elements, 0);
    j.member("dtype", "BFloat16");
    // Uneven all-to-all splits would be listed; prismsim's are even, which PyTorch writes so.
    j.member("In split size", "[]").member("Out split size", "[]");
  }
  if (!span.group.empty()) {
    j.member("Group size", span.group.size());
    if (span.process_group >= 0) {
      const TraceProcessGroup& pg = groups.at(static_cast<size_t>(span.process_group));
      j.member("Process Group Name", pg.name).member("Process Group Description", pg.description);
    }
    j.member("Process Group Ranks", rank_list(span.group));
  }
  j.member("Rank", rank);
  if (span.category == "p2p" && span.group.size() == 2) j.member("Src Rank", span.group[0]);
}

/// The host's launch of one kernel: a `cpu_op` and within it the `cudaLaunchKernel` call.
struct Launch {
  const TraceSpan* kernel = nullptr;
  int64_t start = 0, end = 0;          ///< of the kernel, ns
  int64_t cpu_start = 0, cpu_end = 0;  ///< of the cpu_op, ns
};

/// Where the host launches each kernel. The simulation does not time the host at this grain: each
/// launch is drawn `lead` before its kernel (kernels in start order), lasting `length`, no earlier
/// than the previous launch's end and ending before the next kernel starts, so that launches never
/// overlap on the host thread and never start after their kernels.
void place_launches(std::vector<Launch>& launches) {
  constexpr int64_t lead = 5000, length = 3000;  // ns
  std::stable_sort(launches.begin(), launches.end(),
                   [](const Launch& a, const Launch& b) { return a.start < b.start; });
  int64_t cursor = 0;
  for (size_t i = 0; i < launches.size(); ++i) {
    Launch& l = launches[i];
    l.cpu_start = std::max(cursor, l.start - lead);  // <= l.start: cursor <= l.start
    const int64_t limit = i + 1 < launches.size() ? launches[i + 1].start : l.cpu_start + length;
    l.cpu_end = std::min(l.cpu_start + length, limit);
    cursor = l.cpu_end;
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
    // The GPU is process device + 1, its streams threads 7, 8, ...; the host process (one thread)
    // has an id above every GPU's, as a Linux pid would be.
    const int64_t gpu_pid = device + 1;
    const int64_t host_pid = 100000 + rank;
    const auto stream_tid = [](int stream) { return int64_t{7} + stream; };
    std::vector<Launch> launches;
    for (const TraceSpan* span : spans_of[r]) {
      if (span->category == "wait") continue;  // waits are not GPU kernels
      const NsSpan ns(*span);
      launches.push_back({span, ns.start, ns.end, 0, 0});
    }
    place_launches(launches);
    // The process groups this rank's calls use, in the order of their names' numbering.
    std::vector<int> used;
    for (const Launch& l : launches) {
      if (l.kernel->process_group >= 0) used.push_back(l.kernel->process_group);
    }
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());

    AtomicFile atomic(file);  // whole or not at all
    std::ostream& out = atomic.stream();
    JsonWriter j;
    j.begin_object(Layout::compact).member("schemaVersion", 1);
    j.key("deviceProperties").begin_array(Layout::compact);
    for (int d = 0; d < layout.gpus_per_node; ++d) {
      j.begin_object(Layout::compact).member("id", d).member("name", layout.device.name);
      j.key("totalGlobalMem").fixed(layout.device.memory_bytes, 0).end();
    }
    j.end();
    j.key("distributedInfo").begin_object(Layout::compact).member("backend", "nccl");
    j.member("rank", rank).member("world_size", world).member("pg_count", used.size());
    j.key("pg_config").begin_array(Layout::compact);
    for (int g : used) {
      const TraceProcessGroup& pg = groups_[static_cast<size_t>(g)];
      j.begin_object(Layout::compact).member("pg_name", pg.name).member("pg_desc", pg.description);
      j.member("backend_config", "cuda:nccl").member("pg_size", pg.ranks.size());
      j.key("ranks").values(pg.ranks, Layout::compact).end();
    }
    j.end().member("nccl_version", "unknown").end();
    j.member("displayTimeUnit", "ms").member("baseTimeNanoseconds", 0).key("traceEvents");
    j.begin_array(Layout::rows);
    write_metadata(j, "process_name", gpu_pid, 0, "name", fmt::format("GPU {}", device));
    write_metadata(j, "process_labels", gpu_pid, 0, "labels",
                   layout.rank_labels.at(static_cast<size_t>(rank)));
    write_metadata(j, "process_sort_index", gpu_pid, 0, "sort_index", gpu_pid);
    for (size_t s = 0; s < layout.stream_names.size(); ++s) {
      const int64_t tid = stream_tid(static_cast<int>(s));
      write_metadata(j, "thread_name", gpu_pid, tid, "name",
                     fmt::format("stream {} ({})", tid, layout.stream_names[s]));
      write_metadata(j, "thread_sort_index", gpu_pid, tid, "sort_index", tid);
    }
    write_metadata(j, "process_name", host_pid, 0, "name", fmt::format("rank {} host", rank));
    write_metadata(j, "process_sort_index", host_pid, 0, "sort_index", 0);
    write_metadata(j, "thread_name", host_pid, host_pid, "name",
                   fmt::format("thread {} (main)", host_pid));
    int64_t correlation = 0;
    for (const Launch& l : launches) {
      const TraceSpan& span = *l.kernel;
      ++correlation;  // from 1; also the launching op's "External id" (one op per kernel)
      const int64_t stream = stream_tid(span.stream);
      const bool nccl = span.category == "collective" || span.category == "p2p" ||
                        span.category == "communication";
      // The op that launched it, and within it the runtime call.
      j.begin_object(Layout::compact).member("ph", "X").member("cat", "cpu_op");
      j.member("name", nccl ? "record_param_comms" : span.name);
      j.member("pid", host_pid).member("tid", host_pid);
      write_time(j, l.cpu_start, l.cpu_end);
      j.key("args").begin_object(Layout::compact).member("External id", correlation);
      j.member("Ev Idx", correlation - 1);
      if (nccl) write_nccl_args(j, span, rank, groups_);
      j.end().end();
      // The call is the op's second half, starting no later than its kernel.
      const int64_t call_start = std::min(l.cpu_start + (l.cpu_end - l.cpu_start) / 2, l.start);
      j.begin_object(Layout::compact).member("ph", "X").member("cat", "cuda_runtime");
      j.member("name", "cudaLaunchKernel").member("pid", host_pid).member("tid", host_pid);
      write_time(j, call_start, l.cpu_end);
      j.key("args").begin_object(Layout::compact).member("External id", correlation);
      j.member("cbid", 211).member("correlation", correlation).end().end();
      j.begin_object(Layout::compact).member("ph", "s").member("id", correlation);
      j.member("pid", host_pid).member("tid", host_pid).key("ts");
      write_us(j, call_start);
      j.member("cat", "ac2g").member("name", "ac2g").end();
      // The kernel.
      j.begin_object(Layout::compact).member("ph", "X").member("cat", "kernel");
      j.member("name", nccl ? nccl_kernel_name(span) : span.name);
      j.member("pid", gpu_pid).member("tid", stream);
      write_time(j, l.start, l.end);
      j.key("args").begin_object(Layout::compact).member("External id", correlation);
      j.member("queued", 0).member("device", device).member("context", 1);
      j.member("stream", stream).member("correlation", correlation);
      if (nccl) write_nccl_args(j, span, rank, groups_);
      j.end().end();
      j.begin_object(Layout::compact).member("ph", "f").member("id", correlation);
      j.member("pid", gpu_pid).member("tid", stream).key("ts");
      write_us(j, l.start);
      j.member("cat", "ac2g").member("name", "ac2g").member("bp", "e").end();
      j.flush(out);
    }
    j.end().member("traceName", fmt::format("rank{}.pt.trace.json", rank)).end();
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
      throw std::invalid_argument(
          fmt::format("rank {} does not exist (ranks 0-{})", last, ranks - 1));
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
