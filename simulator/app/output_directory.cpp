#include "app/output_directory.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <stdexcept>
#include <system_error>

#include "app/cli_errors.hpp"
#include "core/files.hpp"

namespace prismsim {
namespace {

namespace fs = std::filesystem;

/// The names prismsim gives the files of a study's directory (and of a sweep point's).
const char* const kOwnFiles[] = {"summary.json", "runs.csv",   "breakdown.csv",     "training.csv",
                                 "sweep.csv",    "sweep.json", "partial-result.txt"};

void remove_file(const fs::path& path) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec)) || fs::is_regular_file(path, ec)) {
    fs::remove(path, ec);
    if (ec) {
      throw std::runtime_error(
          fmt::format("cannot remove '{}' of an earlier study: {}", path.string(), ec.message()));
    }
  }
}

/// Removes `dir` when it is an empty directory.
void remove_if_empty(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec) && fs::is_empty(dir, ec)) fs::remove(dir, ec);
}

}  // namespace

void remove_kineto_files(const fs::path& dir) {
  static const std::regex rank_file(R"(rank[0-9]+\.pt\.trace\.json)");
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (std::regex_match(entry.path().filename().string(), rank_file))
      files.push_back(entry.path());
  }
  for (const fs::path& file : files) remove_file(file);
}

namespace {

/// `relative` when it names a path inside a directory (no "..", not absolute), else empty.
bool inside(const fs::path& relative) {
  if (relative.empty() || relative.is_absolute()) return false;
  for (const fs::path& part : relative) {
    if (part == "..") return false;
  }
  return true;
}

}  // namespace

void make_writable_directory(const fs::path& dir, const std::string& shown) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || ::access(dir.c_str(), W_OK) != 0) {
    throw UsageError(fmt::format("cannot write to output directory '{}'", shown));
  }
}

void clear_previous_outputs(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  // The manifest's files first: traces, under any name.
  std::string reason;
  if (const auto manifest = read_file((dir / kOutputManifest).string(), &reason, 1 << 20)) {
    size_t start = 0;
    while (start < manifest->size()) {
      size_t end = manifest->find('\n', start);
      if (end == std::string::npos) end = manifest->size();
      const fs::path relative(manifest->substr(start, end - start));
      start = end + 1;
      if (!inside(relative)) continue;
      const fs::path path = dir / relative;
      if (fs::is_directory(path, ec)) {
        remove_kineto_files(path);
        remove_if_empty(path);
      } else {
        remove_file(path);
      }
    }
    remove_file(dir / kOutputManifest);
  }
  for (const char* name : kOwnFiles) remove_file(dir / name);
  // A sweep's points: points/NNN/ (however many the earlier sweep had).
  const fs::path points = dir / "points";
  if (fs::is_directory(points, ec)) {
    std::vector<fs::path> point_dirs;
    for (const auto& entry : fs::directory_iterator(points, ec)) {
      const std::string name = entry.path().filename().string();
      const bool numbered = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
      });
      if (numbered && entry.is_directory(ec)) point_dirs.push_back(entry.path());
    }
    for (const fs::path& point : point_dirs) {
      for (const char* name : kOwnFiles) remove_file(point / name);
      remove_if_empty(point);
    }
    remove_if_empty(points);
  }
}

void record_outputs(const fs::path& dir, const std::vector<std::string>& written) {
  std::string text;
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(dir, ec);
  for (const std::string& file : written) {
    const fs::path relative = fs::weakly_canonical(file, ec).lexically_relative(base);
    if (inside(relative)) text += relative.generic_string() + "\n";
  }
  write_file(dir / kOutputManifest, text);
}

}  // namespace prismsim
