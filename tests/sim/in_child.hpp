#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <vector>

namespace prismsim::testing {

/// Runs `simulate` in a forked child (SimGrid runs one engine per process) and returns the numbers
/// it produced. The child exits without running destructors.
inline std::vector<double> in_child(const std::function<std::vector<double>()>& simulate) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    for (double value : simulate()) (void)!::write(fds[1], &value, sizeof value);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::vector<double> values;
  double value = 0;
  while (::read(fds[0], &value, sizeof value) == static_cast<ssize_t>(sizeof value)) {
    values.push_back(value);
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  return values;
}

}  // namespace prismsim::testing
