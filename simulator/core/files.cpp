#include "core/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace prismsim {
namespace {

/// Why a file of this mode is not read, or "" for a regular file.
std::string kind_problem(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "it is a directory";
  if (S_ISFIFO(mode)) return "it is a FIFO, not a regular file";
  if (S_ISCHR(mode)) return "it is a character device, not a regular file";
  if (S_ISBLK(mode)) return "it is a block device, not a regular file";
  if (S_ISSOCK(mode)) return "it is a socket, not a regular file";
  return "it is not a regular file";
}

/// Closes a descriptor when it goes out of scope.
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

/// The log read_file appends to, if one is alive.
ReadFileLog* active_read_log = nullptr;

}  // namespace

std::optional<std::string> regular_file_problem(const std::string& path) {
  if (path.find('\0') != std::string::npos) return "its name holds a NUL character";
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return std::strerror(errno);
  if (std::string problem = kind_problem(info.st_mode); !problem.empty()) return problem;
  if (::access(path.c_str(), R_OK) != 0) return std::strerror(errno);
  return std::nullopt;
}

std::optional<std::string> read_file(const std::string& path, std::string* reason,
                                     uint64_t max_bytes) {
  if (auto problem = regular_file_problem(path)) {
    *reason = std::move(*problem);
    return std::nullopt;
  }
  // Checked again on what was opened: the path may name something else by now.
  FileDescriptor file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  struct stat info {};
  if (file.fd < 0 || ::fstat(file.fd, &info) != 0) {
    *reason = std::strerror(errno);
    return std::nullopt;
  }
  if (std::string problem = kind_problem(info.st_mode); !problem.empty()) {
    *reason = std::move(problem);
    return std::nullopt;
  }
  const auto too_large = [&](uint64_t bytes) {
    *reason = fmt::format("it is {} bytes, more than the {} bytes allowed", bytes, max_bytes);
  };
  const auto size = static_cast<uint64_t>(info.st_size);
  if (size > max_bytes) {
    too_large(size);
    return std::nullopt;
  }
  // Sized once (traces are hundreds of MB); then whatever the size did not announce (a file that
  // grew meanwhile, or one of /proc that says 0).
  std::string text(static_cast<size_t>(size), '\0');
  size_t done = 0;
  const auto read_some = [&](char* into, size_t bytes) -> ssize_t {
    while (true) {
      const ssize_t got = ::read(file.fd, into, bytes);
      if (got >= 0 || errno != EINTR) return got;
    }
  };
  while (done < text.size()) {
    const ssize_t got = read_some(text.data() + done, text.size() - done);
    if (got < 0) {
      *reason = std::strerror(errno);
      return std::nullopt;
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  text.resize(done);
  char buffer[1 << 16];
  while (true) {
    const ssize_t got = read_some(buffer, sizeof buffer);
    if (got < 0) {
      *reason = std::strerror(errno);
      return std::nullopt;
    }
    if (got == 0) break;
    if (text.size() + static_cast<uint64_t>(got) > max_bytes) {
      too_large(text.size() + static_cast<uint64_t>(got));
      return std::nullopt;
    }
    text.append(buffer, static_cast<size_t>(got));
  }
  if (active_read_log != nullptr) active_read_log->files_.emplace_back(path, text);
  return text;
}

ReadFileLog::ReadFileLog() { active_read_log = this; }
ReadFileLog::~ReadFileLog() { active_read_log = nullptr; }

AtomicFile::AtomicFile(std::filesystem::path path) : path_(std::move(path)) {
  static std::atomic<int> counter{0};  // several files of one process may share a directory
  temporary_ = path_.parent_path() /
               fmt::format(".{}.tmp-{}-{}", path_.filename().string(), ::getpid(), counter++);
  out_.open(temporary_, std::ios::binary | std::ios::trunc);
  if (!out_) throw std::runtime_error(fmt::format("cannot write '{}'", path_.string()));
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  out_.close();
  std::error_code ec;
  std::filesystem::remove(temporary_, ec);
}

void AtomicFile::commit() {
  out_.close();
  bool ok = !out_.fail();
  if (ok) {
    // The data reaches the disk before the name does: after a crash, the old file or the new.
    const FileDescriptor file{::open(temporary_.c_str(), O_RDONLY | O_CLOEXEC)};
    ok = file.fd >= 0 && ::fsync(file.fd) == 0;
  }
  if (ok) ok = std::rename(temporary_.c_str(), path_.c_str()) == 0;
  if (!ok) {
    const std::string reason = std::strerror(errno);
    std::error_code ec;
    std::filesystem::remove(temporary_, ec);
    committed_ = true;
    throw std::runtime_error(fmt::format("cannot write '{}': {}", path_.string(), reason));
  }
  committed_ = true;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  AtomicFile file(path);
  file.stream() << text;
  file.commit();
}

std::string quoted_path(const std::string& path) {
  std::string shown;  // control characters (a NUL among them) as \xNN
  for (const char c :
       path.size() <= 120 ? path : path.substr(0, 50) + "..." + path.substr(path.size() - 50)) {
    if (static_cast<unsigned char>(c) < 0x20) {
      shown += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    } else {
      shown += c;
    }
  }
  if (path.size() <= 120) return fmt::format("'{}'", shown);
  return fmt::format("'{}' ({} characters)", shown, path.size());
}

}  // namespace prismsim
