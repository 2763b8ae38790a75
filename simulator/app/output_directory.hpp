#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace prismsim {

/// The policy for an output directory that already holds results: prismsim's own files from an
/// earlier study are removed before a new study writes any, so that a directory never mixes two
/// studies. prismsim's own files are those it names (summary.json, runs.csv, breakdown.csv,
/// training.csv, sweep.csv, sweep.json, partial-result.txt, points/NNN/ with these files) and
/// those listed in the directory's manifest, kOutputManifest (one path relative to the directory
/// a line: traces written inside it). Nothing else is touched; directories left empty are
/// removed. Each file is then written atomically (core/files.hpp).
constexpr const char* kOutputManifest = ".prismsim-outputs";

/// Creates `dir` (and its parents) unless it exists; throws UsageError "cannot write to output
/// directory 'SHOWN'" when that fails or it cannot be written.
void make_writable_directory(const std::filesystem::path& dir, const std::string& shown);

/// Removes prismsim's files of an earlier study from `dir` (which may not exist). Throws
/// std::runtime_error when one cannot be removed.
void clear_previous_outputs(const std::filesystem::path& dir);

/// Removes the files of a Kineto trace in `dir` (rankR.pt.trace.json), keeping the directory.
void remove_kineto_files(const std::filesystem::path& dir);

/// Writes `dir`'s manifest: the files of `written` that lie inside `dir`, relative to it.
void record_outputs(const std::filesystem::path& dir, const std::vector<std::string>& written);

}  // namespace prismsim
