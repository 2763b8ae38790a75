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
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(fmt::format("cannot write '{}'", path.string()));
}

}  // namespace prismsim
