#pragma once

#include <string>
#include <vector>

namespace prismsim {

/// `prismsim sweep SWEEP.yaml ...`: one scenario over a grid of `--set` values with common
/// random numbers (every point uses the same base seed), each point a study in its own process;
/// writes DIR/points/NNN/ (summary.json, runs.csv), DIR/sweep.csv and DIR/sweep.json.
/// `argv[0]` is "sweep"; `command` is the whole command line, for each point's provenance.
/// Returns the exit code; throws UsageError and InputError.
int sweep_command(int argc, char** argv, const std::vector<std::string>& command);

}  // namespace prismsim
