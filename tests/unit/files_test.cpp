#include "core/files.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

using namespace prismsim;
namespace fs = std::filesystem;

namespace {

/// A fresh directory, removed at the end of the test.
struct ScratchDirectory {
  fs::path path;
  ScratchDirectory() {
    char name[] = "/tmp/prismsim-files-test-XXXXXX";
    path = ::mkdtemp(name);
  }
  ~ScratchDirectory() { fs::remove_all(path); }
  /// The names of the files in the directory, sorted.
  std::string listing() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path)) names.push_back(entry.path().filename());
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto& n : names) out += n + " ";
    return out;
  }
};

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("files: an atomic file replaces its path only on commit, and leaves no temporary") {
  ScratchDirectory dir;
  const fs::path file = dir.path / "summary.json";
  write_file(file, "old\n");
  {
    AtomicFile atomic(file);
    atomic.stream() << "new, half written";
    // Until the commit, readers see the old file whole, beside the temporary one.
    CHECK(contents(file) == "old\n");
    CHECK(dir.listing().find(".summary.json.tmp-") != std::string::npos);
  }  // not committed: as when an exception or a signal ends the writer
  CHECK(contents(file) == "old\n");
  CHECK(dir.listing() == "summary.json ");
  {
    AtomicFile atomic(file);
    atomic.stream() << "new\n";
    atomic.commit();
  }
  CHECK(contents(file) == "new\n");
  CHECK(dir.listing() == "summary.json ");
}

TEST_CASE("files: an atomic file that cannot be written throws and names the path") {
  CHECK_THROWS_WITH_AS(write_file("/proc/no-such-dir/summary.json", "x"),
                       "cannot write '/proc/no-such-dir/summary.json'", std::runtime_error);
}

TEST_CASE("files: a read-file log sees each file read whole, in order, while it lives") {
  ScratchDirectory dir;
  write_file(dir.path / "a.yaml", "a: 1\n");
  write_file(dir.path / "b.yaml", "b: 2\n");
  std::string reason;
  {
    ReadFileLog log;
    CHECK(read_file((dir.path / "b.yaml").string(), &reason));
    CHECK(read_file((dir.path / "a.yaml").string(), &reason));
    CHECK_FALSE(read_file((dir.path / "missing.yaml").string(), &reason));
    REQUIRE(log.files().size() == 2);
    CHECK(log.files()[0].second == "b: 2\n");
    CHECK(log.files()[1].second == "a: 1\n");
  }
  // Reads after the log is gone go nowhere: a later log starts empty and sees only its own.
  CHECK(read_file((dir.path / "a.yaml").string(), &reason));
  ReadFileLog later;
  CHECK(later.files().empty());
  CHECK(read_file((dir.path / "b.yaml").string(), &reason));
  REQUIRE(later.files().size() == 1);
  CHECK(later.files()[0].second == "b: 2\n");
}
