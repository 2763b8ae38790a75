#include "timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "core/diagnostics.hpp"
#include "core/files.hpp"
#include "core/text.hpp"

namespace prismsim {
namespace {

/// A line's comma-separated fields with their 1-based columns (timelines hold no quoted fields).
std::vector<std::pair<std::string, int>> split_fields(const std::string& line) {
  std::vector<std::pair<std::string, int>> fields;
  size_t begin = 0;
  while (true) {
    const size_t comma = line.find(',', begin);
    std::string field =
        line.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    while (!field.empty() && (field.back() == '\r' || field.back() == ' ')) field.pop_back();
    size_t lead = 0;
    while (lead < field.size() && field[lead] == ' ') ++lead;
    fields.emplace_back(field.substr(lead), static_cast<int>(begin + lead) + 1);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return fields;
}

enum Column { kRank, kStep, kOptype, kStart, kDuration, kStage, kReplica, kMicrobatch, kUnused };

/// Header names and the column each stands for.
const std::vector<std::pair<std::string, Column>>& header_names() {
  static const std::vector<std::pair<std::string, Column>> names = {
      {"rank", kRank},         {"step", kStep},        {"optype", kOptype},
      {"op", kOptype},         {"start_ts", kStart},   {"start", kStart},
      {"duration", kDuration}, {"stage", kStage},      {"dp_rank", kReplica},
      {"replica", kReplica},   {"mb_id", kMicrobatch}, {"microbatch", kMicrobatch},
      {"seq_id", kUnused},     {"mc", kUnused},        {"gmc", kUnused}};
  return names;
}

bool contains(const std::string& s, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](const char* w) { return s.find(w) != std::string::npos; });
}

/// An op type in lower case with '-' for '_', as the kinds are matched.
std::string normalized(const std::string& optype) {
  std::string s = optype;
  std::replace(s.begin(), s.end(), '_', '-');
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

TimelineOpKind timeline_op_kind(const std::string& optype) {
  const std::string s = normalized(optype);
  if (contains(s, {"send", "recv"})) return TimelineOpKind::p2p;
  if (contains(s, {"all-reduce", "allreduce", "reduce-scatter", "reducescatter", "all-gather",
                   "allgather"})) {
    return TimelineOpKind::collective;
  }
  if (contains(s, {"forward", "fwd"})) return TimelineOpKind::forward;
  if (contains(s, {"backward", "bwd"})) return TimelineOpKind::backward;
  return TimelineOpKind::other;
}

std::optional<P2pSide> timeline_p2p_side(const std::string& optype) {
  const std::string s = normalized(optype);
  const bool forward = contains(s, {"forward", "fwd"}), backward = contains(s, {"backward", "bwd"});
  const bool send = contains(s, {"send"}), recv = contains(s, {"recv"});
  if (forward == backward || send == recv) return std::nullopt;
  return P2pSide{forward, send};
}

bool is_timeline_csv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line == "\r" || line[0] == '#') continue;
    // Any of a timeline's own names (a samples CSV has duration_us): a misspelt column is then
    // reported against the timeline's columns.
    for (const auto& [name, column] : split_fields(line)) {
      if (name == "optype" || name == "op" || name == "start_ts" || name == "start" ||
          name == "duration") {
        return true;
      }
    }
    return false;
  }
  return false;
}

Timeline read_timeline_csv(const std::string& path) {
  const auto file = std::make_shared<const std::string>(path);
  std::string reason;
  const auto text = read_file(path, &reason);
  if (!text)
    throw InputError({Diagnostic{SourceLoc{file, 0, 0}, "cannot read the file: " + reason}});
  Timeline t;
  t.path = path;
  std::istringstream in(*text);
  Diagnostics diags;
  std::vector<int> field_of(kUnused, -1);  // field index of each used column
  std::vector<std::string> header;
  std::unordered_map<std::string, uint32_t> optype_index;
  std::map<int32_t, std::pair<int64_t, int>> last_step;  // rank -> (step, line)
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r" || line[0] == '#') continue;
    const auto fields = split_fields(line);
    if (header.empty()) {
      std::vector<std::string> known;
      for (const auto& [name, column] : header_names()) known.push_back(name);
      for (size_t f = 0; f < fields.size(); ++f) {
        const std::string& name = fields[f].first;
        header.push_back(name);
        const auto it = std::find_if(header_names().begin(), header_names().end(),
                                     [&](const auto& h) { return h.first == name; });
        const SourceLoc at{file, line_no, fields[f].second};
        if (it == header_names().end()) {
          const std::string near = closest_match(name, known);
          diags.error(
              at,
              fmt::format("unknown timeline column '{}'{}: expected rank, step, optype, "
                          "start_ts, duration and optionally stage, dp_rank, mb_id "
                          "(seq_id, mc, gmc are read and not used)",
                          name, near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
          continue;
        }
        if (it->second == kUnused) continue;
        int& slot = field_of[it->second];
        if (slot >= 0) {
          diags.error(at, fmt::format("column '{}' repeats column {} ('{}')", name,
                                      fields[static_cast<size_t>(slot)].second,
                                      fields[static_cast<size_t>(slot)].first));
          continue;
        }
        slot = static_cast<int>(f);
      }
      const std::pair<Column, const char*> required[] = {{kRank, "rank"},
                                                         {kStep, "step"},
                                                         {kOptype, "optype (or op)"},
                                                         {kStart, "start_ts (or start)"},
                                                         {kDuration, "duration"}};
      for (const auto& [column, name] : required) {
        if (field_of[column] < 0) {
          diags.error(SourceLoc{file, line_no, 1},
                      fmt::format("missing column {}: a timeline needs rank, step, optype, "
                                  "start_ts, duration",
                                  name));
        }
      }
      if (!diags.empty()) break;
      continue;
    }
    if (fields.size() != header.size()) {
      diags.error(SourceLoc{file, line_no, 1},
                  fmt::format("expected {} fields like the header, found {}", header.size(),
                              fields.size()));
      if (diags.size() >= 20) break;
      continue;
    }
    const auto number = [&](Column c, const char* what, bool integer) -> std::optional<double> {
      const auto& [value, column] = fields[static_cast<size_t>(field_of[c])];
      const auto v = parse_number(value);
      if (!v || !std::isfinite(*v) || (integer && (*v != std::floor(*v) || std::fabs(*v) > 2e9))) {
        diags.error(SourceLoc{file, line_no, column},
                    fmt::format("{} must be {}, got '{}'", what,
                                integer ? "an integer" : "a finite number", value));
        return std::nullopt;
      }
      return v;
    };
    TimelineOp op;
    op.line = line_no;
    const auto rank = number(kRank, "rank", true);
    const auto step = number(kStep, "step", true);
    const auto start = number(kStart, "start_ts", false);
    const auto duration = number(kDuration, "duration", false);
    std::optional<double> stage = -1.0, replica = -1.0, microbatch = -1.0;
    if (field_of[kStage] >= 0) stage = number(kStage, "stage", true);
    if (field_of[kReplica] >= 0) replica = number(kReplica, "dp_rank", true);
    if (field_of[kMicrobatch] >= 0) microbatch = number(kMicrobatch, "mb_id", true);
    if (rank && *rank < 0) {
      diags.error(SourceLoc{file, line_no, fields[static_cast<size_t>(field_of[kRank])].second},
                  fmt::format("rank must be non-negative, got {}", *rank));
    }
    if (microbatch && (*microbatch < -1 || *microbatch >= (1 << 21))) {
      diags.error(
          SourceLoc{file, line_no, fields[static_cast<size_t>(field_of[kMicrobatch])].second},
          fmt::format("mb_id must be -1 (none) or from 0 to {}, got {}", (1 << 21) - 1,
                      *microbatch));
    }
    if (duration && *duration < 0) {
      diags.error(SourceLoc{file, line_no, fields[static_cast<size_t>(field_of[kDuration])].second},
                  fmt::format("negative duration {} s: durations are seconds >= 0", *duration));
    }
    const std::string& optype = fields[static_cast<size_t>(field_of[kOptype])].first;
    if (optype.empty()) {
      diags.error(SourceLoc{file, line_no, fields[static_cast<size_t>(field_of[kOptype])].second},
                  "empty optype");
    }
    if (!diags.empty()) {  // from the first error on, rows are only checked
      if (diags.size() >= 20) break;
      continue;
    }
    op.rank = static_cast<int32_t>(*rank);
    op.step = static_cast<int64_t>(*step);
    op.start_s = *start;
    op.duration_s = *duration;
    op.stage = static_cast<int32_t>(*stage);
    op.replica = static_cast<int32_t>(*replica);
    op.kind = timeline_op_kind(optype);
    const bool compute = op.kind == TimelineOpKind::forward || op.kind == TimelineOpKind::backward;
    op.microbatch = compute ? static_cast<int32_t>(*microbatch) : -1;
    auto [it, added] = optype_index.try_emplace(optype, static_cast<uint32_t>(t.optypes.size()));
    if (added) t.optypes.push_back(optype);
    op.optype = it->second;
    auto [last, first_of_rank] = last_step.try_emplace(op.rank, op.step, line_no);
    if (!first_of_rank) {
      if (op.step < last->second.first) {
        diags.error(SourceLoc{file, line_no, fields[static_cast<size_t>(field_of[kStep])].second},
                    fmt::format("op of rank {} in step {} after its step {} (line {}): ops out of "
                                "step order (list each rank's steps in increasing order)",
                                op.rank, op.step, last->second.first, last->second.second));
        continue;
      }
      last->second = {op.step, line_no};
    }
    t.ops.push_back(op);
  }
  if (diags.empty() && header.empty()) {
    diags.error(SourceLoc{file, 1, 1},
                "empty timeline: expected a header rank,step,optype,start_ts,duration,...");
  } else if (diags.empty() && t.ops.empty()) {
    diags.error(SourceLoc{file, line_no, 1}, "no ops after the header");
  }
  diags.throw_if_any();
  return t;
}

}  // namespace prismsim
