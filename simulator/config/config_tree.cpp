#include "config/config_tree.hpp"

#include <filesystem>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

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

ConfigNode convert(const YAML::Node& node, const Origin& origin, Diagnostics& diags) {
  ConfigNode out;
  out.loc = location(origin, node.Mark());
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      out.kind = ConfigNode::Kind::Null;
      break;
    case YAML::NodeType::Scalar:
      out.kind = ConfigNode::Kind::Scalar;
      out.scalar = node.Scalar();
      break;
    case YAML::NodeType::Sequence:
      out.kind = ConfigNode::Kind::Sequence;
      for (const auto& item : node) out.items.push_back(convert(item, origin, diags));
      break;
    case YAML::NodeType::Map: {
      out.kind = ConfigNode::Kind::Map;
      std::map<std::string, int> first_line;
      for (const auto& pair : node) {
        const SourceLoc key_loc = location(origin, pair.first.Mark());
        if (!pair.first.IsScalar()) {
          diags.error(key_loc, "keys must be plain names");
          continue;
        }
        const std::string key = pair.first.Scalar();
        auto [it, inserted] = first_line.emplace(key, key_loc.line);
        if (!inserted) {
          diags.error(key_loc, fmt::format("duplicate key '{}' (first defined at line {})", key,
                                           it->second));
          continue;
        }
        out.entries.push_back({key, key_loc, convert(pair.second, origin, diags)});
      }
      break;
    }
  }
  return out;
}

ConfigNode parse(const std::string& text, const Origin& origin, Diagnostics& diags) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    // yaml-cpp messages are lowercase already ("end of sequence flow not found").
    diags.error(location(origin, e.mark), fmt::format("invalid YAML: {}", e.msg));
    diags.throw_if_any();
  }
  ConfigNode tree = convert(root, origin, diags);
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
  const auto text = read_file(path, &reason);
  if (!text) {
    diags.error(included_from, fmt::format("cannot read '{}': {}", path, reason));
    diags.throw_if_any();
  }
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
    case ConfigNode::Kind::Null: return "nothing";
    case ConfigNode::Kind::Scalar: return "a single value";
    case ConfigNode::Kind::Sequence: return "a list";
    case ConfigNode::Kind::Map: return "a map";
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
