#include "nccl_log.hpp"

#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/diagnostics.hpp"
#include "core/files.hpp"
#include "core/text.hpp"

namespace prismsim {
namespace {

/// Drops an MPI launcher's tag ("[1,0]<stdout>:") from the start of a line.
std::string strip_mpi_tag(const std::string& line) {
  if (line.empty() || line[0] != '[') return line;
  const size_t tag_end = line.find(">:");
  return tag_end == std::string::npos ? line : line.substr(tag_end + 2);
}

/// `text` as a number into `value`, if it is one.
bool read_number(const std::string& text, double* value) {
  const auto number = parse_number(text);
  if (number) *value = *number;
  return number.has_value();
}

/// The whole of file `path` (a diagnostic at `file` when it cannot be read).
std::string read_or_throw(const std::string& path, const std::shared_ptr<const std::string>& file) {
  std::string reason;
  auto text = read_file(path, &reason);
  if (!text) {
    Diagnostics diags;
    diags.error(SourceLoc{file, 1, 1}, fmt::format("cannot read '{}': {}", path, reason));
    diags.throw_if_any();
  }
  return std::move(*text);
}

}  // namespace

NcclLog read_nccl_log(const std::string& path) {
  const auto file = std::make_shared<const std::string>(path);
  std::istringstream in(read_or_throw(path, file));
  NcclLog log;
  log.path = path;
  Diagnostics diags;
  std::set<std::string> hosts;
  int time_column = 4;  // size count type redop time ... unless the header says otherwise
  int in_place_column = time_column + 4;  // after time algbw busbw #wrong
  std::string raw;
  for (int line_no = 1; std::getline(in, raw); ++line_no) {
    const std::string line = strip_mpi_tag(raw);
    const auto fields = split_fields(line, ' ');
    if (fields.empty()) continue;
    if (fields[0] == "#") {
      if (fields.size() > 2 && fields[1] == "Rank") {
        ++log.ranks;
        for (size_t i = 2; i + 1 < fields.size(); ++i) {
          if (fields[i] == "on") hosts.insert(fields[i + 1]);
        }
      }
      if (fields.size() > 1 && fields[1] == "size") {
        // The first "time" is out-of-place; a second one, in-place.
        std::vector<int> times;
        for (size_t i = 1; i < fields.size(); ++i) {
          if (fields[i] == "time") times.push_back(static_cast<int>(i) - 1);
        }
        if (!times.empty()) time_column = times[0];
        in_place_column = times.size() > 1 ? times[1] : time_column + 4;
      }
      continue;
    }
    if (fields[0][0] == '#') continue;
    const int column = static_cast<int>(line.find(fields[0]) + 1 + (raw.size() - line.size()));
    NcclMeasurement m;
    if (static_cast<int>(fields.size()) < time_column + 3 || !read_number(fields[0], &m.bytes) ||
        !read_number(fields[static_cast<size_t>(time_column)], &m.time_s) ||
        !read_number(fields[static_cast<size_t>(time_column) + 2], &m.busbw_GBps) ||
        m.bytes <= 0 || m.time_s <= 0) {
      diags.error(SourceLoc{file, line_no, column},
                  "expected an nccl-tests row: size count type redop time algbw busbw ... with "
                  "positive size and time");
      continue;
    }
    m.time_s *= 1e-6;
    const auto in_place = static_cast<size_t>(in_place_column);
    if (fields.size() > in_place && read_number(fields[in_place], &m.in_place_time_s) &&
        m.in_place_time_s > 0) {
      m.in_place_time_s *= 1e-6;
    } else {
      m.in_place_time_s = 0;
    }
    log.points.push_back(m);
  }
  log.nodes = static_cast<int>(hosts.size());
  if (log.ranks == 0) log.ranks = 1;
  if (log.nodes == 0) log.nodes = 1;
  if (log.points.empty() && diags.empty()) {
    diags.error(SourceLoc{file, 1, 1}, "no measurements found (expected nccl-tests output)");
  }
  diags.throw_if_any();
  return log;
}

NcclLog read_vtrain_allreduce_csv(const std::string& path, int ranks) {
  const auto file = std::make_shared<const std::string>(path);
  std::istringstream in(read_or_throw(path, file));
  NcclLog log;
  log.path = path;
  log.ranks = ranks;
  log.nodes = 1;
  Diagnostics diags;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line_no == 1 || line.empty()) continue;  // header
    const auto fields = split_fields(line, ',');
    NcclMeasurement m;
    if (fields.size() < 5 || !read_number(fields[0], &m.bytes) ||
        !read_number(fields[3], &m.time_s) || !read_number(fields[4], &m.busbw_GBps) ||
        m.bytes <= 0 || m.time_s <= 0) {
      diags.error(SourceLoc{file, line_no, 1},
                  "expected size(B),count,type,time(ns),busbw(GB/s),... with positive size and time");
      continue;
    }
    m.time_s *= 1e-9;
    log.points.push_back(m);
  }
  if (log.points.empty() && diags.empty()) diags.error(SourceLoc{file, 1, 1}, "no measurements found");
  diags.throw_if_any();
  return log;
}

}  // namespace prismsim
