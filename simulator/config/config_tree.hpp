#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostics.hpp"

namespace prismsim {

/// The most values (scalars, lists, maps, nulls) one YAML file may hold, each alias counting the
/// values of what it repeats: far above any scenario, far below what exhausts memory.
constexpr size_t kMaxConfigValues = 1'000'000;

struct ConfigEntry;

/// A YAML value with its source position, read once from a file (or a --set override).
/// Keeps map entries in file order, so diagnostics and outputs are deterministic.
struct ConfigNode {
  enum class Kind { Null, Scalar, Sequence, Map };

  Kind kind = Kind::Null;
  std::string scalar;                ///< text of a scalar
  std::vector<ConfigNode> items;     ///< elements of a sequence
  std::vector<ConfigEntry> entries;  ///< entries of a map, in file order
  SourceLoc loc;

  bool is_map() const { return kind == Kind::Map; }
  bool is_scalar() const { return kind == Kind::Scalar; }
  bool is_sequence() const { return kind == Kind::Sequence; }
  /// The value of `key` in a map, or nullptr.
  const ConfigNode* find(std::string_view key) const;
  ConfigNode* find(std::string_view key);
};

struct ConfigEntry {
  std::string key;
  SourceLoc key_loc;
  ConfigNode value;
};

/// How a kind of node reads in messages: "nothing", "a single value", "a list", "a map".
const char* kind_name(ConfigNode::Kind kind);

/// Reads a YAML file into a ConfigNode tree. Duplicate keys and non-scalar keys are reported to
/// `diags`; unreadable files (missing, not regular files, over kMaxConfigFileBytes) throw
/// InputError located at `included_from`; syntax errors, a second document and more than
/// kMaxConfigValues values (aliases expanded) throw InputError located in the file.
ConfigNode load_yaml_file(const std::string& path, const SourceLoc& included_from,
                          Diagnostics& diags);

/// Parses YAML text (a --set value); positions are reported as `label`:`line`:`column + offset`.
ConfigNode parse_yaml_text(const std::string& text, const std::string& label, int line,
                           int column_offset, Diagnostics& diags);

/// Replaces the scalar values of `keys` in the map `root` by the trees of the files they name
/// (paths relative to the file that names them). Throws InputError on unreadable files.
void resolve_includes(ConfigNode& root, const std::vector<std::string>& keys, Diagnostics& diags);

/// Applies one "dotted.path=value" override (the index-th --set, 1-based). Creates missing map
/// keys (validation later rejects unknown ones); list elements are addressed by number.
/// Throws InputError when the path cannot be followed.
void apply_override(ConfigNode& root, const std::string& assignment, int index, Diagnostics& diags);

/// The directory part of a path ("" for a bare file name).
std::string parent_directory(const std::string& path);

}  // namespace prismsim
