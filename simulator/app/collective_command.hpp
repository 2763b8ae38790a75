#pragma once

namespace prismsim {

/// `prismsim collective ...`: an nccl-tests style sweep of one collective on a platform.
/// `argv[0]` is "collective". Returns the exit code; throws UsageError and InputError.
int collective_command(int argc, char** argv);

}  // namespace prismsim
