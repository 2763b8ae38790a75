#include "json_scanner.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/diagnostics.hpp"

namespace prismsim {
namespace {

constexpr int kMaxDepth = 256;

/// Appends code point `c` as UTF-8.
void append_utf8(std::string& out, unsigned c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

}  // namespace

JsonScanner::JsonScanner(std::string_view text, std::string path)
    : text_(text), path_(std::make_shared<const std::string>(std::move(path))) {}

void JsonScanner::fail(const std::string& message) const { fail_at(at_, message); }

SourceLoc JsonScanner::where(size_t at) const {
  at = std::min(at, text_.size());
  const std::string_view before = text_.substr(0, at);
  const size_t line_start = before.rfind('\n');
  const int line = 1 + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
  const int column =
      static_cast<int>(line_start == std::string_view::npos ? at + 1 : at - line_start);
  return SourceLoc{path_, line, column};
}

void JsonScanner::fail_at(size_t at, const std::string& message) const {
  throw InputError({Diagnostic{where(at), message}});
}

void JsonScanner::skip_spaces() {
  while (at_ < text_.size() &&
         (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\t' || text_[at_] == '\r')) {
    ++at_;
  }
}

char JsonScanner::peek() {
  skip_spaces();
  return at_ < text_.size() ? text_[at_] : '\0';
}

void JsonScanner::expect(char c, std::string_view what) {
  if (peek() != c) {
    fail(at_ < text_.size() ? "expected " + std::string(what)
                            : "unexpected end of the file: expected " + std::string(what));
  }
  ++at_;
}

bool JsonScanner::consume(char c) {
  if (peek() != c) return false;
  ++at_;
  return true;
}

std::string_view JsonScanner::raw_string(bool* escaped) {
  expect('"', "a string");
  const size_t start = at_;
  *escaped = false;
  for (; at_ < text_.size(); ++at_) {
    const char c = text_[at_];
    if (c == '"') break;
    if (c == '\\') {
      *escaped = true;
      ++at_;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      fail("control character in a string (unterminated string?)");
    }
  }
  if (at_ >= text_.size()) fail_at(start - 1, "unterminated string");
  const std::string_view raw = text_.substr(start, at_ - start);
  ++at_;
  return raw;
}

std::string_view JsonScanner::string() {
  bool escaped = false;
  const std::string_view raw = raw_string(&escaped);
  if (!escaped) return raw;
  const size_t start = static_cast<size_t>(raw.data() - text_.data());
  scratch_.clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\') {
      scratch_ += raw[i];
      continue;
    }
    const char e = raw[++i];
    switch (e) {
      case '"':
      case '\\':
      case '/':
        scratch_ += e;
        break;
      case 'b':
        scratch_ += '\b';
        break;
      case 'f':
        scratch_ += '\f';
        break;
      case 'n':
        scratch_ += '\n';
        break;
      case 'r':
        scratch_ += '\r';
        break;
      case 't':
        scratch_ += '\t';
        break;
      case 'u': {  // four hexadecimal digits (a surrogate pair stays two code points)
        unsigned code = 0;
        const char* digits = raw.data() + i + 1;
        const auto [end, error] = i + 4 < raw.size()
                                      ? std::from_chars(digits, digits + 4, code, 16)
                                      : std::from_chars_result{digits, std::errc::invalid_argument};
        if (error != std::errc() || end != digits + 4) {
          fail_at(start + i - 1, "invalid \\u escape: expected four hexadecimal digits");
        }
        append_utf8(scratch_, code);
        i += 4;
        break;
      }
      default:
        fail_at(start + i - 1, std::string("invalid escape '\\") + e + "' in a string");
    }
  }
  return scratch_;
}

double JsonScanner::number() {
  const char c = peek();
  if (c != '-' && (c < '0' || c > '9')) fail("expected a number");
  double value = 0;
  const auto [end, error] = std::from_chars(text_.data() + at_, text_.data() + text_.size(), value);
  // (from_chars also reads "-inf" and "-nan", which JSON does not have.)
  if (error != std::errc() || !std::isfinite(value)) fail("invalid number");
  at_ = static_cast<size_t>(end - text_.data());
  return value;
}

void JsonScanner::skip_value() {
  switch (peek()) {
    case '"': {
      bool escaped = false;
      raw_string(&escaped);
      return;
    }
    case '{':
    case '[': {
      if (++depth_ > kMaxDepth) fail("values nested too deeply");
      if (text_[at_] == '{') {
        object([&](const std::string&) { skip_value(); });
      } else {
        array([&] { skip_value(); });
      }
      --depth_;
      return;
    }
    case 't':
    case 'f':
    case 'n':
      for (std::string_view word : {"true", "false", "null"}) {
        if (text_.substr(at_, word.size()) == word) {
          at_ += word.size();
          return;
        }
      }
      fail("expected a value");
    case '\0':
      fail("unexpected end of the file: expected a value");
    default:
      number();
  }
}

}  // namespace prismsim
