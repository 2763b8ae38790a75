#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/diagnostics.hpp"

namespace prismsim {

/// A pull scanner over JSON text held in memory: the caller walks the structure it expects and
/// skips the rest, so a 200 MB trace is read without building a tree. Errors throw InputError
/// with the file, line and column of the offending character.
class JsonScanner {
 public:
  /// `text` must outlive the scanner; `path` names it in errors.
  JsonScanner(std::string_view text, std::string path);

  /// The next non-space character without consuming it ('\0' at the end of the text).
  char peek();
  /// Consumes `c` (after spaces) or throws, naming `what` was expected.
  void expect(char c, std::string_view what);
  /// Consumes `c` (after spaces) if it is next.
  bool consume(char c);
  /// A string's contents, unescaped only when it holds escapes (then stored in `scratch_`).
  std::string_view string();
  /// A number (JSON syntax) or throws.
  double number();
  /// Skips one value of any type.
  void skip_value();
  /// Walks an object: calls `on_key(key)` for each member, which must consume its value.
  template <typename OnKey>
  void object(OnKey&& on_key) {
    expect('{', "'{'");
    if (consume('}')) return;
    do {
      if (peek() != '"') fail("expected a member name in double quotes");
      const std::string key(string());
      expect(':', "':' after a member name");
      on_key(key);
    } while (consume(','));
    expect('}', "',' or '}'");
  }
  /// Walks an array: calls `on_item()` for each element, which must consume it.
  template <typename OnItem>
  void array(OnItem&& on_item) {
    expect('[', "'['");
    if (consume(']')) return;
    do on_item();
    while (consume(','));
    expect(']', "',' or ']'");
  }
  /// Where byte offset `at` is: the file, line and column.
  SourceLoc where(size_t at) const;
  /// Throws InputError "path:line:col: error: message" at the current position.
  [[noreturn]] void fail(const std::string& message) const;
  /// Same, at byte offset `at`.
  [[noreturn]] void fail_at(size_t at, const std::string& message) const;
  size_t position() const { return at_; }

 private:
  void skip_spaces();
  /// Reads a string literal and gives its text as written, escapes undecoded (`escaped`: has
  /// some).
  std::string_view raw_string(bool* escaped);

  std::string_view text_;
  std::shared_ptr<const std::string> path_;
  size_t at_ = 0;
  int depth_ = 0;
  std::string scratch_;
};

}  // namespace prismsim
