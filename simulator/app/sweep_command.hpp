#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "app/shard.hpp"

namespace prismsim {

/// `prismsim sweep SWEEP.yaml ...`: one scenario over a grid of `--set` values with common
/// random numbers (every point uses the same base seed), each point a study in its own process;
/// writes DIR/points/NNN/ (summary.json, runs.csv), DIR/sweep.csv and DIR/sweep.json.
/// `argv[0]` is "sweep". Returns the exit code; throws UsageError and InputError.
/// With --shard K/N, simulates only the shard's (point, run) pairs into DIR/partial-result.txt.
int sweep_command(int argc, char** argv);

/// What identifies a sweep's shards (`prismsim slurm`): loads and checks every point.
struct SweepIdentity {
  std::string name;
  int points = 0;
  int runs = 0;
  uint64_t seed = 0;
  std::string fingerprint;
};
/// Throws InputError and UsageError as `prismsim sweep --shard` does.
SweepIdentity sweep_identity(const std::string& path, const std::vector<std::string>& overrides);

/// `prismsim merge` of a sweep's shards: `points` gathered from them (every run of each point);
/// reloads the sweep of `study`, calls `check_fingerprint` with its inputs' fingerprint (it throws
/// when they changed) and writes what `prismsim sweep` writes into `out`. Returns the exit code.
int merge_sweep(const PartialResult& study, const std::vector<SliceOutcome>& points,
                const std::filesystem::path& out,
                const std::function<void(const std::string&)>& check_fingerprint);

}  // namespace prismsim
