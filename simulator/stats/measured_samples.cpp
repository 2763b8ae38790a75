#include "stats/measured_samples.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <memory>

#include "core/diagnostics.hpp"
#include "core/text.hpp"

namespace prismsim {

std::vector<double> read_measured_samples(const std::string& path) {
  const auto file = std::make_shared<const std::string>(path);
  auto fail = [&](int line, int column, std::string message) {
    throw InputError({Diagnostic{SourceLoc{file, line, column}, std::move(message)}});
  };
  std::ifstream in(path);
  if (!in) fail(0, 0, "cannot read the measured samples");
  std::vector<double> values;
  std::string line;
  bool csv = false;
  size_t column = 0;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#' || line == "\r") continue;
    const auto cells = split_fields(line, ',');
    if (values.empty() && !csv && (cells.size() > 1 || !parse_number(cells[0]))) {
      // A CSV header: the step_time_s column, else the last.
      csv = true;
      column = cells.size() - 1;
      for (size_t i = 0; i < cells.size(); ++i) {
        if (cells[i] == "step_time_s") column = i;
      }
      continue;
    }
    if (column >= cells.size()) {
      fail(number, 1, fmt::format("expected {} columns, got {}", column + 1, cells.size()));
    }
    const std::string& cell = cells[column];
    size_t offset = 0;
    for (size_t i = 0; i < column; ++i) offset += cells[i].size() + 1;
    const auto value = parse_number(cell);
    if (!value || !(*value > 0) || std::isinf(*value)) {
      fail(number, static_cast<int>(offset) + 1,
           fmt::format("expected a positive step time in seconds, got '{}'", cell));
    }
    values.push_back(*value);
  }
  if (values.empty()) fail(0, 0, "no measured step times in the file");
  return values;
}

}  // namespace prismsim
