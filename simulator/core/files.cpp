#include "core/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

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
  return text;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(fmt::format("cannot write '{}'", path.string()));
}

std::string quoted_path(const std::string& path) {
  std::string shown;  // control characters (a NUL among them) as \xNN
  for (const char c : path.size() <= 120 ? path : path.substr(0, 50) + "..." +
                                                      path.substr(path.size() - 50)) {
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
