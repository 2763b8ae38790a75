#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/diagnostics.hpp"

namespace prismsim {

/// One "PATH=VALUE" override written in a sweep file, applied like `--set`.
struct SweepAssignment {
  std::string text;        ///< as applied: a relative `variability` file made relative to the sweep
  std::string as_written;  ///< as the user wrote it
  SourceLoc path_loc;      ///< where PATH was written
  SourceLoc value_loc;     ///< where VALUE was written (the same place for a whole "PATH=VALUE")
};

/// One swept setting: a `--set` path with its values, or named variants of assignments.
struct SweepParameter {
  std::string column;     ///< the table's column: the path, or the variants' name
  bool variants = false;  ///< labelled variants rather than the values of one path
  SourceLoc loc;
  std::vector<std::string> values;  ///< as the user wrote them (variant names for variants)
  std::vector<std::vector<SweepAssignment>> assignments;  ///< per value: what it applies
};

/// A validated sweep file: one scenario over a grid of overrides.
struct SweepSpec {
  enum class Grid { cartesian, zip };

  std::string source;               ///< path of the sweep file
  std::string name;                 ///< `name`, or the file's stem
  std::string scenario_as_written;  ///< `scenario` as the user wrote it
  std::string scenario;             ///< the scenario file, relative to the working directory
  SourceLoc scenario_loc;           ///< where `scenario` was written
  Grid grid = Grid::cartesian;
  std::vector<SweepAssignment> set;  ///< applied to every point before the grid's values
  std::vector<SweepParameter> parameters;
  /// Per point, in order (the first parameter varies slowest): the index of its value in each
  /// parameter.
  std::vector<std::vector<size_t>> points;

  /// The assignments of point `point`'s grid values, parameter by parameter.
  std::vector<SweepAssignment> point_assignments(size_t point) const;
  /// "path=value, name=variant" of point `point`.
  std::string point_label(size_t point) const;
};

/// The most points a sweep may have.
constexpr size_t kMaxSweepPoints = 10000;

const char* to_string(SweepSpec::Grid grid);

/// The columns of sweep.csv after the parameters' (which follow "point"), in order; no parameter
/// may take one of these names.
const std::vector<std::string>& sweep_result_columns();

/// Reads and validates a sweep file. Paths in it (`scenario`, a `variability` file given as a
/// value) are relative to it. Throws InputError with every problem found, located as
/// file:line:col.
SweepSpec load_sweep(const std::string& path);

}  // namespace prismsim
