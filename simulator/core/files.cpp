#include "core/files.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace prismsim {

std::optional<std::string> read_file(const std::string& path, std::string* reason) {
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path)) {
    *reason = std::filesystem::is_directory(path) ? "it is a directory" : std::strerror(errno);
    return std::nullopt;
  }
  // Sized once (traces are hundreds of MB); a stream that cannot seek is read as it comes.
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) {
    in.clear();
    std::ostringstream text;
    text << in.rdbuf();
    return std::move(text).str();
  }
  std::string text(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(text.data(), static_cast<std::streamsize>(size));
  return text;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(fmt::format("cannot write '{}'", path.string()));
}

}  // namespace prismsim
