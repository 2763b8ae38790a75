#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config_tree.hpp"
#include "config/limits.hpp"
#include "core/diagnostics.hpp"

namespace prismsim {

/// Parses a scalar into a value in SI units, or returns nullopt with a reason.
using QuantityParser = std::optional<double> (*)(std::string_view, std::string*);

/// Typed, strict access to one YAML map. Every key read is remembered; `finish` reports the
/// others as unknown (with a suggestion). Errors go to the shared Diagnostics, and a reader
/// keeps going so that one pass reports everything.
class MapReader {
 public:
  /// `path` is the dotted name of the map in the scenario ("platform.node").
  MapReader(const ConfigNode& node, std::string path, Diagnostics& diags);

  /// The node of `key`, or nullptr (reporting it when `required`).
  const ConfigNode* get(std::string_view key, bool required);

  std::optional<std::string> string(std::string_view key, bool required);
  /// An integer in [min_value, max_value] (by default, anything an int holds).
  std::optional<int64_t> integer(std::string_view key, bool required, int64_t min_value,
                                 int64_t max_value = std::numeric_limits<int>::max());
  /// true/false (YAML's spellings: true, false, yes, no, on, off).
  std::optional<bool> boolean(std::string_view key, bool required);
  std::optional<double> number(std::string_view key, bool required, double min_value,
                               bool min_exclusive);
  /// A number in `range`.
  std::optional<double> number(std::string_view key, bool required, const ValueRange& range);
  std::optional<double> quantity(std::string_view key, bool required, QuantityParser parser);
  /// A quantity in `range`.
  std::optional<double> quantity(std::string_view key, bool required, QuantityParser parser,
                                 const ValueRange& range);
  /// A quantity that must be greater than zero.
  std::optional<double> positive_quantity(std::string_view key, bool required,
                                          QuantityParser parser);
  /// One of `choices`; returns its index.
  std::optional<size_t> choice(std::string_view key, bool required,
                               const std::vector<std::string>& choices);
  /// A nested map, for a child reader; nullptr if absent or not a map (reported).
  const ConfigNode* map(std::string_view key, bool required);
  /// A nested list; nullptr if absent or not a list (reported).
  const ConfigNode* list(std::string_view key, bool required);

  /// Dotted path of `key` in this map.
  std::string path_of(std::string_view key) const;
  const SourceLoc& loc() const { return node_.loc; }
  /// Dotted path of this map.
  const std::string& path() const { return path_; }
  bool valid() const { return valid_; }
  Diagnostics& diags() { return diags_; }

  /// Reports keys that were never read.
  void finish();

 private:
  const ConfigNode* scalar_node(std::string_view key, bool required, const char* what);

  const ConfigNode& node_;
  std::string path_;
  Diagnostics& diags_;
  bool valid_ = true;
  std::vector<std::string> known_;
};

/// Stores a value read by a MapReader into `field` when there is one (absent or invalid: the
/// field keeps its default).
template <typename T, typename U>
void assign(T& field, const std::optional<U>& value) {
  if (value) field = static_cast<T>(*value);
}

/// `value` (read from `node`) when it lies in `range`; else reports it and returns nullopt.
std::optional<double> in_range(const ConfigNode& node, const std::string& path,
                               std::optional<double> value, const ValueRange& range,
                               Diagnostics& diags);

/// Reads a scalar node as a quantity; reports and returns nullopt when invalid.
std::optional<double> read_quantity(const ConfigNode& node, const std::string& path,
                                    QuantityParser parser, Diagnostics& diags);

}  // namespace prismsim
