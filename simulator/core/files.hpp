#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>

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

/// Writes `text` to `path`, replacing it; throws std::runtime_error "cannot write 'PATH'".
void write_file(const std::filesystem::path& path, const std::string& text);

/// `path` in single quotes for a message, control characters written \xNN; when longer than 120
/// characters, its first and last 50 around "...", then its length: 'aaaa...zzzz' (5000
/// characters).
std::string quoted_path(const std::string& path);

}  // namespace prismsim
