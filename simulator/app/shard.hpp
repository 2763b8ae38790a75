#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/study.hpp"

namespace prismsim {

/// `--shard K/N`: the K-th (1-based) of N disjoint slices of a study's work items. The items of
/// `prismsim run` are its runs; those of `prismsim sweep` are the pairs (point, run), numbered
/// point * runs + run. Shard K takes the contiguous items [floor((K-1) T / N), floor(K T / N)) of
/// T, so every item is in exactly one shard, and each run keeps the seed it has in the whole study.
struct ShardSpec {
  int index = 1;  ///< K, 1-based
  int count = 1;  ///< N

  /// The first item and one past the last of this shard among `total`.
  std::pair<int64_t, int64_t> slice(int64_t total) const;
  /// "K/N".
  std::string str() const;
};

/// Parses `--shard K/N`; throws UsageError naming the value ("--shard '5/4': K must be between 1
/// and N (4)").
ShardSpec parse_shard(const std::string& text);

/// The name of a shard's partial result in its output directory.
constexpr const char* kPartialResultFile = "partial-result.txt";

/// What a shard did for one point of its study (the only point of a `run`).
struct PartialPoint {
  std::string collectives;
  int ranks_simulated = 0;
  bool varied = false;
  std::optional<StudyResults::Baseline> baseline;  ///< by the shard that holds the point's run 0
  std::vector<RunRecord> runs;                     ///< the finished runs of the slice, in run order
};

/// A shard's partial result: which study, which slice, and its finished runs. Written
/// atomically as DIR/partial-result.txt (a tab-separated text file that names each field, see
/// docs/sweeps.md, "Shards"); `prismsim merge` reads every shard's and writes the outputs of the
/// whole study.
struct PartialResult {
  std::string kind;     ///< "run" or "sweep"
  std::string version;  ///< of prismsim
  std::string study;    ///< fingerprint of the inputs and the options: study_fingerprint
  std::string input;    ///< the scenario or sweep file as given
  std::string input_absolute;
  std::string cwd;                     ///< the shard's working directory (relative paths in --set)
  std::vector<std::string> overrides;  ///< --set, --runs, --seed as given (simulation.* values)
  std::vector<std::string> deadlines;  ///< `run --deadline` as given
  std::string compare_to;              ///< `run --compare-to`, or empty
  std::vector<std::string> command;    ///< the command line as provenance records it
  uint64_t seed = 0;
  int runs = 0;  ///< per point
  int points = 1;
  ShardSpec shard;
  int64_t first = 0, end = 0;  ///< the items of the slice
  bool complete = false;       ///< every run of the slice finished (not cut short by a signal)
  std::map<int, PartialPoint> point_results;  ///< by point index

  /// Runs of the slice that are recorded.
  int64_t runs_recorded() const;
};

/// The text of `partial`.
std::string encode_partial(const PartialResult& partial);
/// Reads a partial result; throws InputError (positioned in `path`) when it is not one.
PartialResult read_partial(const std::filesystem::path& path);

/// Hex FNV-1a 64 over everything that decides a study's outputs: the kind, prismsim's version,
/// the contents of every input file read (in order), the options.
std::string study_fingerprint(const std::string& kind,
                              const std::vector<std::pair<std::string, std::string>>& files,
                              const std::vector<std::string>& options);

/// A `prismsim run` study's inputs, loaded as `run` loads them.
struct RunStudyInputs {
  Scenario scenario;             ///< with the --deadline values added
  std::vector<double> measured;  ///< --compare-to's step times
  std::string fingerprint;       ///< study_fingerprint of the files read and the options
};
/// Loads the scenario with `overrides` and `deadlines` (as given to --deadline) and the
/// --compare-to file; throws InputError and UsageError as `prismsim run` does.
RunStudyInputs load_run_inputs(const std::string& path, const std::vector<std::string>& overrides,
                               const std::vector<std::string>& deadlines,
                               const std::string& compare_to);

/// A partial result's identity fields for shard `shard` of a study (no runs yet).
PartialResult partial_identity(const std::string& kind, const std::string& input,
                               const std::vector<std::string>& overrides, uint64_t seed, int runs,
                               int points, ShardSpec shard, const std::string& fingerprint);

/// The partial result already in `dir` when it is of the same study and shard as `identity`
/// (a shard run again resumes from it), else nothing.
std::optional<PartialResult> resumable_partial(const std::filesystem::path& dir,
                                               const PartialResult& identity);

/// Where a shard of `identity` starts in output directory `out`: creates it (UsageError when it
/// cannot be written), takes the partial result an earlier try left there if it may resume, and
/// clears prismsim's other outputs. `complete` tells (after saying so on stdout) that the
/// earlier try finished the shard: nothing is left to do, and nothing was cleared.
struct ShardStart {
  std::optional<PartialResult> earlier;
  bool complete = false;
};
ShardStart start_shard(const std::string& out, const PartialResult& identity);

/// Writes `partial` atomically as DIR/partial-result.txt, and the directory's manifest.
void write_partial(const std::filesystem::path& dir, const PartialResult& partial);

/// `prismsim merge DIR... --out OUT`; `argv[0]` is "merge". Returns the exit code; throws
/// UsageError and InputError (shards of different studies, missing or duplicate shards).
int merge_command(int argc, char** argv);

/// `prismsim slurm SCENARIO|SWEEP --shards N ...`: writes (and with --submit, submits) an sbatch
/// job array of the shards and a merge job that depends on it. `argv[0]` is "slurm".
int slurm_command(int argc, char** argv);

}  // namespace prismsim
