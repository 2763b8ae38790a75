#pragma once

namespace prismsim {

/// `prismsim calibrate INPUT... [--out FILE.yaml] ...`: fits a scenario's `variability:` section
/// to measured durations (Kineto traces, CSV samples, nccl-tests logs), prints the report, and
/// with --plots draws CDF and QQ plots. `argv[0]` is "calibrate". Returns the exit code; throws
/// UsageError and InputError.
int calibrate_command(int argc, char** argv);

}  // namespace prismsim
