#include "core/text.hpp"

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace prismsim {

std::vector<std::string> split_fields(std::string_view line, char separator) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string> fields;
  if (separator == ' ') {
    std::istringstream in{std::string(line)};
    for (std::string field; in >> field;) fields.push_back(field);
    return fields;
  }
  if (line.empty()) return fields;
  size_t start = 0;
  while (true) {
    const size_t end = line.find(separator, start);
    fields.emplace_back(line.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return fields;
    start = end + 1;
  }
}

std::optional<double> parse_number(std::string_view text) {
  const std::string copy(text);  // strtod needs a terminated string
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size() || errno != 0) return std::nullopt;
  return value;
}

}  // namespace prismsim
