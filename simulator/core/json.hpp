#pragma once

#include <concepts>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace prismsim {

/// Writes JSON text in one pass, the layout chosen per container; the one writer of every JSON
/// file prismsim produces. Numbers are printed in the shortest form that reads back exactly;
/// non-finite ones (which JSON cannot hold) as null. Misuse (a value where a key is due, an
/// unbalanced end) is a programming error and asserts.
class JsonWriter {
 public:
  /// How a container's members are laid out.
  enum class Layout {
    block,    ///< one member per line, indented two spaces per level
    line,     ///< on one line: `{"a": 1, "b": [1, 2]}`
    compact,  ///< on one line without spaces: `{"a":1,"b":[1,2]}`
    rows,     ///< one member per line, not indented, brackets on lines of their own
  };

  JsonWriter& begin_object(Layout layout = Layout::block);
  JsonWriter& begin_array(Layout layout = Layout::block);
  /// Closes the innermost container.
  JsonWriter& end();
  /// The key of the next member of the current object.
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(double number);
  JsonWriter& value(bool flag);
  template <std::integral T>
  requires(!std::same_as<T, bool>) JsonWriter& value(T number) {
    return raw(std::to_string(number));
  }
  JsonWriter& null();
  /// A number with `decimals` digits after the point (trace timestamps in microseconds).
  JsonWriter& fixed(double number, int decimals);
  /// A number with at most `digits` significant digits.
  JsonWriter& significant(double number, int digits);
  /// A list of strings or numbers as an array of the given layout.
  template <typename T>
  JsonWriter& values(const std::vector<T>& items, Layout layout = Layout::line) {
    begin_array(layout);
    for (const T& item : items) value(item);
    return end();
  }
  /// `key` then `value`.
  template <typename T>
  JsonWriter& member(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }
  /// In a container laid out on one line: the next member starts a new line, one column right
  /// of the container's opening bracket.
  JsonWriter& wrap();
  /// Appends already rendered JSON as the next value.
  JsonWriter& raw(std::string_view json);

  /// The text so far; complete once every container is closed.
  const std::string& text() const { return out_; }
  std::string take() { return std::move(out_); }
  /// Writes the text so far to `out` and forgets it (for files too large to hold).
  void flush(std::ostream& out);

 private:
  struct Frame {
    Layout layout;
    bool object;
    size_t members = 0;
    size_t column = 0;  ///< of the opening bracket on its line
    bool wrap_next = false;
  };
  JsonWriter& begin(char bracket, bool object, Layout layout);
  /// Writes what is due before a value: nothing after a key, else the member separator.
  void before_value();
  /// Writes the separator and indentation due before the next member of the current container.
  void separate();
  void indent(size_t depth);
  /// Appends to the text, keeping track of the column.
  void put(std::string_view text);

  std::string out_;
  std::vector<Frame> stack_;
  bool after_key_ = false;
  size_t column_ = 0;  ///< of the end of the text, on its last line
};

/// `text` as a JSON string literal, quotes included.
std::string json_string(std::string_view text);

}  // namespace prismsim
