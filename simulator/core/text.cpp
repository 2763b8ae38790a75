#include "core/text.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
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
  if (copy.empty() || end != copy.c_str() + copy.size()) return std::nullopt;
  // ERANGE also flags numbers below the normal range ("5e-324"), which are numbers all the same;
  // only an overflow (to +-HUGE_VAL) is refused.
  if (errno == ERANGE && std::abs(value) >= 1) return std::nullopt;
  return value;
}

bool is_whole_in(double x, double lo, double hi) {
  return x >= lo && x <= hi && x == std::floor(x);
}

std::string human_seconds(double s) {
  if (s >= 1.0 || s == 0.0) return fmt::format("{:.4g} s", s);
  if (s >= 1e-3) return fmt::format("{:.4g} ms", s * 1e3);
  return fmt::format("{:.4g} us", s * 1e6);
}

bool matches_name_pattern(std::string_view pattern, std::string_view name) {
  if (!pattern.empty() && pattern.back() == '*') {
    return name.starts_with(pattern.substr(0, pattern.size() - 1));
  }
  return name == pattern;
}

}  // namespace prismsim
