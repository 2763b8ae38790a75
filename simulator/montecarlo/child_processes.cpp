#include "montecarlo/child_processes.hpp"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <stdexcept>

namespace prismsim {
namespace {

// The signal handler can only touch these: it kills the watched children (kill is
// async-signal-safe); the parent then reads what they streamed.
constexpr size_t kMaxChildren = 1024;  // --jobs is at most 1024
volatile std::sig_atomic_t interrupt_requested = 0;
volatile std::sig_atomic_t child_pids[kMaxChildren] = {};
volatile std::sig_atomic_t child_leads_group[kMaxChildren] = {};
struct sigaction previous_action {};

void kill_child(size_t slot) {
  const pid_t pid = static_cast<pid_t>(child_pids[slot]);
  if (child_leads_group[slot]) ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

void on_interrupt(int) {
  interrupt_requested = 1;
  for (size_t i = 0; i < kMaxChildren; ++i) {
    if (child_pids[i] > 0) kill_child(i);
  }
}

}  // namespace

InterruptGuard::InterruptGuard() {
  interrupt_requested = 0;
  for (size_t i = 0; i < kMaxChildren; ++i) child_pids[i] = 0;
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &previous_action);
}

InterruptGuard::~InterruptGuard() { ::sigaction(SIGINT, &previous_action, nullptr); }

bool InterruptGuard::interrupted() const { return interrupt_requested != 0; }

size_t InterruptGuard::watch(pid_t pid, bool process_group) {
  size_t slot = 0;
  while (slot < kMaxChildren && child_pids[slot] != 0) ++slot;
  if (slot == kMaxChildren) throw std::logic_error("more than 1,024 children watched");
  child_leads_group[slot] = process_group;
  child_pids[slot] = pid;
  if (interrupt_requested) kill_child(slot);  // the signal came while forking
  return slot;
}

void InterruptGuard::forget(size_t slot) { child_pids[slot] = 0; }

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

bool read_all(int fd, void* data, size_t size) {
  auto* bytes = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::read(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace prismsim
