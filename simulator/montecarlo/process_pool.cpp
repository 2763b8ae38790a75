#include "montecarlo/process_pool.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <vector>

namespace prismsim {
namespace {

// The signal handler can only touch these: it kills the watched children (kill is
// async-signal-safe); the parent then reads what they wrote.
constexpr size_t kMaxChildren = 1024;  // --jobs is at most 1024
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
volatile std::sig_atomic_t stop_signal = 0;
volatile std::sig_atomic_t child_pids[kMaxChildren] = {};
volatile std::sig_atomic_t child_leads_group[kMaxChildren] = {};
struct sigaction previous_actions[std::size(kStopSignals)] = {};

void kill_child(size_t slot) {
  const pid_t pid = static_cast<pid_t>(child_pids[slot]);
  if (child_leads_group[slot]) ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

void on_stop_signal(int signal) {
  if (stop_signal == 0) stop_signal = signal;
  for (size_t i = 0; i < kMaxChildren; ++i) {
    if (child_pids[i] > 0) kill_child(i);
  }
}

std::runtime_error system_error(const char* what) {
  return std::runtime_error(std::string(what) + ": " + std::strerror(errno));
}

struct Running {
  int task = 0;
  pid_t pid = -1;
  int fd = -1;
  size_t slot = 0;  ///< in the stop guard
  std::string bytes;
};

/// In the child: becomes a worker that dies with `parent`, runs the task, exits. Never returns.
[[noreturn]] void child_main(int task, int fd, pid_t parent, const PoolOptions& options,
                             const std::vector<Running>& running,
                             const std::function<int(int, int)>& work) {
  if (options.process_groups) ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);  // the parent died before prctl took effect
  for (int signal : kStopSignals) ::signal(signal, SIG_DFL);
  for (const Running& other : running) ::close(other.fd);
  int status = 1;
  try {
    status = work(task, fd);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prismsim: error: %s\n", e.what());
  }
  std::fflush(stdout);
  std::fflush(stderr);
  ::close(fd);
  ::_exit(status);
}

}  // namespace

StopGuard::StopGuard() {
  stop_signal = 0;
  for (size_t i = 0; i < kMaxChildren; ++i) child_pids[i] = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    ::sigaction(kStopSignals[i], &action, &previous_actions[i]);
  }
}

StopGuard::~StopGuard() {
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    ::sigaction(kStopSignals[i], &previous_actions[i], nullptr);
  }
}

int StopGuard::signal() const { return stop_signal; }

size_t StopGuard::watch(pid_t pid, bool process_group) {
  size_t slot = 0;
  while (slot < kMaxChildren && child_pids[slot] != 0) ++slot;
  if (slot == kMaxChildren) throw std::logic_error("more than 1,024 children watched");
  child_leads_group[slot] = process_group;
  child_pids[slot] = pid;
  if (stop_signal != 0) kill_child(slot);  // the signal came while forking
  return slot;
}

void StopGuard::forget(size_t slot) { child_pids[slot] = 0; }

bool write_all(int fd, const void* data, size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

int run_tasks(int count, const PoolOptions& options, const std::function<int(int, int)>& work,
              const std::function<void(int, TaskResult)>& done) {
  const int jobs = std::max(1, options.jobs);
  std::vector<Running> running;
  std::fflush(stdout);
  std::fflush(stderr);
  StopGuard guard;
  int next = 0;
  while ((next < count && !guard.stopped()) || !running.empty()) {
    if (next < count && !guard.stopped() && static_cast<int>(running.size()) < jobs) {
      int fds[2];
      if (::pipe(fds) != 0) throw system_error("pipe");
      const pid_t parent = ::getpid();
      const pid_t pid = ::fork();
      if (pid < 0) throw system_error("fork");
      if (pid == 0) {
        ::close(fds[0]);
        child_main(next, fds[1], parent, options, running, work);
      }
      // Also here: the group exists before anyone signals it.
      if (options.process_groups) ::setpgid(pid, pid);
      ::close(fds[1]);
      running.push_back({next, pid, fds[0], guard.watch(pid, options.process_groups), {}});
      ++next;
      continue;
    }
    std::vector<pollfd> fds;
    for (const Running& r : running) fds.push_back({r.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw system_error("poll");
    }
    for (size_t i = running.size(); i-- > 0;) {
      if (fds[i].revents == 0) continue;
      Running& r = running[i];
      char buffer[65536];
      const ssize_t got = ::read(r.fd, buffer, sizeof buffer);
      if (got > 0) {
        r.bytes.append(buffer, static_cast<size_t>(got));
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      // The pipe's end: the child exited or was killed.
      ::close(r.fd);
      TaskResult result{std::move(r.bytes), 0};
      if (options.process_groups) {
        // The leader is a zombie until reaped, so its group id cannot be reused yet: end what is
        // left of its group (the workers of a child that died).
        siginfo_t info{};
        while (::waitid(P_PID, static_cast<id_t>(r.pid), &info, WEXITED | WNOWAIT) < 0 &&
               errno == EINTR) {
        }
        ::kill(-r.pid, SIGKILL);
      }
      guard.forget(r.slot);
      while (::waitpid(r.pid, &result.wait_status, 0) < 0 && errno == EINTR) {
      }
      const int task = r.task;
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      done(task, std::move(result));
    }
  }
  return guard.signal();
}

}  // namespace prismsim
