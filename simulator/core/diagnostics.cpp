#include "core/diagnostics.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/sha256.hpp"

namespace prismsim {

std::string SourceLoc::str() const {
  const std::string name = file ? *file : std::string("<input>");
  if (line <= 0) return name;
  return fmt::format("{}:{}:{}", name, line, column);
}

std::string Diagnostic::str() const { return fmt::format("{}: error: {}", where.str(), message); }

static std::string join_messages(const std::vector<Diagnostic>& diagnostics) {
  std::string text;
  for (const auto& d : diagnostics) {
    if (!text.empty()) text += '\n';
    text += d.str();
  }
  return text;
}

InputError::InputError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error(join_messages(diagnostics)), diagnostics_(std::move(diagnostics)) {}

void Diagnostics::error(const SourceLoc& where, std::string message) {
  items_.push_back({where, std::move(message)});
}

void Diagnostics::read_input(const std::string& path, std::string_view bytes) {
  for (const InputFile& f : inputs_) {
    if (f.path == path) return;
  }
  inputs_.push_back({path, sha256_hex(bytes)});
}

void Diagnostics::throw_if_any() const {
  if (items_.empty()) return;
  // Report in reading order: files as first met, then by position within each file.
  std::vector<std::string> files;
  auto file_rank = [&](const SourceLoc& loc) {
    const std::string name = loc.file ? *loc.file : std::string();
    auto it = std::find(files.begin(), files.end(), name);
    if (it == files.end()) it = files.insert(files.end(), name);
    return it - files.begin();
  };
  for (const auto& d : items_) file_rank(d.where);
  std::vector<Diagnostic> sorted = items_;
  std::stable_sort(sorted.begin(), sorted.end(), [&](const Diagnostic& a, const Diagnostic& b) {
    const auto fa = file_rank(a.where), fb = file_rank(b.where);
    if (fa != fb) return fa < fb;
    if (a.where.line != b.where.line) return a.where.line < b.where.line;
    return a.where.column < b.where.column;
  });
  throw InputError(std::move(sorted));
}

static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& candidate : candidates) {
    const size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string alternatives(const std::vector<std::string>& names, const char* conjunction) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? fmt::format(" {} ", conjunction) : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace prismsim
