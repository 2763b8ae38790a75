#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace prismsim {

/// Where a value came from: a file (or "--set") and a 1-based line and column.
struct SourceLoc {
  std::shared_ptr<const std::string> file;
  int line = 0;
  int column = 0;

  /// "file:line:col", or "file" when the position is unknown.
  std::string str() const;
};

/// One error about the user's input.
struct Diagnostic {
  SourceLoc where;
  std::string message;

  /// "file:line:col: error: message".
  std::string str() const;
};

/// Thrown when input is invalid; carries every diagnostic collected before giving up.
class InputError : public std::runtime_error {
 public:
  explicit InputError(std::vector<Diagnostic> diagnostics);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

/// A file an input was made of: its path as opened and the SHA-256 of its bytes (provenance).
struct InputFile {
  std::string path;
  std::string sha256;  ///< 64 lowercase hex digits
};

/// Collects diagnostics so that a whole file is checked before failing once; also records the
/// files read while loading, so that results can name what they were made of.
class Diagnostics {
 public:
  void error(const SourceLoc& where, std::string message);
  /// Records that `path` was read and held `bytes` (a path read again is recorded once).
  void read_input(const std::string& path, std::string_view bytes);
  /// The files read, in reading order.
  const std::vector<InputFile>& inputs() const { return inputs_; }
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  /// Throws InputError with everything collected, if anything was.
  void throw_if_any() const;

 private:
  std::vector<Diagnostic> items_;
  std::vector<InputFile> inputs_;
};

/// Returns the candidate closest to `word` by edit distance, or "" when none is close.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

/// The names as a list for a message: "a, b or c" (`conjunction` "and": "a, b and c").
std::string alternatives(const std::vector<std::string>& names, const char* conjunction = "or");

}  // namespace prismsim
