#include "runtime/trace.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "core/text.hpp"

namespace prismsim {

TraceRecorder::TraceRecorder(std::string path, std::vector<int> ranks, int run, TraceFormat format)
    : path_(std::move(path)), ranks_(std::move(ranks)), run_(run), format_(format) {
  std::sort(ranks_.begin(), ranks_.end());
}

bool TraceRecorder::wants(int rank) const {
  return std::binary_search(ranks_.begin(), ranks_.end(), rank);
}

void TraceRecorder::write(const TraceLayout& layout) const {
  if (format_ == TraceFormat::kineto) {
    write_kineto(layout);
  } else {
    write_chrome(layout);
  }
}

void TraceRecorder::write_chrome(const TraceLayout& layout) const {
  std::ofstream out(path_, std::ios::binary);
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto line = [&](const std::string& text) {
    out << (first ? "" : ",\n") << text;
    first = false;
  };
  for (int rank : ranks_) {
    line(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}})", rank,
                     json_string(layout.rank_labels.at(static_cast<size_t>(rank)))));
    line(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})",
                     rank, rank));
    for (size_t s = 0; s < layout.stream_names.size(); ++s) {
      line(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})",
                       rank, s, json_string(layout.stream_names[s])));
    }
  }
  for (const TraceSpan& span : spans_) {
    const std::string args =
        span.microbatch >= 0 ? fmt::format(R"(,"args":{{"microbatch":{}}})", span.microbatch) : "";
    line(fmt::format(R"({{"ph":"X","name":{},"cat":{},"pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f}{}}})",
                     json_string(span.name), json_string(span.category), span.rank, span.stream,
                     span.start_s * 1e6, (span.end_s - span.start_s) * 1e6, args));
  }
  out << "\n]}\n";
  out.close();
  if (!out) throw std::runtime_error(fmt::format("cannot write trace '{}'", path_));
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

/// The NCCL kernel a span stands for, with the arguments PyTorch's profiler records for it.
std::pair<std::string, std::string> nccl_kernel(const TraceSpan& span) {
  std::string name;
  if (span.category == "p2p") {
    name = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)";
  } else if (span.category == "collective") {
    name = fmt::format("ncclDevKernel_{}_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                       camel_case(span.op));
  } else {
    name = "ncclDevKernel_" + span.name;  // analytic: "tp_all_reduce"
  }
  std::string args;
  if (span.bytes > 0) {
    const double elements = std::round(span.bytes / 2);
    args += fmt::format(R"(,"Collective name":{},"In msg nelems":{:.0f},"Out msg nelems":{:.0f},)"
                        R"("dtype":"BFloat16")",
                        json_string(span.op), elements, elements);
  }
  if (!span.group.empty()) {
    std::string ranks;
    for (int r : span.group) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    args += fmt::format(R"(,"Group size":{},"Process Group Ranks":"[{}]")", span.group.size(), ranks);
  }
  return {name, args};
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
    std::ofstream out(file, std::ios::binary);
    out << fmt::format(
        "{{\"schemaVersion\":1,\"distributedInfo\":{{\"backend\":\"nccl\",\"rank\":{},"
        "\"world_size\":{}}},\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
        R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}})",
        rank, world, device, json_string(layout.rank_labels.at(static_cast<size_t>(rank))));
    for (const TraceSpan* kernel : spans_of[r]) {
      const TraceSpan& span = *kernel;
      if (span.category == "wait") continue;  // waits are not GPU kernels
      const int stream = 7 + span.stream;
      std::string name = span.name, args;
      if (span.category == "collective" || span.category == "p2p" ||
          span.category == "communication") {
        std::tie(name, args) = nccl_kernel(span);
      }
      out << fmt::format(
          ",\n"
          R"({{"ph":"X","cat":"kernel","name":{},"pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},)"
          R"("args":{{"device":{},"stream":{}{}}}}})",
          json_string(name), device, stream, span.start_s * 1e6, (span.end_s - span.start_s) * 1e6,
          device, stream, args);
    }
    out << "\n]}\n";
    out.close();
    if (!out) throw std::runtime_error(fmt::format("cannot write trace '{}'", file));
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
