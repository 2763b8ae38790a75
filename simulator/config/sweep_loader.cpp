#include "config/sweep_loader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>

#include "config/config_tree.hpp"
#include "config/map_reader.hpp"
#include "core/files.hpp"

namespace prismsim {
namespace {

/// The text of a `variability=VALUE` assignment with a relative file name made relative to the
/// sweep file's directory `base` (load_scenario reads a --set file relative to the working
/// directory); any other assignment unchanged.
std::string rebase_variability(const std::string& path, const std::string& value,
                               const std::string& base) {
  const std::string text = path + "=" + value;
  if (path != "variability" || base.empty()) return text;
  Diagnostics scratch;
  ConfigNode node;
  try {
    node = parse_yaml_text(value, "--set", 1, 0, scratch);
  } catch (const InputError&) {
    return text;  // not YAML: load_scenario reports it where it is applied
  }
  if (!node.is_scalar() || node.scalar.empty() ||
      std::filesystem::path(node.scalar).is_absolute()) {
    return text;  // an inline section, or an absolute file name
  }
  return path + "=" + (std::filesystem::path(base) / node.scalar).lexically_normal().string();
}

/// Reads one "PATH=VALUE" string written at `node`, named `where` in messages.
std::optional<SweepAssignment> read_assignment(const ConfigNode& node, const std::string& where,
                                               const std::string& base, Diagnostics& diags) {
  if (!node.is_scalar()) {
    diags.error(node.loc, fmt::format("'{}' must be a PATH=VALUE string, got {}", where,
                                      kind_name(node.kind)));
    return std::nullopt;
  }
  const size_t equals = node.scalar.find('=');
  if (equals == std::string::npos || equals == 0) {
    diags.error(node.loc, fmt::format("'{}' must be PATH=VALUE, got '{}'", where, node.scalar));
    return std::nullopt;
  }
  return SweepAssignment{
      rebase_variability(node.scalar.substr(0, equals), node.scalar.substr(equals + 1), base),
      node.scalar, node.loc, node.loc};
}

/// A `path` parameter: the values of one --set path.
void read_path_values(MapReader& p, const ConfigNode& path_node, const std::string& base,
                      SweepParameter& parameter) {
  const auto path = p.string("path", true);
  if (path && path->find_first_of("= \t") != std::string::npos) {
    p.diags().error(path_node.loc, fmt::format("'{}' must be a dotted path such as "
                                               "parallelism.dp, got '{}'",
                                               p.path_of("path"), *path));
  }
  const ConfigNode* values = p.list("values", true);
  if (!path || values == nullptr) return;
  parameter.column = *path;
  if (values->items.empty()) {
    p.diags().error(values->loc, fmt::format("'{}' is empty", p.path_of("values")));
  }
  for (size_t i = 0; i < values->items.size(); ++i) {
    const ConfigNode& value = values->items[i];
    const std::string where = fmt::format("{}.{}", p.path_of("values"), i);
    if (!value.is_scalar()) {
      p.diags().error(value.loc, fmt::format("'{}' must be a single value, got {} (give a list "
                                             "or a map as a quoted string, or use 'variants')",
                                             where, kind_name(value.kind)));
      continue;
    }
    if (value.scalar.empty()) {
      p.diags().error(value.loc, fmt::format("'{}' must not be empty", where));
      continue;
    }
    parameter.values.push_back(value.scalar);
    parameter.assignments.push_back(
        {SweepAssignment{rebase_variability(*path, value.scalar, base), *path + "=" + value.scalar,
                         path_node.loc, value.loc}});
  }
}

/// A `name` parameter: labelled variants, each a list of assignments.
void read_variants(MapReader& p, const std::string& base, SweepParameter& parameter) {
  const auto name = p.string("name", true);
  const ConfigNode* variants = p.map("variants", true);
  if (!name || variants == nullptr) return;
  parameter.column = *name;
  parameter.variants = true;
  if (variants->entries.empty()) {
    p.diags().error(variants->loc, fmt::format("'{}' is empty", p.path_of("variants")));
  }
  for (const ConfigEntry& entry : variants->entries) {
    const std::string where = p.path_of("variants") + "." + entry.key;
    if (!entry.value.is_sequence()) {
      p.diags().error(entry.value.loc,
                      fmt::format("'{}' must be a list of PATH=VALUE strings, got {}", where,
                                  kind_name(entry.value.kind)));
      continue;
    }
    std::vector<SweepAssignment> assignments;
    for (size_t i = 0; i < entry.value.items.size(); ++i) {
      const auto assignment =
          read_assignment(entry.value.items[i], fmt::format("{}.{}", where, i), base, p.diags());
      if (assignment) assignments.push_back(*assignment);
    }
    parameter.values.push_back(entry.key);
    parameter.assignments.push_back(std::move(assignments));
  }
}

SweepParameter read_parameter(const ConfigNode& node, const std::string& where,
                              const std::string& base, Diagnostics& diags) {
  SweepParameter parameter;
  parameter.loc = node.loc;
  MapReader p(node, where, diags);
  const ConfigNode* path = p.get("path", false);
  const ConfigNode* name = p.get("name", false);
  const ConfigNode* values = p.get("values", false);
  const ConfigNode* variants = p.get("variants", false);
  if (!p.valid()) return parameter;
  if (path != nullptr && name != nullptr) {
    diags.error(node.loc, fmt::format("'{}' has both 'path' and 'name': give 'path' with "
                                      "'values', or 'name' with 'variants'",
                                      where));
  } else if (path == nullptr && name == nullptr) {
    diags.error(node.loc, fmt::format("'{}' needs 'path' with 'values', or 'name' with "
                                      "'variants'",
                                      where));
  } else if (path != nullptr) {
    if (variants != nullptr) {
      diags.error(variants->loc,
                  fmt::format("'{}' goes with 'name', not 'path'", p.path_of("variants")));
    }
    read_path_values(p, *path, base, parameter);
  } else {
    if (values != nullptr) {
      diags.error(values->loc,
                  fmt::format("'{}' goes with 'path', not 'name'", p.path_of("values")));
    }
    read_variants(p, base, parameter);
  }
  p.finish();
  return parameter;
}

/// The points of the grid: per point, the index of its value in each parameter.
std::vector<std::vector<size_t>> grid_points(const std::vector<SweepParameter>& parameters,
                                             SweepSpec::Grid grid) {
  std::vector<std::vector<size_t>> points;
  if (grid == SweepSpec::Grid::zip) {
    for (size_t i = 0; i < parameters.front().values.size(); ++i) {
      points.emplace_back(parameters.size(), i);
    }
    return points;
  }
  std::vector<size_t> index(parameters.size(), 0);
  while (true) {
    points.push_back(index);
    size_t p = parameters.size();
    while (p > 0) {  // the last parameter varies fastest
      --p;
      if (++index[p] < parameters[p].values.size()) break;
      index[p] = 0;
      if (p == 0) return points;
    }
  }
}

/// Checks the columns, the zip lengths and the size of the grid; reports to `diags`.
void check_grid(const SweepSpec& spec, const SourceLoc& at, Diagnostics& diags) {
  const auto& reserved = sweep_result_columns();
  for (size_t i = 0; i < spec.parameters.size(); ++i) {
    const SweepParameter& parameter = spec.parameters[i];
    if (parameter.column == "point" ||
        std::find(reserved.begin(), reserved.end(), parameter.column) != reserved.end()) {
      diags.error(parameter.loc, fmt::format("parameter name '{}' is a column of the table; "
                                             "choose another",
                                             parameter.column));
    }
    for (size_t j = 0; j < i; ++j) {
      if (spec.parameters[j].column == parameter.column) {
        diags.error(parameter.loc, fmt::format("'{}' is swept twice (also by 'parameters.{}' "
                                               "at line {})",
                                               parameter.column, j, spec.parameters[j].loc.line));
        break;
      }
    }
  }
  const SweepParameter& first = spec.parameters.front();
  if (spec.grid == SweepSpec::Grid::zip) {
    for (const SweepParameter& parameter : spec.parameters) {
      if (parameter.values.size() != first.values.size()) {
        diags.error(parameter.loc,
                    fmt::format("grid 'zip' needs the same number of values in every parameter: "
                                "'{}' has {}, '{}' has {}",
                                first.column, first.values.size(), parameter.column,
                                parameter.values.size()));
      }
    }
    return;
  }
  double count = 1;
  for (const SweepParameter& parameter : spec.parameters) {
    count *= static_cast<double>(parameter.values.size());
  }
  if (count > static_cast<double>(kMaxSweepPoints)) {
    diags.error(at, fmt::format("the grid has {:.0f} points; at most {} are supported", count,
                                kMaxSweepPoints));
  }
}

}  // namespace

const char* to_string(SweepSpec::Grid grid) {
  return grid == SweepSpec::Grid::zip ? "zip" : "cartesian";
}

const std::vector<std::string>& sweep_result_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> out = {"runs", "runs_completed"};
    for (const char* metric : {"step_time", "job_time"}) {
      for (const char* stat : {"mean", "std", "min", "p50", "p90", "p95", "p99", "max"}) {
        out.push_back(fmt::format("{}_{}_s", metric, stat));
      }
    }
    for (const char* column :
         {"baseline_step_time_s", "slowdown_p50", "slowdown_p95", "slowdown_p99"}) {
      out.emplace_back(column);
    }
    return out;
  }();
  return columns;
}

std::vector<SweepAssignment> SweepSpec::point_assignments(size_t point) const {
  std::vector<SweepAssignment> out;
  for (size_t p = 0; p < parameters.size(); ++p) {
    const auto& assignments = parameters[p].assignments[points[point][p]];
    out.insert(out.end(), assignments.begin(), assignments.end());
  }
  return out;
}

std::string SweepSpec::point_label(size_t point) const {
  std::string out;
  for (size_t p = 0; p < parameters.size(); ++p) {
    out += fmt::format("{}{}={}", p == 0 ? "" : ", ", parameters[p].column,
                       parameters[p].values[points[point][p]]);
  }
  return out;
}

SweepSpec load_sweep(const std::string& path) {
  Diagnostics diags;
  const auto file = std::make_shared<const std::string>(path);
  const ConfigNode root = load_yaml_file(path, SourceLoc{file, 1, 1}, diags);
  if (!root.is_map()) {
    diags.error(root.loc, fmt::format("a sweep file must be a map of keys (scenario, "
                                      "parameters, ...), got {}",
                                      kind_name(root.kind)));
    diags.throw_if_any();
  }
  SweepSpec spec;
  spec.source = path;
  const std::string base = parent_directory(path);
  MapReader r(root, "", diags);
  spec.name = r.string("name", false).value_or(std::filesystem::path(path).stem().string());
  if (auto scenario = r.string("scenario", true)) {
    spec.scenario_as_written = *scenario;
    spec.scenario_loc = root.find("scenario")->loc;
    spec.scenario = (std::filesystem::path(base) / *scenario).lexically_normal().string();
    if (const auto problem = regular_file_problem(spec.scenario)) {
      diags.error(spec.scenario_loc,
                  fmt::format("cannot read scenario {}: {}", quoted_path(spec.scenario), *problem));
    }
  }
  if (const ConfigNode* set = r.list("set", false)) {
    for (size_t i = 0; i < set->items.size(); ++i) {
      if (auto assignment = read_assignment(set->items[i], fmt::format("set.{}", i), base, diags)) {
        spec.set.push_back(*assignment);
      }
    }
  }
  if (auto grid = r.choice("grid", false, {"cartesian", "zip"})) {
    spec.grid = static_cast<SweepSpec::Grid>(*grid);
  }
  if (const ConfigNode* parameters = r.list("parameters", true)) {
    if (parameters->items.empty()) diags.error(parameters->loc, "'parameters' is empty");
    for (size_t i = 0; i < parameters->items.size(); ++i) {
      spec.parameters.push_back(
          read_parameter(parameters->items[i], fmt::format("parameters.{}", i), base, diags));
    }
  }
  r.finish();
  if (diags.empty()) check_grid(spec, root.find("parameters")->loc, diags);
  diags.throw_if_any();
  spec.points = grid_points(spec.parameters, spec.grid);
  return spec;
}

}  // namespace prismsim
