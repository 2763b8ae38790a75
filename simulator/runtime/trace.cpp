#include "runtime/trace.hpp"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace prismsim {
namespace {

/// A JSON string literal.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

TraceRecorder::TraceRecorder(std::string path, std::vector<int> ranks, int run)
    : path_(std::move(path)), ranks_(std::move(ranks)), run_(run) {
  std::sort(ranks_.begin(), ranks_.end());
}

bool TraceRecorder::wants(int rank) const {
  return std::binary_search(ranks_.begin(), ranks_.end(), rank);
}

void TraceRecorder::write(const std::vector<std::string>& stream_names,
                          const std::vector<std::string>& rank_labels) const {
  std::ofstream out(path_, std::ios::binary);
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto line = [&](const std::string& text) {
    out << (first ? "" : ",\n") << text;
    first = false;
  };
  for (int rank : ranks_) {
    line(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}})", rank,
                     quoted(rank_labels.at(static_cast<size_t>(rank)))));
    line(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})",
                     rank, rank));
    for (size_t s = 0; s < stream_names.size(); ++s) {
      line(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})",
                       rank, s, quoted(stream_names[s])));
    }
  }
  for (const TraceSpan& span : spans_) {
    const std::string args =
        span.microbatch >= 0 ? fmt::format(R"(,"args":{{"microbatch":{}}})", span.microbatch) : "";
    line(fmt::format(R"({{"ph":"X","name":{},"cat":{},"pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f}{}}})",
                     quoted(span.name), quoted(span.category), span.rank, span.stream,
                     span.start_s * 1e6, (span.end_s - span.start_s) * 1e6, args));
  }
  out << "\n]}\n";
  out.close();
  if (!out) throw std::runtime_error(fmt::format("cannot write trace '{}'", path_));
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
