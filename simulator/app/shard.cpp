#include "app/shard.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <set>
#include <stdexcept>

#include "app/cli_errors.hpp"
#include "app/output_directory.hpp"
#include "app/sweep_command.hpp"
#include "config/scenario_loader.hpp"
#include "core/diagnostics.hpp"
#include "core/files.hpp"
#include "core/units.hpp"
#include "stats/measured_samples.hpp"

#ifndef PRISMSIM_VERSION
#define PRISMSIM_VERSION "unknown"
#endif

namespace po = boost::program_options;

namespace prismsim {

// ---------------------------------------------------------------------------------------------
// Shards and slices.

std::pair<int64_t, int64_t> ShardSpec::slice(int64_t total) const {
  return {(index - 1) * total / count, index * total / count};
}

std::string ShardSpec::str() const { return fmt::format("{}/{}", index, count); }

ShardSpec parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  auto number = [&](std::string_view digits, int* value) {
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *value);
    return !digits.empty() && ec == std::errc() && end == digits.data() + digits.size();
  };
  ShardSpec shard;
  if (slash == std::string::npos ||
      !number(std::string_view(text).substr(0, slash), &shard.index) ||
      !number(std::string_view(text).substr(slash + 1), &shard.count)) {
    throw UsageError(
        fmt::format("--shard '{}': expected K/N, two whole numbers, e.g. --shard 2/8 "
                    "(the second of 8 shards)",
                    text));
  }
  if (shard.count < 1 || shard.count > 1000000) {
    throw UsageError(fmt::format("--shard '{}': N must be between 1 and 1000000", text));
  }
  if (shard.index < 1 || shard.index > shard.count) {
    throw UsageError(
        fmt::format("--shard '{}': K must be between 1 and N ({}); shards are "
                    "numbered from 1",
                    text, shard.count));
  }
  return shard;
}

int64_t PartialResult::runs_recorded() const {
  int64_t n = 0;
  for (const auto& [point, p] : point_results) n += static_cast<int64_t>(p.runs.size());
  return n;
}

std::string study_fingerprint(const std::string& kind,
                              const std::vector<std::pair<std::string, std::string>>& files,
                              const std::vector<std::string>& options) {
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a, 64 bits
  auto add = [&](std::string_view text) {
    // Length first: ("ab", "c") and ("a", "bc") differ.
    const std::string length = fmt::format("{}:", text.size());
    for (std::string_view part : {std::string_view(length), text}) {
      for (const char c : part) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ULL;
      }
    }
  };
  add(kind);
  add(PRISMSIM_VERSION);
  for (const auto& [path, text] : files) add(text);
  for (const std::string& option : options) add(option);
  return fmt::format("{:016x}", hash);
}

// ---------------------------------------------------------------------------------------------
// The partial result's text: one field a line, its name, a tab, its values separated by tabs.

namespace {

constexpr const char* kMagic = "prismsim-partial-result";
constexpr int kFormat = 1;

/// `text` with backslash, tab, line feed and carriage return escaped.
std::string escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::optional<std::string> unescape(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    if (++i == text.size()) return std::nullopt;
    switch (text[i]) {
      case '\\':
        out += '\\';
        break;
      case 't':
        out += '\t';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      default:
        return std::nullopt;
    }
  }
  return out;
}

}  // namespace

std::string encode_partial(const PartialResult& p) {
  std::string out = fmt::format("{}\t{}\n", kMagic, kFormat);
  auto line = [&](const std::string& name, const std::string& value) {
    out += name + "\t" + value + "\n";
  };
  line("version", escape(p.version));
  line("kind", p.kind);
  line("study", p.study);
  line("input", escape(p.input));
  line("input_absolute", escape(p.input_absolute));
  line("cwd", escape(p.cwd));
  for (const std::string& o : p.overrides) line("set", escape(o));
  for (const std::string& d : p.deadlines) line("deadline", escape(d));
  if (!p.compare_to.empty()) line("compare_to", escape(p.compare_to));
  for (const std::string& c : p.command) line("command", escape(c));
  line("seed", std::to_string(p.seed));
  line("runs", std::to_string(p.runs));
  line("points", std::to_string(p.points));
  line("shard", fmt::format("{}\t{}", p.shard.index, p.shard.count));
  line("items", fmt::format("{}\t{}", p.first, p.end));
  line("complete", p.complete ? "1" : "0");
  for (const auto& [point, r] : p.point_results) {
    line("point", fmt::format("{}\t{}\t{}\t{}", point, r.ranks_simulated, r.varied ? 1 : 0,
                              escape(r.collectives)));
    if (r.baseline) {
      line("baseline",
           fmt::format("{}\t{}\t{}", point, r.baseline->step_time_s, r.baseline->job_time_s));
    }
    for (const RunRecord& run : r.runs) {
      // Step times in the shortest form that reads back exactly.
      line("run", fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}", point, run.run, run.seed,
                              run.ok ? 1 : 0, run.counters.executions, run.counters.transfers,
                              fmt::join(run.step_times_s, ","), escape(run.error)));
    }
  }
  out += "end\n";
  return out;
}

namespace {

/// Reads a partial result's lines, each error at its line.
class PartialReader {
 public:
  explicit PartialReader(std::filesystem::path path)
      : path_(std::move(path)), file_(std::make_shared<std::string>(path_.string())) {}

  PartialResult read() {
    std::string reason;
    const auto text = read_file(path_.string(), &reason, uint64_t{1} << 34);
    if (!text) fail(1, fmt::format("cannot read {}: {}", quoted_path(path_.string()), reason));
    PartialResult p;
    bool ended = false;
    std::set<std::string> seen;
    size_t start = 0;
    int number = 0;
    while (start < text->size()) {
      size_t stop = text->find('\n', start);
      if (stop == std::string::npos) {
        fail(number + 1, "the file ends without a line break: it was cut short");
      }
      line_ = ++number;
      fields_.clear();
      const std::string line = text->substr(start, stop - start);
      start = stop + 1;
      size_t from = 0;
      while (true) {
        const size_t tab = line.find('\t', from);
        fields_.push_back(line.substr(from, tab == std::string::npos ? tab : tab - from));
        if (tab == std::string::npos) break;
        from = tab + 1;
      }
      const std::string& name = fields_[0];
      if (number == 1) {
        if (name != kMagic) {
          fail(1, fmt::format("not a prismsim partial result (it should start with '{}')", kMagic));
        }
        if (integer(1, 1) != kFormat) {
          fail(1, fmt::format("partial result format {} is not format {}, what this prismsim "
                              "reads",
                              fields_.at(1), kFormat));
        }
        continue;
      }
      if (ended) fail(number, "text after 'end'");
      lines[name] = number;
      const bool repeated = name == "set" || name == "deadline" || name == "command" ||
                            name == "point" || name == "baseline" || name == "run" || name == "end";
      if (!repeated && !seen.insert(name).second)
        fail(number, fmt::format("'{}' given twice", name));
      if (name == "version") {
        p.version = string(1);
      } else if (name == "kind") {
        p.kind = string(1);
        if (p.kind != "run" && p.kind != "sweep") fail(number, "kind must be run or sweep");
      } else if (name == "study") {
        p.study = string(1);
      } else if (name == "input") {
        p.input = string(1);
      } else if (name == "input_absolute") {
        p.input_absolute = string(1);
      } else if (name == "cwd") {
        p.cwd = string(1);
      } else if (name == "set") {
        p.overrides.push_back(string(1));
      } else if (name == "deadline") {
        p.deadlines.push_back(string(1));
      } else if (name == "compare_to") {
        p.compare_to = string(1);
      } else if (name == "command") {
        p.command.push_back(string(1));
      } else if (name == "seed") {
        p.seed = whole(1, true);
      } else if (name == "runs") {
        p.runs = static_cast<int>(integer(1, 1));
      } else if (name == "points") {
        p.points = static_cast<int>(integer(1, 2));
      } else if (name == "shard") {
        fields(3);
        p.shard.index = static_cast<int>(integer(1, 2));
        p.shard.count = static_cast<int>(integer(2, 2));
      } else if (name == "items") {
        fields(3);
        p.first = integer(1, 2);
        p.end = integer(2, 2);
      } else if (name == "complete") {
        p.complete = integer(1, 1) != 0;
      } else if (name == "point") {
        fields(5);
        PartialPoint& r = p.point_results[point(p)];
        r.ranks_simulated = static_cast<int>(integer(2, 2));
        r.varied = integer(3, 2) != 0;
        r.collectives = string(4);
      } else if (name == "baseline") {
        fields(4);
        p.point_results[point(p)].baseline = StudyResults::Baseline{real(2), real(3)};
      } else if (name == "run") {
        fields(9);
        RunRecord run;
        const int at = point(p);
        run.run = static_cast<int>(integer(2, 3));
        if (run.run >= p.runs) fail(number, fmt::format("run {} of {} runs", run.run, p.runs));
        run.seed = whole(3, true);
        run.ok = integer(4, 3) != 0;
        run.counters.executions = whole(5, true);
        run.counters.transfers = whole(6, true);
        if (!fields_[7].empty()) {
          size_t from_step = 0;
          while (true) {
            const size_t comma = fields_[7].find(',', from_step);
            run.step_times_s.push_back(
                real_text(fields_[7].substr(from_step, comma - from_step), 3));
            if (comma == std::string::npos) break;
            from_step = comma + 1;
          }
        }
        run.error = string(8);
        p.point_results[at].runs.push_back(std::move(run));
      } else if (name == "end") {
        ended = true;
      } else {
        fail(number, fmt::format("unknown field '{}'", name));
      }
    }
    if (number == 0) fail(1, "the file is empty");
    if (!ended) fail(number, "no 'end' line: the file was cut short");
    for (const char* required :
         {"version", "kind", "study", "input", "seed", "runs", "shard", "items", "complete"}) {
      if (!seen.count(required)) fail(number, fmt::format("no '{}' line", required));
    }
    return p;
  }

  std::map<std::string, int> lines;  ///< the line of each field's (last) occurrence

 private:
  [[noreturn]] void fail(int line, const std::string& message) const {
    throw InputError({Diagnostic{SourceLoc{file_, line, 1}, message}});
  }
  void fields(size_t count) const {
    if (fields_.size() != count) {
      fail(line_, fmt::format("'{}' has {} values, expected {}", fields_[0], fields_.size() - 1,
                              count - 1));
    }
  }
  std::string string(size_t i) const {
    if (fields_.size() <= i) fail(line_, fmt::format("'{}' has no value", fields_[0]));
    auto text = unescape(fields_[i]);
    if (!text) fail(line_, fmt::format("bad escape in '{}'", fields_[0]));
    return *text;
  }
  /// A whole number of at most 64 bits; below 2^63 unless `full` (seeds).
  int64_t integer(size_t i, size_t) const { return static_cast<int64_t>(whole(i, false)); }
  uint64_t whole(size_t i, bool full) const {
    const std::string text = string(i);
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
        (!full && value > uint64_t{INT64_MAX})) {
      fail(line_, fmt::format("'{}': expected a whole number, got '{}'", fields_[0], text));
    }
    return value;
  }
  double real_text(const std::string& text, size_t) const {
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
      fail(line_, fmt::format("'{}': expected a number, got '{}'", fields_[0], text));
    }
    return value;
  }
  double real(size_t i) const { return real_text(string(i), 0); }
  int point(const PartialResult& p) const {
    const auto at = integer(1, 1);
    if (at >= p.points) fail(line_, fmt::format("point {} of {} points", at, p.points));
    return static_cast<int>(at);
  }

  std::filesystem::path path_;
  std::shared_ptr<const std::string> file_;
  int line_ = 0;
  std::vector<std::string> fields_;
};

}  // namespace

PartialResult read_partial(const std::filesystem::path& path) {
  PartialReader reader(path);
  return reader.read();
}

// ---------------------------------------------------------------------------------------------
// Merging.

namespace {

/// A shard's partial result and where it was read.
struct ShardFile {
  std::filesystem::path path;
  PartialResult partial;
  std::map<std::string, int> lines;
};

[[noreturn]] void merge_error(const ShardFile& at, const std::string& field,
                              const std::string& message) {
  const auto line = at.lines.find(field);
  throw InputError({Diagnostic{SourceLoc{std::make_shared<std::string>(at.path.string()),
                                         line == at.lines.end() ? 1 : line->second, 1},
                               message}});
}

std::string quoted_list(const std::vector<std::string>& items) {
  if (items.empty()) return "none";
  std::vector<std::string> quoted;
  for (const std::string& item : items) quoted.push_back("'" + item + "'");
  return fmt::format("{}", fmt::join(quoted, " "));
}

/// Checks that every shard is of the study of the first; throws InputError naming what differs.
void check_one_study(const std::vector<ShardFile>& shards) {
  const ShardFile& first = shards.front();
  const PartialResult& a = first.partial;
  for (const ShardFile& other : shards) {
    const PartialResult& b = other.partial;
    const std::string theirs =
        fmt::format("shard {} ({})", a.shard.str(), quoted_path(first.path.string()));
    auto differs = [&](const std::string& field, const std::string& here,
                       const std::string& there) {
      if (here == there) return;
      merge_error(other, field,
                  fmt::format("shard {} is of another study: {} {} here, {} in {}", b.shard.str(),
                              field, here, there, theirs));
    };
    differs("version", "'" + b.version + "'", "'" + a.version + "'");
    differs("kind", b.kind, a.kind);
    differs("input", quoted_path(b.input_absolute), quoted_path(a.input_absolute));
    differs("set", quoted_list(b.overrides), quoted_list(a.overrides));
    differs("deadline", quoted_list(b.deadlines), quoted_list(a.deadlines));
    differs("compare_to", "'" + b.compare_to + "'", "'" + a.compare_to + "'");
    differs("seed", std::to_string(b.seed), std::to_string(a.seed));
    differs("runs", std::to_string(b.runs), std::to_string(a.runs));
    differs("points", std::to_string(b.points), std::to_string(a.points));
    if (b.shard.count != a.shard.count) {
      merge_error(other, "shard",
                  fmt::format("shard {} is one of {} shards, shard {} of {} ({})", b.shard.str(),
                              b.shard.count, a.shard.str(), a.shard.count,
                              quoted_path(first.path.string())));
    }
    if (b.study != a.study) {
      differs("study", b.study + " (the contents of the input files)", a.study);
    }
  }
  // Each shard once, none missing, each whole.
  const int count = a.shard.count;
  std::vector<const ShardFile*> by_index(static_cast<size_t>(count) + 1, nullptr);
  for (const ShardFile& shard : shards) {
    const PartialResult& p = shard.partial;
    const ShardFile*& slot = by_index[static_cast<size_t>(p.shard.index)];
    if (slot != nullptr) {
      merge_error(shard, "shard",
                  fmt::format("shard {} is given twice: here and in {}", p.shard.str(),
                              quoted_path(slot->path.string())));
    }
    slot = &shard;
    const auto [first_item, end_item] = p.shard.slice(int64_t{p.runs} * p.points);
    if (p.first != first_item || p.end != end_item) {
      merge_error(shard, "items",
                  fmt::format("shard {} holds items {}-{}, not {}-{} as its number says",
                              p.shard.str(), p.first, p.end, first_item, end_item));
    }
    if (!p.complete || p.runs_recorded() != p.end - p.first) {
      merge_error(shard, "complete",
                  fmt::format("shard {} is incomplete: {} of its {} runs finished; run it again "
                              "(it resumes) before merging",
                              p.shard.str(), p.runs_recorded(), p.end - p.first));
    }
  }
  std::vector<std::string> missing;
  for (int k = 1; k <= count; ++k) {
    if (by_index[static_cast<size_t>(k)] == nullptr)
      missing.push_back(fmt::format("{}/{}", k, count));
  }
  if (!missing.empty()) {
    throw InputError({Diagnostic{
        SourceLoc{std::make_shared<std::string>("prismsim merge"), 0, 0},
        fmt::format("{} of {} shards missing: {} (given: {} shard file{})", missing.size(), count,
                    fmt::join(missing, ", "), shards.size(), shards.size() == 1 ? "" : "s")}});
  }
}

/// Gathers the shards' slices of each point, in run order.
std::vector<SliceOutcome> gather_points(const std::vector<ShardFile>& shards) {
  const PartialResult& a = shards.front().partial;
  std::vector<SliceOutcome> points(static_cast<size_t>(a.points));
  std::vector<bool> described(points.size(), false);
  for (const ShardFile& shard : shards) {
    for (const auto& [point, r] : shard.partial.point_results) {
      SliceOutcome& g = points[static_cast<size_t>(point)];
      if (!described[static_cast<size_t>(point)]) {
        g.collectives = r.collectives;
        g.ranks_simulated = r.ranks_simulated;
        g.varied = r.varied;
        described[static_cast<size_t>(point)] = true;
      }
      if (r.baseline) g.baseline = r.baseline;
      g.runs.insert(g.runs.end(), r.runs.begin(), r.runs.end());
    }
  }
  for (size_t point = 0; point < points.size(); ++point) {
    auto& runs = points[point].runs;
    std::sort(runs.begin(), runs.end(),
              [](const RunRecord& x, const RunRecord& y) { return x.run < y.run; });
    for (size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].run != static_cast<int>(i)) {
        throw InputError(
            {Diagnostic{SourceLoc{std::make_shared<std::string>("prismsim merge"), 0, 0},
                        fmt::format("point {}: run {} is missing or recorded twice", point, i)}});
      }
    }
    if (static_cast<int>(runs.size()) != a.runs) {
      throw InputError({Diagnostic{
          SourceLoc{std::make_shared<std::string>("prismsim merge"), 0, 0},
          fmt::format("point {}: {} of {} runs recorded", point, runs.size(), a.runs)}});
    }
  }
  return points;
}

}  // namespace

RunStudyInputs load_run_inputs(const std::string& path, const std::vector<std::string>& overrides,
                               const std::vector<std::string>& deadlines,
                               const std::string& compare_to) {
  RunStudyInputs in;
  ReadFileLog log;
  in.scenario = load_scenario(path, overrides);
  apply_deadlines(in.scenario, deadlines);
  std::vector<std::string> options = overrides;
  for (const std::string& d : deadlines) options.push_back("--deadline=" + d);
  std::vector<std::pair<std::string, std::string>> files = log.files();
  if (!compare_to.empty()) {
    in.measured = read_measured_samples(compare_to);
    std::string reason;
    const auto text = read_file(compare_to, &reason);
    files.emplace_back(compare_to, text.value_or(""));
    options.push_back("--compare-to");
  }
  in.fingerprint = study_fingerprint("run", files, options);
  return in;
}

PartialResult partial_identity(const std::string& kind, const std::string& input,
                               const std::vector<std::string>& overrides, uint64_t seed, int runs,
                               int points, ShardSpec shard, const std::string& fingerprint) {
  PartialResult p;
  p.kind = kind;
  p.version = PRISMSIM_VERSION;
  p.study = fingerprint;
  p.input = input;
  std::error_code ec;
  p.input_absolute = std::filesystem::absolute(input, ec).lexically_normal().string();
  char cwd[4096];
  p.cwd = ::getcwd(cwd, sizeof cwd) != nullptr ? cwd : ".";
  p.overrides = overrides;
  p.seed = seed;
  p.runs = runs;
  p.points = points;
  p.shard = shard;
  std::tie(p.first, p.end) = shard.slice(int64_t{runs} * points);
  return p;
}

std::optional<PartialResult> resumable_partial(const std::filesystem::path& dir,
                                               const PartialResult& identity) {
  const std::filesystem::path path = dir / kPartialResultFile;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  try {
    PartialResult p = read_partial(path);
    if (p.study == identity.study && p.kind == identity.kind && p.version == identity.version &&
        p.input_absolute == identity.input_absolute && p.overrides == identity.overrides &&
        p.deadlines == identity.deadlines && p.compare_to == identity.compare_to &&
        p.shard.index == identity.shard.index && p.shard.count == identity.shard.count &&
        p.first == identity.first && p.end == identity.end) {
      return p;
    }
  } catch (const InputError&) {
    // Not a partial result of this prismsim (or cut short): simulated again.
  }
  return std::nullopt;
}

ShardStart start_shard(const std::string& out, const PartialResult& identity) {
  const std::filesystem::path dir(out);
  make_writable_directory(dir, out);
  ShardStart start{resumable_partial(dir, identity), false};
  if (start.earlier && start.earlier->complete) {
    std::cout << fmt::format("shard {}: already complete in {}; nothing to do\n",
                             identity.shard.str(), (dir / kPartialResultFile).string());
    start.complete = true;
    return start;
  }
  clear_previous_outputs(dir);  // never a mix of two studies (app/output_directory.hpp)
  return start;
}

void write_partial(const std::filesystem::path& dir, const PartialResult& partial) {
  const std::filesystem::path path = dir / kPartialResultFile;
  write_file(path, encode_partial(partial));
  record_outputs(dir, {path.string()});
}

// ---------------------------------------------------------------------------------------------

int merge_command(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string out = "out";
  po::options_description named("merge options");
  named.add_options()("help,h", "show this help")(
      "out,o", po::value(&out), "output directory of the whole study (default: out)");
  po::options_description hidden;
  hidden.add_options()("shard", po::value(&inputs)->composing());
  po::options_description all;
  all.add(named).add(hidden);
  po::positional_options_description positional;
  positional.add("shard", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
  po::notify(vm);
  const char* usage =
      "usage: prismsim merge DIR... [--out OUT]\n"
      "  DIR: a shard's output directory (prismsim run/sweep --shard K/N --out DIR), or its\n"
      "  partial-result.txt; every shard of the study, once\n";
  if (vm.count("help")) {
    std::cout << usage << "\n" << named;
    return kExitOk;
  }
  if (inputs.empty())
    throw UsageError("missing shard directories: prismsim merge DIR... --out OUT");
  std::vector<ShardFile> shards;
  for (const std::string& input : inputs) {
    std::filesystem::path path(input);
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) path /= kPartialResultFile;
    PartialReader reader(path);
    ShardFile shard{path, reader.read(), {}};
    shard.lines = reader.lines;
    shards.push_back(std::move(shard));
  }
  check_one_study(shards);
  const PartialResult& a = shards.front().partial;
  std::vector<SliceOutcome> points = gather_points(shards);

  // Outside the study's directory, paths are as the shards saw them: from its working directory.
  std::error_code ec;
  const std::filesystem::path out_dir = std::filesystem::absolute(out, ec);
  if (!a.cwd.empty() && ::chdir(a.cwd.c_str()) != 0) {
    throw UsageError(
        fmt::format("cannot enter the study's working directory {}", quoted_path(a.cwd)));
  }
  make_writable_directory(out_dir, out);
  auto check_inputs = [&](const std::string& fingerprint) {
    if (fingerprint != a.study) {
      merge_error(shards.front(), "study",
                  fmt::format("the inputs changed since the shards ran: {} and the files it "
                              "includes now give study {}, the shards ran study {}",
                              quoted_path(a.input_absolute), fingerprint, a.study));
    }
  };
  if (a.kind == "sweep") {
    return merge_sweep(a, points, out_dir, check_inputs);
  }
  // The path as given, from the study's working directory: provenance records it so.
  const RunStudyInputs in = load_run_inputs(a.input, a.overrides, a.deadlines, a.compare_to);
  check_inputs(in.fingerprint);
  clear_previous_outputs(out_dir);
  const StudyResults results =
      assemble_results(in.scenario, points.front(), a.compare_to, in.measured, a.command);
  const std::string summary = (out_dir / "summary.json").string();
  const std::string runs = (out_dir / "runs.csv").string();
  write_file(summary, summary_json(results));
  write_file(runs, runs_csv(results));
  record_outputs(out_dir, {summary, runs});
  std::cout << summary_text(results)
            << fmt::format("merged {} shards; wrote {}, {}\n", shards.size(), summary, runs);
  return report_failed_runs(results);
}

// ---------------------------------------------------------------------------------------------
// prismsim slurm: a job array of the shards and a merge job after it.

namespace {

/// `text` in single quotes for bash.
std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Whether `path` is a sweep file: it has a top-level `parameters:` key (a scenario never has).
bool is_sweep_file(const std::string& path) {
  std::string reason;
  const auto text = read_file(path, &reason, kMaxConfigFileBytes);
  if (!text) return false;  // the loader reports why
  return text->rfind("parameters:", 0) == 0 || text->find("\nparameters:") != std::string::npos;
}

/// Shard indices as Slurm's --array list: "1-3,5,7-8".
std::string array_ranges(const std::vector<int>& shards) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < shards.size();) {
    size_t j = i;
    while (j + 1 < shards.size() && shards[j + 1] == shards[j] + 1) ++j;
    parts.push_back(i == j ? std::to_string(shards[i])
                           : fmt::format("{}-{}", shards[i], shards[j]));
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

/// The path of this executable, for the scripts.
std::string own_executable() {
  std::error_code ec;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("prismsim") : path.string();
}

}  // namespace

int slurm_command(int argc, char** argv) {
  std::string input, out = "out", partition, time, account, sbatch = "sbatch";
  std::vector<std::string> overrides, deadlines, extra;
  std::string compare_to;
  int shards = 0, cpus = 1, runs = 0;
  long long seed = -1;
  bool submit = false;
  po::options_description named("slurm options");
  named.add_options()("help,h", "show this help")(
      "shards", po::value(&shards), "N: the study in N shards, one array task each (required)")(
      "out,o", po::value(&out),
      "study directory (default: out): the merged outputs, shards/K/, slurm/ (scripts, logs)")(
      "partition", po::value(&partition), "Slurm partition of every job")(
      "time", po::value(&time), "time limit of a shard (and of the merge), as sbatch takes it")(
      "cpus-per-task", po::value(&cpus), "CPUs per shard (default 1); the shard's --jobs")(
      "account", po::value(&account), "Slurm account charged")(
      "sbatch-option", po::value(&extra)->composing(),
      "another #SBATCH line for every job, e.g. --sbatch-option=--qos=short (repeatable)")(
      "submit", po::bool_switch(&submit), "submit the jobs (with sbatch) after writing them")(
      "sbatch", po::value(&sbatch), "the sbatch command (default: sbatch)")(
      "runs", po::value(&runs), "runs (of every point), as run and sweep take it")(
      "seed", po::value(&seed), "base seed, as run and sweep take it")(
      "set", po::value(&overrides)->composing(), "override a scenario value, as run takes it")(
      "deadline", po::value(&deadlines)->composing(), "run: as run takes it")(
      "compare-to", po::value(&compare_to), "run: as run takes it");
  po::options_description hidden;
  hidden.add_options()("input", po::value(&input));
  po::options_description all;
  all.add(named).add(hidden);
  po::positional_options_description positional;
  positional.add("input", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: prismsim slurm SCENARIO.yaml|SWEEP.yaml --shards N [--out DIR]\n"
                 "                      [--partition P] [--time T] [--cpus-per-task C] "
                 "[--account A] [--submit]\n"
                 "                      [--runs N] [--seed S] [--set PATH=VALUE]...\n\n"
              << named;
    return kExitOk;
  }
  if (input.empty()) throw UsageError("missing scenario or sweep file");
  if (!vm.count("shards")) throw UsageError("missing --shards N");
  if (shards < 1 || shards > 100000) throw UsageError("--shards must be between 1 and 100000");
  if (cpus < 1 || cpus > 1024) throw UsageError("--cpus-per-task must be between 1 and 1024");
  apply_run_options(vm, runs, seed, 0, overrides);
  const bool sweep = is_sweep_file(input);
  if (sweep && (!deadlines.empty() || !compare_to.empty())) {
    throw UsageError("--deadline and --compare-to are options of run, not of sweep");
  }
  // Load everything now: bad input is found before anything is queued.
  std::string fingerprint, name;
  uint64_t study_seed = 0;
  int study_runs = 0, points = 1;
  if (sweep) {
    const SweepIdentity id = sweep_identity(input, overrides);
    fingerprint = id.fingerprint;
    name = id.name;
    study_seed = id.seed;
    study_runs = id.runs;
    points = id.points;
  } else {
    const RunStudyInputs in = load_run_inputs(input, overrides, deadlines, compare_to);
    if (in.scenario.train.active()) {
      throw UsageError(
          "--shard does not take a scenario with simulation.train (the whole run "
          "needs every run's step times in one process): run it unsharded");
    }
    fingerprint = in.fingerprint;
    name = in.scenario.name;
    study_seed = in.scenario.simulation.seed;
    study_runs = in.scenario.simulation.runs;
  }
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::absolute(out, ec).lexically_normal();
  const std::filesystem::path scripts = dir / "slurm";
  std::filesystem::create_directories(scripts / "logs", ec);
  for (int k = 1; k <= shards && !ec; ++k) {
    std::filesystem::create_directories(dir / "shards" / std::to_string(k), ec);
  }
  if (ec || ::access(scripts.c_str(), W_OK) != 0) {
    throw UsageError(fmt::format("cannot write to output directory '{}'", out));
  }
  // Resuming: shards whose partial result of this study is complete are not queued again.
  std::vector<int> todo;
  for (int k = 1; k <= shards; ++k) {
    PartialResult identity = partial_identity(sweep ? "sweep" : "run", input, overrides, study_seed,
                                              study_runs, points, {k, shards}, fingerprint);
    identity.deadlines = deadlines;
    identity.compare_to = compare_to;
    const auto earlier = resumable_partial(dir / "shards" / std::to_string(k), identity);
    if (!earlier || !earlier->complete) todo.push_back(k);
  }

  char cwd_buffer[4096];
  const std::string cwd = ::getcwd(cwd_buffer, sizeof cwd_buffer) != nullptr ? cwd_buffer : ".";
  const std::string exe = own_executable();
  auto header = [&](const std::string& job_name) {
    std::string h = "#!/bin/bash\n";
    h += fmt::format("#SBATCH --job-name={}\n", job_name);
    h += fmt::format("#SBATCH --chdir={}\n", cwd);
    h += "#SBATCH --ntasks=1\n";
    h += fmt::format("#SBATCH --cpus-per-task={}\n", cpus);
    if (!partition.empty()) h += fmt::format("#SBATCH --partition={}\n", partition);
    if (!account.empty()) h += fmt::format("#SBATCH --account={}\n", account);
    if (!time.empty()) h += fmt::format("#SBATCH --time={}\n", time);
    for (const std::string& option : extra) h += fmt::format("#SBATCH {}\n", option);
    return h;
  };
  std::string args = shell_quoted(input);
  for (const std::string& o : overrides) args += " --set " + shell_quoted(o);
  for (const std::string& d : deadlines) args += " --deadline " + shell_quoted(d);
  if (!compare_to.empty()) args += " --compare-to " + shell_quoted(compare_to);
  const std::string job = "prismsim-" + name;
  const std::string shards_dir = (dir / "shards").string();
  const std::string logs = (scripts / "logs").string();
  std::string array = header(job);
  array += fmt::format("#SBATCH --array=1-{}\n", shards);
  array += fmt::format("#SBATCH --output={}/shard-%a.out\n#SBATCH --open-mode=append\n", logs);
  // SIGTERM to prismsim (B: the batch shell, which exec makes prismsim) 2 minutes before the
  // limit: it stops its runs, writes the finished ones and exits 143; a rerun resumes.
  array += "#SBATCH --signal=B:TERM@120\n";
  array += fmt::format(
      "# prismsim slurm: shard $SLURM_ARRAY_TASK_ID of {} of {} ({}), study {}.\n"
      "# A shard whose partial result of this study is complete is not run again; an\n"
      "# interrupted one resumes.\n"
      "set -u\n"
      "k=$SLURM_ARRAY_TASK_ID\n"
      "dir={}/$k\n"
      "if grep -qx \"$(printf 'study\\t{}')\" \"$dir/{}\" 2>/dev/null &&\n"
      "   grep -qx \"$(printf 'complete\\t1')\" \"$dir/{}\"; then\n"
      "  echo \"prismsim: shard $k/{} is already complete in $dir\"\n"
      "  exit 0\n"
      "fi\n"
      "exec {} {} {} --shard \"$k/{}\" --out \"$dir\" --jobs {}\n",
      shards, input, sweep ? "sweep" : "run", fingerprint, shell_quoted(shards_dir), fingerprint,
      kPartialResultFile, kPartialResultFile, shards, shell_quoted(exe), sweep ? "sweep" : "run",
      args, shards, cpus);
  std::string merge = header(job + "-merge");
  merge += fmt::format("#SBATCH --output={}/merge.out\n#SBATCH --open-mode=append\n", logs);
  merge += fmt::format(
      "# prismsim slurm: merges the {} shards of {} into {} (after every shard succeeded).\n"
      "set -u\n"
      "exec {} merge $(seq -f {} 1 {}) --out {}\n",
      shards, input, dir.string(), shell_quoted(exe), shell_quoted(shards_dir + "/%.0f"), shards,
      shell_quoted(dir.string()));
  const std::string array_path = (scripts / "shards.sbatch").string();
  const std::string merge_path = (scripts / "merge.sbatch").string();
  const std::string submit_path = (scripts / "submit.sh").string();
  // The array submitted holds only the shards still to do (all of them the first time).
  std::string submit_script = fmt::format(
      "#!/bin/bash\n"
      "# prismsim slurm: submits the shards still to do, then the merge after them (afterok).\n"
      "set -eu\n"
      "sbatch={}\n",
      shell_quoted(sbatch));
  if (todo.empty()) {
    submit_script += fmt::format(
        "merge=$($sbatch --parsable {})\n"
        "echo \"prismsim: every shard is complete; submitted the merge as job ${{merge%%;*}}\"\n",
        shell_quoted(merge_path));
  } else {
    submit_script += fmt::format(
        "array=$($sbatch --parsable --array={} {})\n"
        "array=${{array%%;*}}\n"
        "merge=$($sbatch --parsable --dependency=afterok:$array --kill-on-invalid-dep=yes {})\n"
        "echo \"prismsim: submitted {} shard(s) as job array $array and the merge as job "
        "${{merge%%;*}}\"\n",
        array_ranges(todo), shell_quoted(array_path), shell_quoted(merge_path), todo.size());
  }
  write_file(array_path, array);
  write_file(merge_path, merge);
  write_file(submit_path, submit_script);
  std::filesystem::permissions(submit_path, std::filesystem::perms::owner_exec,
                               std::filesystem::perm_options::add, ec);
  std::cout << fmt::format("{} {}: {} shards of {} ({} to do), study {}\nwrote {}, {}, {}\n",
                           sweep ? "sweep" : "scenario", input, shards,
                           sweep ? fmt::format("{} points x {} runs", points, study_runs)
                                 : fmt::format("{} runs", study_runs),
                           todo.size(), fingerprint, array_path, merge_path, submit_path);
  if (!submit) {
    std::cout << fmt::format("submit with: bash {}\n", submit_path);
    return kExitOk;
  }
  std::cout.flush();
  const int status = std::system(fmt::format("bash {}", shell_quoted(submit_path)).c_str());
  if (status != 0) {
    std::cerr << fmt::format(
        "prismsim: error: submitting failed ({}): bash {}\n",
        WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status)) : std::string("killed"),
        submit_path);
    return kExitRunFailed;
  }
  return kExitOk;
}

}  // namespace prismsim
