#include "config/config_tree.hpp"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "core/files.hpp"

namespace prismsim {

const ConfigNode* ConfigNode::find(std::string_view key) const {
  for (const auto& entry : entries) {
    if (entry.key == key) return &entry.value;
  }
  return nullptr;
}

ConfigNode* ConfigNode::find(std::string_view key) {
  for (auto& entry : entries) {
    if (entry.key == key) return &entry.value;
  }
  return nullptr;
}

namespace {

struct Origin {
  std::shared_ptr<const std::string> file;
  int line_offset = 0;    // added to yaml-cpp's 0-based line
  int column_offset = 0;  // added to yaml-cpp's 0-based column on the first line
};

SourceLoc location(const Origin& origin, const YAML::Mark& mark) {
  if (mark.line < 0) return SourceLoc{origin.file, 0, 0};
  const int column = mark.column + 1 + (mark.line == 0 ? origin.column_offset : 0);
  return SourceLoc{origin.file, mark.line + 1 + origin.line_offset, column};
}

/// Thrown by the handler to stop yaml-cpp's parser; the diagnostic is already collected.
struct StopParsing {};

/// Builds a ConfigNode tree from yaml-cpp's parser events, without yaml-cpp's node graph: values
/// are counted as they come, aliases included (each copies its anchor's tree), so that a small
/// file of nested aliases cannot expand to billions of values before anything is checked.
class TreeBuilder : public YAML::EventHandler {
 public:
  TreeBuilder(const Origin& origin, Diagnostics& diags) : origin_(origin), diags_(diags) {}

  ConfigNode take_root() { return std::move(root_); }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnAnchor(const YAML::Mark&, const std::string& name) override { anchor_name_ = name; }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    open(mark, ConfigNode::Kind::Null, anchor);
    close();
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    open(mark, ConfigNode::Kind::Scalar, anchor);
    stack_.back().node.scalar = value;
    close();
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, ConfigNode::Kind::Sequence, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, ConfigNode::Kind::Map, anchor);
  }
  void OnMapEnd() override { close(); }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto it = anchors_.find(anchor);
    if (it == anchors_.end()) {  // yaml-cpp rejects unknown anchors: this one is still open
      fail(mark, fmt::format("alias{} refers to a value that holds it", name_of(anchor)));
    }
    count(mark, it->second.size, anchor);
    add(ConfigNode(it->second.node), it->second.size);
  }

 private:
  struct Frame {
    ConfigNode node;
    YAML::anchor_t anchor = YAML::NullAnchor;
    size_t size = 1;                        ///< values in this subtree, itself included
    std::optional<ConfigNode> key;          ///< a map's key waiting for its value
    std::map<std::string, int> first_line;  ///< a map's keys, for duplicates
  };
  struct Anchored {
    ConfigNode node;
    size_t size = 0;
  };

  [[noreturn]] void fail(const YAML::Mark& mark, std::string message) {
    diags_.error(location(origin_, mark), std::move(message));
    throw StopParsing{};
  }

  std::string name_of(YAML::anchor_t anchor) const {
    const auto it = names_.find(anchor);
    return it == names_.end() ? "" : fmt::format(" '*{}'", it->second);
  }

  void count(const YAML::Mark& mark, size_t values, YAML::anchor_t alias) {
    values_ += values;
    if (values_ <= kMaxConfigValues) return;
    fail(mark, alias == YAML::NullAnchor
                   ? fmt::format("more than {} values in one file", kMaxConfigValues)
                   : fmt::format("alias{} makes the file hold more than {} values (an alias "
                                 "counts the values it repeats)",
                                 name_of(alias), kMaxConfigValues));
  }

  void open(const YAML::Mark& mark, ConfigNode::Kind kind, YAML::anchor_t anchor) {
    count(mark, 1, YAML::NullAnchor);
    if (anchor != YAML::NullAnchor && !anchor_name_.empty()) names_[anchor] = anchor_name_;
    anchor_name_.clear();
    Frame frame;
    frame.node.kind = kind;
    frame.node.loc = location(origin_, mark);
    frame.anchor = anchor;
    stack_.push_back(std::move(frame));
  }

  void close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    if (frame.anchor != YAML::NullAnchor) anchors_[frame.anchor] = {frame.node, frame.size};
    add(std::move(frame.node), frame.size);
  }

  /// Adds a finished value to the collection being built, or makes it the document.
  void add(ConfigNode node, size_t size) {
    if (stack_.empty()) {
      root_ = std::move(node);
      return;
    }
    Frame& parent = stack_.back();
    parent.size += size;
    if (parent.node.is_sequence()) {
      parent.node.items.push_back(std::move(node));
      return;
    }
    if (!parent.key) {
      parent.key = std::move(node);
      return;
    }
    ConfigNode key = std::move(*parent.key);
    parent.key.reset();
    if (!key.is_scalar()) {
      diags_.error(key.loc, "keys must be plain names");
      return;
    }
    auto [it, inserted] = parent.first_line.emplace(key.scalar, key.loc.line);
    if (!inserted) {
      diags_.error(key.loc, fmt::format("duplicate key '{}' (first defined at line {})", key.scalar,
                                        it->second));
      return;
    }
    parent.node.entries.push_back({std::move(key.scalar), key.loc, std::move(node)});
  }

  const Origin& origin_;
  Diagnostics& diags_;
  std::vector<Frame> stack_;
  ConfigNode root_;
  std::map<YAML::anchor_t, Anchored> anchors_;
  std::map<YAML::anchor_t, std::string> names_;
  std::string anchor_name_;
  size_t values_ = 0;
};

/// Where a second document starts.
struct SecondDocumentAt {
  YAML::Mark mark;
};

/// Stops at the start of a second document.
class SecondDocument : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { throw SecondDocumentAt{mark}; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

ConfigNode parse(const std::string& text, const Origin& origin, Diagnostics& diags) {
  std::istringstream in(text);
  TreeBuilder builder(origin, diags);
  bool fatal = true;  // until the parser has read one whole document and nothing after it
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(builder);
    SecondDocument second;
    parser.HandleNextDocument(second);
    fatal = false;
  } catch (const SecondDocumentAt& second) {
    diags.error(location(origin, second.mark),
                "a second YAML document starts here; a file holds one document");
  } catch (const YAML::ParserException& e) {
    // yaml-cpp messages are lowercase already ("end of sequence flow not found").
    diags.error(location(origin, e.mark), fmt::format("invalid YAML: {}", e.msg));
  } catch (const StopParsing&) {
  }
  if (fatal) diags.throw_if_any();
  ConfigNode tree = builder.take_root();
  if (tree.kind == ConfigNode::Kind::Null) tree.loc = SourceLoc{origin.file, 1, 1};
  return tree;
}

}  // namespace

std::string parent_directory(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

ConfigNode load_yaml_file(const std::string& path, const SourceLoc& included_from,
                          Diagnostics& diags) {
  std::string reason;
  const auto text = read_file(path, &reason, kMaxConfigFileBytes);
  if (!text) {
    diags.error(included_from, fmt::format("cannot read {}: {}", quoted_path(path), reason));
    diags.throw_if_any();
  }
  diags.read_input(path, *text);
  Origin origin{std::make_shared<const std::string>(path), 0, 0};
  return parse(*text, origin, diags);
}

ConfigNode parse_yaml_text(const std::string& text, const std::string& label, int line,
                           int column_offset, Diagnostics& diags) {
  Origin origin{std::make_shared<const std::string>(label), line - 1, column_offset};
  return parse(text, origin, diags);
}

const char* kind_name(ConfigNode::Kind kind) {
  switch (kind) {
    case ConfigNode::Kind::Null:
      return "nothing";
    case ConfigNode::Kind::Scalar:
      return "a single value";
    case ConfigNode::Kind::Sequence:
      return "a list";
    case ConfigNode::Kind::Map:
      return "a map";
  }
  return "?";
}

void resolve_includes(ConfigNode& root, const std::vector<std::string>& keys, Diagnostics& diags) {
  if (!root.is_map()) return;
  for (const auto& key : keys) {
    ConfigNode* value = root.find(key);
    if (value == nullptr || !value->is_scalar()) continue;
    const std::string base = value->loc.file ? parent_directory(*value->loc.file) : "";
    const std::string path =
        (std::filesystem::path(base) / value->scalar).lexically_normal().string();
    *value = load_yaml_file(path, value->loc, diags);
  }
}

void apply_override(ConfigNode& root, const std::string& assignment, int index,
                    Diagnostics& diags) {
  const std::string label = "--set";
  const auto shared_label = std::make_shared<const std::string>(label);
  const size_t equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0) {
    diags.error(SourceLoc{shared_label, index, 1},
                fmt::format("expected PATH=VALUE, got '{}'", assignment));
    diags.throw_if_any();
  }
  const std::string path = assignment.substr(0, equals);
  const std::string text = assignment.substr(equals + 1);

  ConfigNode* node = &root;
  std::string walked;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string segment = path.substr(start, dot == std::string::npos ? dot : dot - start);
    const SourceLoc here{shared_label, index, static_cast<int>(start) + 1};
    const std::string where = walked.empty() ? "the scenario" : "'" + walked + "'";
    if (segment.empty()) {
      diags.error(here, fmt::format("empty name in path '{}'", path));
      diags.throw_if_any();
    }
    walked += (walked.empty() ? "" : ".") + segment;
    ConfigNode* next = nullptr;
    if (node->is_sequence()) {
      char* end = nullptr;
      const long i = std::strtol(segment.c_str(), &end, 10);
      if (*end != '\0' || i < 0 || static_cast<size_t>(i) >= node->items.size()) {
        diags.error(here, fmt::format("unknown path '{}': {} is a list of {} element(s)", path,
                                      where, node->items.size()));
        diags.throw_if_any();
      }
      next = &node->items[static_cast<size_t>(i)];
    } else if (node->is_map() || node->kind == ConfigNode::Kind::Null) {
      if (node->kind == ConfigNode::Kind::Null) node->kind = ConfigNode::Kind::Map;
      next = node->find(segment);
      if (next == nullptr) {
        node->entries.push_back({segment, here, ConfigNode{}});
        next = &node->entries.back().value;
        next->loc = here;
      }
    } else {
      diags.error(here, fmt::format("unknown path '{}': '{}' is a single value", path,
                                    walked.substr(0, walked.size() - segment.size() - 1)));
      diags.throw_if_any();
    }
    node = next;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  *node = parse_yaml_text(text, label, index, static_cast<int>(equals) + 1, diags);
  diags.throw_if_any();
}

}  // namespace prismsim
