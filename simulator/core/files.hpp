#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace prismsim {

/// The largest YAML file prismsim reads (scenarios, platforms, workloads, variability, sweeps,
/// and the sample files they name): 16 MiB, far above any hand-written file.
constexpr uint64_t kMaxConfigFileBytes = uint64_t{16} << 20;

/// Why `path` cannot be read as a regular file, or nothing when it can be opened as one. The
/// reason is "it is a directory", "it is a FIFO, not a regular file" (likewise devices and
/// sockets, which are never opened), "its name holds a NUL character", or the system's message
/// ("No such file or directory", "File name too long").
std::optional<std::string> regular_file_problem(const std::string& path);

/// The whole of regular file `path`; nothing when it cannot be read, with why in `reason` (as
/// regular_file_problem says, or "it is N bytes, more than the M bytes allowed" when it is larger
/// than `max_bytes`). Never blocks: a FIFO or device is refused before it is opened, and the file
/// is opened non-blocking and checked again once open (it may have been replaced meanwhile).
std::optional<std::string> read_file(const std::string& path, std::string* reason,
                                     uint64_t max_bytes = std::numeric_limits<uint64_t>::max());

/// While alive, the files read_file reads whole (the scenario, sweep and every file they
/// include), in order: what a study's inputs are, for fingerprinting them. One at a time.
class ReadFileLog {
 public:
  ReadFileLog();
  ReadFileLog(const ReadFileLog&) = delete;
  ReadFileLog& operator=(const ReadFileLog&) = delete;
  ~ReadFileLog();
  /// (path as opened, contents) of each file read so far.
  const std::vector<std::pair<std::string, std::string>>& files() const { return files_; }

 private:
  friend std::optional<std::string> read_file(const std::string&, std::string*, uint64_t);
  std::vector<std::pair<std::string, std::string>> files_;
};

/// A file written whole or not at all: the text goes to a temporary file in the same directory
/// (".NAME.tmp-PID-N"), which commit() flushes to the disk (fsync) and renames over `path`, so a
/// reader never sees a truncated file, whatever kills the writer. Without commit() (an exception,
/// a signal before it) the temporary file is removed and `path` keeps its earlier content. Every
/// file prismsim writes goes through it (write_file for text held in memory).
class AtomicFile {
 public:
  /// Opens the temporary file; throws std::runtime_error "cannot write 'PATH'".
  explicit AtomicFile(std::filesystem::path path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// Removes the temporary file unless committed.
  ~AtomicFile();

  std::ostream& stream() { return out_; }
  /// Closes, syncs and renames the file into place; throws std::runtime_error "cannot write
  /// 'PATH'" (and removes the temporary file) when any of it fails.
  void commit();

 private:
  std::filesystem::path path_, temporary_;
  std::ofstream out_;
  bool committed_ = false;
};

/// Writes `text` to `path` atomically (AtomicFile), replacing it; throws std::runtime_error
/// "cannot write 'PATH'".
void write_file(const std::filesystem::path& path, const std::string& text);

/// `path` in single quotes for a message, control characters written \xNN; when longer than 120
/// characters, its first and last 50 around "...", then its length: 'aaaa...zzzz' (5000
/// characters).
std::string quoted_path(const std::string& path);

}  // namespace prismsim
