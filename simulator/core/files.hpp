#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace prismsim {

/// The whole of file `path`; nothing when it cannot be read, with why in `reason` ("it is a
/// directory", or the system's message).
std::optional<std::string> read_file(const std::string& path, std::string* reason);

/// Writes `text` to `path`, replacing it; throws std::runtime_error "cannot write 'PATH'".
void write_file(const std::filesystem::path& path, const std::string& text);

}  // namespace prismsim
