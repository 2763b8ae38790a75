#pragma once

#include <sys/types.h>

#include <cstddef>

namespace prismsim {

/// Ctrl-C (SIGINT) for a process that forks workers. While a guard lives, SIGINT sets a flag and
/// kills every watched child with SIGKILL (its whole process group too when it leads one); the
/// previous handler comes back when the guard ends, also when an exception ends it. One guard at
/// a time per process; a forked child that makes its own guard starts with an empty watch list.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  /// Whether SIGINT came since the guard was made.
  bool interrupted() const;
  /// Watches a forked child (at most 1,024 at once), killing it at once when SIGINT already
  /// came; returns its slot for forget().
  size_t watch(pid_t pid, bool process_group);
  void forget(size_t slot);
};

/// Writes all `size` bytes (retrying interrupted writes); false when the pipe is gone.
bool write_all(int fd, const void* data, size_t size);
/// Reads exactly `size` bytes; false at the end of the stream or on error.
bool read_all(int fd, void* data, size_t size);

}  // namespace prismsim
