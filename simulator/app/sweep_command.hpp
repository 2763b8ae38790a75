#pragma once

namespace prismsim {

/// `prismsim sweep SWEEP.yaml ...`: one scenario over a grid of `--set` values with common
/// random numbers (every point uses the same base seed), each point a study in its own process;
/// writes DIR/points/NNN/ (summary.json, runs.csv), DIR/sweep.csv and DIR/sweep.json.
/// `argv[0]` is "sweep". Returns the exit code; throws UsageError and InputError.
int sweep_command(int argc, char** argv);

}  // namespace prismsim
