#include "nccl_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "core/diagnostics.hpp"
#include "core/files.hpp"
#include "core/text.hpp"

namespace prismsim {
namespace {

/// The most GPUs a measured row may name (a count, not a limit of any real system).
constexpr double kMaxGpus = 1e7;

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
  return parse_nccl_log(read_or_throw(path, file), path);
}

NcclLog parse_nccl_log(const std::string& text, const std::string& path) {
  const auto file = std::make_shared<const std::string>(path);
  std::istringstream in(text);
  NcclLog log;
  log.path = path;
  log.op = op_from_file_name(path, CollectiveOp::all_reduce);
  Diagnostics diags;
  std::set<std::string> hosts;
  // Data columns, from the header (size count type redop time ... unless it says otherwise).
  int count_column = 1, type_column = 2, redop_column = 3, root_column = -1;
  int time_column = 4;
  int in_place_column = time_column + 4;  // after time algbw busbw #wrong
  bool has_wrong = true;
  std::string raw;
  for (int line_no = 1; std::getline(in, raw); ++line_no) {
    const std::string line = strip_mpi_tag(raw);
    const auto fields = split_fields(line, ' ');
    if (fields.empty()) continue;
    if (fields[0] == "#") {
      if (fields.size() > 1 && fields[1] == "nThread") {
        for (size_t i = 2; i + 1 < fields.size(); ++i) {
          double iters = 0;
          if (fields[i] == "iters:" && fields[i - 1] != "warmup" && fields[i - 1] != "agg" &&
              read_number(fields[i + 1], &iters) && is_whole_in(iters, 1, 1e9)) {
            log.iterations = static_cast<int>(iters);
          }
        }
      }
      if (fields.size() > 2 && fields[1] == "Rank") {
        ++log.ranks;
        std::string host;
        for (size_t i = 2; i + 1 < fields.size(); ++i) {
          if (fields[i] == "on") host = fields[i + 1];
        }
        hosts.insert(host);
        log.rank_hosts.push_back(host);
      }
      if (fields.size() > 1 && fields[1] == "size") {
        // Header field i + 1 names data column i. The first "time" is out-of-place; a second one,
        // in-place.
        std::vector<int> times;
        count_column = type_column = redop_column = root_column = -1;
        for (size_t i = 1; i < fields.size(); ++i) {
          const int column = static_cast<int>(i) - 1;
          if (fields[i] == "time" || fields[i] == "cputime") times.push_back(column);
          if (fields[i] == "count") count_column = column;
          if (fields[i] == "type") type_column = column;
          if (fields[i] == "redop") redop_column = column;
          if (fields[i] == "root") root_column = column;
        }
        if (!times.empty()) time_column = times[0];
        const size_t wrong_field = static_cast<size_t>(time_column) + 4;
        has_wrong = wrong_field < fields.size() &&
                    (fields[wrong_field] == "#wrong" || fields[wrong_field] == "error");
        in_place_column = times.size() > 1 ? times[1] : time_column + (has_wrong ? 4 : 3);
      }
      if (fields.size() > 5 && fields[1] == "Avg" && fields[2] == "bus" && fields[4] == ":") {
        read_number(fields[5], &log.avg_busbw_GBps);
      }
      continue;
    }
    if (fields[0][0] == '#') continue;
    const int column = static_cast<int>(line.find(fields[0]) + 1 + (raw.size() - line.size()));
    NcclMeasurement m;
    const auto field = [&](int i) -> std::string {
      return i >= 0 && static_cast<size_t>(i) < fields.size() ? fields[static_cast<size_t>(i)] : "";
    };
    if (static_cast<int>(fields.size()) < time_column + 3 || !read_number(fields[0], &m.bytes) ||
        !read_number(field(time_column), &m.out_of_place.time_s) ||
        !read_number(field(time_column + 1), &m.out_of_place.algbw_GBps) ||
        !read_number(field(time_column + 2), &m.out_of_place.busbw_GBps) || m.bytes < 0 ||
        m.out_of_place.time_s <= 0) {
      diags.error(SourceLoc{file, line_no, column},
                  "expected an nccl-tests row: size count type redop time algbw busbw ... with "
                  "positive size and time");
      continue;
    }
    if (m.bytes == 0) continue;  // nccl-tests' 0-byte row times an empty launch
    double count = 0;
    if (read_number(field(count_column), &count)) {
      if (!is_whole_in(count, 0, 9e15)) {
        diags.error(SourceLoc{file, line_no, column},
                    "the count column must hold a whole number of elements");
        continue;
      }
      m.count = static_cast<int64_t>(count);
    }
    m.type = field(type_column);
    m.redop = field(redop_column);
    m.root = field(root_column);
    m.out_of_place.time_s *= 1e-6;
    if (has_wrong) m.out_of_place.wrong = field(time_column + 3);
    NcclResult& ip = m.in_place;
    if (read_number(field(in_place_column), &ip.time_s) && ip.time_s > 0) {
      ip.time_s *= 1e-6;
      read_number(field(in_place_column + 1), &ip.algbw_GBps);
      read_number(field(in_place_column + 2), &ip.busbw_GBps);
      if (has_wrong) ip.wrong = field(in_place_column + 3);
    } else {
      ip = NcclResult{};
    }
    m.time_s = m.out_of_place.time_s;
    m.in_place_time_s = ip.time_s;
    m.busbw_GBps = m.out_of_place.busbw_GBps;
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

CollectiveOp op_from_file_name(const std::string& path, CollectiveOp fallback) {
  const std::string name = std::filesystem::path(path).filename().string();
  // Longest names first: "reduce_scatter" before "reduce".
  std::vector<std::string> names = collective_op_names();
  std::sort(names.begin(), names.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const std::string& op : names) {
    if (name.rfind(op, 0) == 0) return *parse_collective_op(op);
  }
  if (name.rfind("sendrecv", 0) == 0) return CollectiveOp::send_recv;
  if (name.rfind("alltoall", 0) == 0) return CollectiveOp::all_to_all;
  return fallback;
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
      diags.error(
          SourceLoc{file, line_no, 1},
          "expected size(B),count,type,time(ns),busbw(GB/s),... with positive size and time");
      continue;
    }
    m.time_s *= 1e-9;
    m.out_of_place = {m.time_s, m.bytes / m.time_s / 1e9, m.busbw_GBps, ""};
    log.points.push_back(m);
  }
  if (log.points.empty() && diags.empty())
    diags.error(SourceLoc{file, 1, 1}, "no measurements found");
  diags.throw_if_any();
  return log;
}

}  // namespace prismsim

namespace prismsim {

std::vector<NcclLog> read_busbw_table(const std::string& path,
                                      const std::vector<std::string>& filters, CollectiveOp op) {
  const auto file = std::make_shared<const std::string>(path);
  std::istringstream in(read_or_throw(path, file));
  Diagnostics diags;
  std::map<std::string, std::string> where;  // column -> required value
  double fixed_size = 0, fixed_gpus = 0;
  std::string busbw_name = "busbw_GBps";
  for (const std::string& filter : filters) {
    const size_t eq = filter.find('=');
    if (eq == std::string::npos || eq == 0) {
      diags.error(
          SourceLoc{file, 1, 1},
          fmt::format("filter '{}' is not KEY=VALUE (a column, size, busbw or gpus)", filter));
      continue;
    }
    const std::string key = filter.substr(0, eq), value = filter.substr(eq + 1);
    if (key == "size" || key == "gpus") {
      double& target = key == "size" ? fixed_size : fixed_gpus;
      if (!read_number(value, &target) || target <= 0) {
        diags.error(SourceLoc{file, 1, 1},
                    fmt::format("filter '{}': {} must be a positive number", filter, key));
      }
    } else if (key == "busbw") {
      busbw_name = value;
    } else {
      where[key] = value;
    }
  }
  diags.throw_if_any();
  std::string line;
  std::getline(in, line);
  const auto header = split_fields(line, ',');
  const auto column = [&](std::initializer_list<const char*> names) {
    for (const char* name : names) {
      const auto it = std::find(header.begin(), header.end(), name);
      if (it != header.end()) return static_cast<int>(it - header.begin());
    }
    return -1;
  };
  const int size_column = column({"size_bytes", "size_bytes_approx", "payload_bytes"});
  const int busbw_column = column({busbw_name.c_str()});
  const int gpus_column = column({"gpus"});
  if (busbw_column < 0) {
    diags.error(SourceLoc{file, 1, 1}, fmt::format("no column '{}' in the header", busbw_name));
  }
  if (size_column < 0 && fixed_size == 0) {
    diags.error(SourceLoc{file, 1, 1},
                "no size column (size_bytes, size_bytes_approx, payload_bytes): give size=BYTES");
  }
  if (gpus_column < 0 && fixed_gpus == 0) {
    diags.error(SourceLoc{file, 1, 1}, "no gpus column: give gpus=N");
  }
  std::map<std::string, int> filter_columns;
  for (const auto& [key, value] : where) {
    const int c = column({key.c_str()});
    if (c < 0) diags.error(SourceLoc{file, 1, 1}, fmt::format("no column '{}' to filter on", key));
    filter_columns[key] = c;
  }
  diags.throw_if_any();
  std::vector<NcclLog> logs;
  std::string label;
  for (const std::string& f : filters) label += "@" + f;
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    const auto fields = split_fields(line, ',');
    const auto at = [&](int c) {
      return static_cast<size_t>(c) < fields.size() ? fields[static_cast<size_t>(c)] : "";
    };
    bool keep = true;
    for (const auto& [key, value] : where) keep = keep && at(filter_columns[key]) == value;
    if (!keep) continue;
    NcclMeasurement m;
    double gpus = fixed_gpus;
    m.bytes = fixed_size;
    if ((size_column >= 0 && !read_number(at(size_column), &m.bytes)) ||
        !read_number(at(busbw_column), &m.busbw_GBps) ||
        (gpus_column >= 0 && !read_number(at(gpus_column), &gpus)) || m.bytes <= 0 ||
        m.busbw_GBps <= 0 || !is_whole_in(gpus, 1, kMaxGpus)) {
      diags.error(SourceLoc{file, line_no, 1},
                  "expected a positive size, bus bandwidth and whole GPU count in this row");
      continue;
    }
    const int ranks = static_cast<int>(gpus);
    const double factor = ranks > 1 ? bus_factor(op, ranks) : 1.0;
    m.time_s = m.bytes * factor / (m.busbw_GBps * 1e9);
    m.out_of_place = {m.time_s, m.busbw_GBps / factor, m.busbw_GBps, ""};
    auto log =
        std::find_if(logs.begin(), logs.end(), [&](const NcclLog& l) { return l.ranks == ranks; });
    if (log == logs.end()) {
      NcclLog fresh;
      fresh.path = fmt::format("{}{} ({} GPUs)", path, label, ranks);
      fresh.ranks = ranks;
      fresh.nodes = 1;
      fresh.op = op;
      logs.push_back(fresh);
      log = logs.end() - 1;
    }
    log->points.push_back(m);
  }
  if (logs.empty() && diags.empty()) {
    diags.error(SourceLoc{file, 1, 1}, "no rows match the filters");
  }
  diags.throw_if_any();
  return logs;
}

}  // namespace prismsim
