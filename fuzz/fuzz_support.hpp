#pragma once

// Shared by the libFuzzer targets: a private scratch directory, inputs written as files (and
// bundles of files), and the checks every target makes of what the readers do with an input.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/diagnostics.hpp"

namespace prismsim::fuzz {

/// An empty scratch directory of this process (created on first use, emptied on every call, and
/// removed at exit), so that one input never sees the files of another.
const std::filesystem::path& fresh_scratch_dir();

/// Writes `text` to `dir/name` and returns the path.
std::string write_input(const std::filesystem::path& dir, const std::string& name,
                        std::string_view text);

/// Writes a bundle of files into `dir`: the input up to the first line "#@file NAME" goes to
/// `first_name`, each such line starts file NAME (letters, digits, '.', '_', '-'; at most 40
/// characters; other lines are content). The seeds bundle a scenario with the files it
/// includes, renamed so that they sit next to it. Returns the path of the first file.
std::string write_bundle(const std::filesystem::path& dir, const std::string& first_name,
                         std::string_view input);

/// Stops the fuzzer with `message`: the input found a bug.
[[noreturn]] void fail(const std::string& message);

/// Runs `read`; an InputError is the expected refusal of a bad input, but each of its
/// diagnostics must name a file and, unless it concerns the whole file (`whole_file_ok`), a
/// line and column. Any other exception escapes, which libFuzzer reports as a crash.
template <typename Read>
bool accepted(Read&& read, bool whole_file_ok = false) {
  try {
    read();
    return true;
  } catch (const InputError& e) {
    if (e.diagnostics().empty()) fail("an InputError without diagnostics");
    for (const Diagnostic& d : e.diagnostics()) {
      if (!d.where.file || d.where.file->empty()) fail("a diagnostic without a file: " + d.str());
      if (d.where.line <= 0 && !whole_file_ok) fail("a diagnostic without a position: " + d.str());
      if (d.message.empty()) fail("an empty diagnostic at " + d.where.str());
    }
    return false;
  }
}

}  // namespace prismsim::fuzz
