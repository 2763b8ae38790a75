#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>

namespace prismsim {

/// Exit status of a command stopped by `signal`: 128 + its number, as shells report it (130 for
/// SIGINT, 143 for SIGTERM, 129 for SIGHUP).
constexpr int exit_status_for_signal(int signal) { return 128 + signal; }

/// The stop signals (SIGINT: Ctrl-C; SIGTERM: kill, timeout, Slurm's time limit and scancel;
/// SIGHUP: a closed terminal) for a process that forks workers. While a guard lives, a stop
/// signal is recorded and kills every watched child with SIGKILL (its whole process group too
/// when it leads one); the previous handlers come back when the guard ends, also when an
/// exception ends it. One guard at a time per process; a forked child that makes its own guard
/// starts with an empty watch list.
class StopGuard {
 public:
  StopGuard();
  ~StopGuard();
  StopGuard(const StopGuard&) = delete;
  StopGuard& operator=(const StopGuard&) = delete;

  /// The first stop signal that came since the guard was made, or 0.
  int signal() const;
  bool stopped() const { return signal() != 0; }
  /// Watches a forked child (at most 1,024 at once), killing it at once when a stop signal already
  /// came; returns its slot for forget().
  size_t watch(pid_t pid, bool process_group);
  void forget(size_t slot);
};

/// What one task's process left: every byte it wrote to its pipe (also when it died early) and
/// its wait status (as waitpid reports it).
struct TaskResult {
  std::string bytes;
  int wait_status = 0;
};

struct PoolOptions {
  int jobs = 1;  ///< tasks at once
  /// Each child leads its own process group, so that ending the group also ends the workers it
  /// forks itself (a sweep point running its replications).
  bool process_groups = false;
};

/// Runs tasks 0 .. count-1, each in a child process forked from this one, at most
/// `options.jobs` at a time, in task order. In the child, `work(task, fd)` writes its results to
/// `fd` and returns the child's exit status (the child then exits without running destructors);
/// a child dies with its parent. In the parent, `done(task, result)` is called as each child ends,
/// in completion order. A stop signal ends it early: no task starts any more, the running ones are
/// killed (`done` still gets what they wrote) and tasks never started get no call. Returns the stop
/// signal, or 0 when every task ran. Throws std::runtime_error when a pipe or fork fails.
int run_tasks(int count, const PoolOptions& options, const std::function<int(int, int)>& work,
              const std::function<void(int, TaskResult)>& done);

/// Writes all `size` bytes (retrying interrupted writes); false when the pipe is gone.
bool write_all(int fd, const void* data, size_t size);

/// Bytes of trivially copyable values and strings, as a child sends them to its parent (same
/// machine, same binary: no byte-order or layout concerns).
class RecordWriter {
 public:
  template <typename T>
  RecordWriter& put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof value);
    return *this;
  }
  RecordWriter& put_bytes(const void* data, size_t size) {
    bytes_.append(static_cast<const char*>(data), size);
    return *this;
  }
  RecordWriter& put_string(std::string_view text) {
    put(static_cast<uint64_t>(text.size()));
    bytes_ += text;
    return *this;
  }
  const std::string& bytes() const { return bytes_; }
  /// Sends the bytes to `fd` and forgets them; false when the pipe is gone.
  bool send(int fd) {
    const bool sent = write_all(fd, bytes_.data(), bytes_.size());
    bytes_.clear();
    return sent;
  }

 private:
  std::string bytes_;
};

/// Reads what a RecordWriter wrote; every get is false once the bytes run out (a child that died
/// mid-record).
class RecordReader {
 public:
  explicit RecordReader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  bool get(T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    return get_bytes(&value, sizeof value);
  }
  bool get_bytes(void* data, size_t size) {
    if (bytes_.size() - at_ < size) return false;
    std::memcpy(data, bytes_.data() + at_, size);
    at_ += size;
    return true;
  }
  bool get_string(std::string& text) {
    uint64_t size = 0;
    if (!get(size) || bytes_.size() - at_ < size) return false;
    text.assign(bytes_.substr(at_, size));
    at_ += size;
    return true;
  }
  bool at_end() const { return at_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  size_t at_ = 0;
};

}  // namespace prismsim
