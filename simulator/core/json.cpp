#include "core/json.hpp"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <ostream>

namespace prismsim {

JsonWriter& JsonWriter::begin_object(Layout layout) { return begin('{', true, layout); }
JsonWriter& JsonWriter::begin_array(Layout layout) { return begin('[', false, layout); }

JsonWriter& JsonWriter::begin(char bracket, bool object, Layout layout) {
  before_value();
  stack_.push_back({layout, object, 0, column_, false});
  put(std::string_view(&bracket, 1));
  if (layout == Layout::rows) put("\n");
  return *this;
}

JsonWriter& JsonWriter::end() {
  assert(!stack_.empty() && !after_key_ && "end() closes an open container, not a key");
  const Frame frame = stack_.back();
  stack_.pop_back();
  if (frame.layout == Layout::rows) {
    put("\n");
  } else if (frame.layout == Layout::block && frame.members > 0) {
    put("\n");
    indent(stack_.size());
  }
  put(frame.object ? "}" : "]");
  return *this;
}

void JsonWriter::indent(size_t depth) { put(std::string(2 * depth, ' ')); }

void JsonWriter::put(std::string_view text) {
  out_ += text;
  const size_t newline = text.rfind('\n');
  column_ = newline == std::string_view::npos ? column_ + text.size() : text.size() - newline - 1;
}

void JsonWriter::flush(std::ostream& out) {
  out << out_;
  out_.clear();
}

void JsonWriter::before_value() {
  if (stack_.empty()) return;
  if (after_key_) {
    after_key_ = false;
    return;
  }
  assert(!stack_.back().object && "an object member needs a key first");
  separate();
}

void JsonWriter::separate() {
  Frame& frame = stack_.back();
  const bool first = frame.members++ == 0;
  switch (frame.layout) {
    case Layout::block:
      put(first ? "\n" : ",\n");
      indent(stack_.size());
      break;
    case Layout::line:
    case Layout::compact:
      if (!first) {
        put(",");
        if (frame.wrap_next) {
          put("\n");
          put(std::string(frame.column + 1, ' '));
        } else if (frame.layout == Layout::line) {
          put(" ");
        }
      }
      frame.wrap_next = false;
      break;
    case Layout::rows:
      if (!first) put(",\n");
      break;
  }
}

JsonWriter& JsonWriter::key(std::string_view name) {
  assert(!stack_.empty() && stack_.back().object && !after_key_ && "a key belongs in an object");
  separate();
  put(json_string(name));
  const Layout layout = stack_.back().layout;
  put(layout == Layout::compact || layout == Layout::rows ? ":" : ": ");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  before_value();
  put(json);
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) { return raw(json_string(text)); }

JsonWriter& JsonWriter::value(double number) {
  return std::isfinite(number) ? raw(fmt::format("{}", number)) : null();
}

JsonWriter& JsonWriter::value(bool flag) { return raw(flag ? "true" : "false"); }

JsonWriter& JsonWriter::null() { return raw("null"); }

JsonWriter& JsonWriter::fixed(double number, int decimals) {
  return std::isfinite(number) ? raw(fmt::format("{:.{}f}", number, decimals)) : null();
}

JsonWriter& JsonWriter::significant(double number, int digits) {
  return std::isfinite(number) ? raw(fmt::format("{:.{}g}", number, digits)) : null();
}

JsonWriter& JsonWriter::wrap() {
  assert(!stack_.empty() && "wrap() applies inside a container");
  stack_.back().wrap_next = true;
  return *this;
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace prismsim
