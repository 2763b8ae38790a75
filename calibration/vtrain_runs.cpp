#include "vtrain_runs.hpp"

#include <fmt/format.h>

#include <fstream>
#include <memory>

#include "core/diagnostics.hpp"
#include "core/text.hpp"

namespace prismsim {

std::vector<std::string> MeasuredIteration::overrides() const {
  return {fmt::format("workload.model.hidden={}", hidden),
          fmt::format("workload.model.heads={}", heads),
          fmt::format("workload.model.layers={}", layers),
          fmt::format("workload.model.sequence={}", sequence),
          fmt::format("workload.global_batch={}", global_batch),
          fmt::format("workload.microbatch={}", microbatch),
          fmt::format("parallelism.tp={}", tp),
          fmt::format("parallelism.dp={}", dp),
          fmt::format("parallelism.pp={}", pp),
          fmt::format("parallelism.gpus={}", gpus)};
}

std::vector<MeasuredIteration> read_vtrain_iterations(const std::string& path) {
  const auto file = std::make_shared<const std::string>(path);
  std::ifstream in(path);
  if (!in) throw InputError({Diagnostic{SourceLoc{file, 0, 0}, "cannot read file"}});
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split_fields(line, ',');
  const std::vector<std::string> wanted = {"# GPUs",
                                           "global batch",
                                           "micro batch",
                                           "hidden size",
                                           "attention heads",
                                           "# layers",
                                           "sequence length",
                                           "tensor parallelism",
                                           "data parallelism",
                                           "pipeline parallelism",
                                           "iteration time (ms)"};
  std::vector<size_t> column;
  for (const auto& name : wanted) {
    size_t i = 0;
    while (i < header.size() && header[i] != name) ++i;
    if (i == header.size()) {
      throw InputError({Diagnostic{SourceLoc{file, 1, 1},
                                   fmt::format("missing column '{}' in the header", name)}});
    }
    column.push_back(i);
  }
  std::vector<MeasuredIteration> rows;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty() || line == "\r") continue;
    const auto cells = split_fields(line, ',');
    std::vector<double> values;
    for (size_t k = 0; k < column.size(); ++k) {
      const std::string cell = column[k] < cells.size() ? cells[column[k]] : "";
      const auto value = parse_number(cell);
      if (!value || !(*value > 0) || *value > 1e9) {
        throw InputError({Diagnostic{SourceLoc{file, number, 1},
                                     fmt::format("column '{}' must be a positive number up to "
                                                 "1e9, got '{}'",
                                                 wanted[k], cell)}});
      }
      values.push_back(*value);
    }
    MeasuredIteration row;
    row.line = number;
    row.gpus = static_cast<int>(values[0]);
    row.global_batch = static_cast<int>(values[1]);
    row.microbatch = static_cast<int>(values[2]);
    row.hidden = static_cast<int>(values[3]);
    row.heads = static_cast<int>(values[4]);
    row.layers = static_cast<int>(values[5]);
    row.sequence = static_cast<int>(values[6]);
    row.tp = static_cast<int>(values[7]);
    row.dp = static_cast<int>(values[8]);
    row.pp = static_cast<int>(values[9]);
    row.seconds = values[10] / 1e3;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace prismsim
