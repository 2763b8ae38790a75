#include "fuzz_support.hpp"

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <string>

namespace prismsim::fuzz {
namespace {

std::filesystem::path make_scratch_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "prismsim-fuzz-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) fail("cannot create a scratch directory");
  static const std::filesystem::path dir = pattern;
  std::atexit([] {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  });
  return dir;
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 40 || name == "." || name == "..") return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

void fail(const std::string& message) {
  std::cerr << "prismsim fuzz: " << message << std::endl;
  std::abort();
}

const std::filesystem::path& fresh_scratch_dir() {
  static const std::filesystem::path dir = make_scratch_dir();
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::filesystem::remove_all(entry.path());
  }
  return dir;
}

std::string write_input(const std::filesystem::path& dir, const std::string& name,
                        std::string_view text) {
  const std::string path = (dir / name).string();
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) fail("cannot write " + path);
  return path;
}

std::string write_bundle(const std::filesystem::path& dir, const std::string& first_name,
                         std::string_view input) {
  constexpr std::string_view kMarker = "#@file ";
  std::string name = first_name;
  std::string text;
  std::string first_path;
  auto flush = [&] {
    const std::string path = write_input(dir, name, text);
    if (first_path.empty()) first_path = path;
    text.clear();
  };
  size_t start = 0;
  while (start < input.size()) {
    size_t end = input.find('\n', start);
    end = end == std::string_view::npos ? input.size() : end + 1;
    const std::string_view line = input.substr(start, end - start);
    std::string_view rest = line.starts_with(kMarker) ? line.substr(kMarker.size()) : "";
    while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r')) rest.remove_suffix(1);
    if (valid_name(rest) && rest != first_name) {
      flush();
      name = std::string(rest);
    } else {
      text += line;
    }
    start = end;
  }
  flush();
  return first_path;
}

}  // namespace prismsim::fuzz
