#include "config/map_reader.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "core/units.hpp"

namespace prismsim {

MapReader::MapReader(const ConfigNode& node, std::string path, Diagnostics& diags)
    : node_(node), path_(std::move(path)), diags_(diags) {
  if (!node_.is_map()) {
    valid_ = false;
    diags_.error(node_.loc, fmt::format("'{}' must be a map of keys, got {}",
                                        path_.empty() ? "scenario" : path_, kind_name(node.kind)));
  }
}

std::string MapReader::path_of(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const ConfigNode* MapReader::get(std::string_view key, bool required) {
  known_.emplace_back(key);
  if (!valid_) return nullptr;
  const ConfigNode* value = node_.find(key);
  if (value == nullptr && required) {
    diags_.error(node_.loc, fmt::format("missing required key '{}'", path_of(key)));
  }
  return value;
}

const ConfigNode* MapReader::scalar_node(std::string_view key, bool required, const char* what) {
  const ConfigNode* value = get(key, required);
  if (value == nullptr) return nullptr;
  if (!value->is_scalar()) {
    diags_.error(value->loc, fmt::format("'{}' must be {}, got {}", path_of(key), what,
                                         kind_name(value->kind)));
    return nullptr;
  }
  return value;
}

std::optional<std::string> MapReader::string(std::string_view key, bool required) {
  const ConfigNode* value = scalar_node(key, required, "a string");
  if (value == nullptr) return std::nullopt;
  if (value->scalar.empty()) {
    diags_.error(value->loc, fmt::format("'{}' must not be empty", path_of(key)));
    return std::nullopt;
  }
  return value->scalar;
}

std::optional<int64_t> MapReader::integer(std::string_view key, bool required, int64_t min_value,
                                          int64_t max_value) {
  const ConfigNode* value = scalar_node(key, required, "an integer");
  if (value == nullptr) return std::nullopt;
  const std::string& text = value->scalar;
  int64_t result = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), result);
  if (ec == std::errc::result_out_of_range) {
    diags_.error(value->loc, fmt::format("'{}' is out of range, got '{}'", path_of(key), text));
    return std::nullopt;
  }
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    diags_.error(value->loc, fmt::format("'{}' must be an integer, got '{}'", path_of(key), text));
    return std::nullopt;
  }
  if (result < min_value) {
    diags_.error(value->loc,
                 fmt::format("'{}' must be at least {}, got {}", path_of(key), min_value, result));
    return std::nullopt;
  }
  if (result > max_value) {
    diags_.error(value->loc,
                 fmt::format("'{}' must be at most {}, got {}", path_of(key), max_value, result));
    return std::nullopt;
  }
  return result;
}

std::optional<bool> MapReader::boolean(std::string_view key, bool required) {
  const ConfigNode* value = scalar_node(key, required, "true or false");
  if (value == nullptr) return std::nullopt;
  const std::string& t = value->scalar;
  if (t == "true" || t == "True" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "False" || t == "no" || t == "off") return false;
  diags_.error(value->loc, fmt::format("'{}' must be true or false, got '{}'", path_of(key), t));
  return std::nullopt;
}

std::optional<double> MapReader::number(std::string_view key, bool required, double min_value,
                                        bool min_exclusive) {
  const ConfigNode* value = scalar_node(key, required, "a number");
  if (value == nullptr) return std::nullopt;
  const std::string& text = value->scalar;
  double result = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), result);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(result)) {
    diags_.error(value->loc, fmt::format("'{}' must be a number, got '{}'", path_of(key), text));
    return std::nullopt;
  }
  if (result < min_value || (min_exclusive && result == min_value)) {
    diags_.error(value->loc,
                 fmt::format("'{}' must be {} {}, got {}", path_of(key),
                             min_exclusive ? "greater than" : "at least", min_value, text));
    return std::nullopt;
  }
  return result;
}

std::optional<double> MapReader::number(std::string_view key, bool required,
                                        const ValueRange& range) {
  const auto value = number(key, required, std::numeric_limits<double>::lowest(), false);
  if (!value) return value;
  return in_range(*node_.find(key), path_of(key), value, range, diags_);
}

std::optional<double> in_range(const ConfigNode& node, const std::string& path,
                               std::optional<double> value, const ValueRange& range,
                               Diagnostics& diags) {
  if (!value) return value;
  const bool low = range.min_exclusive ? !(*value > range.min) : !(*value >= range.min);
  if (!low && *value <= range.max) return value;
  diags.error(node.loc, fmt::format("'{}' must be {} {} and at most {}, got '{}'", path,
                                    range.min_exclusive ? "greater than" : "at least",
                                    range.min_text, range.max_text, node.scalar));
  return std::nullopt;
}

std::optional<double> read_quantity(const ConfigNode& node, const std::string& path,
                                    QuantityParser parser, Diagnostics& diags) {
  if (!node.is_scalar()) {
    diags.error(node.loc,
                fmt::format("'{}' must be a single value, got {}", path, kind_name(node.kind)));
    return std::nullopt;
  }
  std::string reason;
  auto result = parser(node.scalar, &reason);
  if (!result) {
    diags.error(node.loc,
                fmt::format("invalid value '{}' for '{}': {}", node.scalar, path, reason));
  }
  return result;
}

std::optional<double> MapReader::quantity(std::string_view key, bool required,
                                          QuantityParser parser) {
  const ConfigNode* value = get(key, required);
  if (value == nullptr) return std::nullopt;
  return read_quantity(*value, path_of(key), parser, diags_);
}

std::optional<double> MapReader::quantity(std::string_view key, bool required,
                                          QuantityParser parser, const ValueRange& range) {
  const auto value = quantity(key, required, parser);
  if (!value) return value;
  return in_range(*node_.find(key), path_of(key), value, range, diags_);
}

std::optional<double> MapReader::positive_quantity(std::string_view key, bool required,
                                                   QuantityParser parser) {
  auto value = quantity(key, required, parser);
  if (value && *value <= 0) {
    diags_.error(node_.find(key)->loc, fmt::format("'{}' must be positive, got '{}'", path_of(key),
                                                   node_.find(key)->scalar));
    return std::nullopt;
  }
  return value;
}

std::optional<size_t> MapReader::choice(std::string_view key, bool required,
                                        const std::vector<std::string>& choices) {
  const ConfigNode* value = scalar_node(key, required, "a name");
  if (value == nullptr) return std::nullopt;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choices[i] == value->scalar) return i;
  }
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  const std::string near = closest_match(value->scalar, choices);
  diags_.error(
      value->loc,
      fmt::format("invalid value '{}' for '{}': expected one of {}{}", value->scalar, path_of(key),
                  list, near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
  return std::nullopt;
}

const ConfigNode* MapReader::map(std::string_view key, bool required) {
  const ConfigNode* value = get(key, required);
  if (value == nullptr) return nullptr;
  if (!value->is_map()) {
    diags_.error(value->loc, fmt::format("'{}' must be a map of keys, got {}", path_of(key),
                                         kind_name(value->kind)));
    return nullptr;
  }
  return value;
}

const ConfigNode* MapReader::list(std::string_view key, bool required) {
  const ConfigNode* value = get(key, required);
  if (value == nullptr) return nullptr;
  if (!value->is_sequence()) {
    diags_.error(value->loc,
                 fmt::format("'{}' must be a list, got {}", path_of(key), kind_name(value->kind)));
    return nullptr;
  }
  return value;
}

void MapReader::finish() {
  if (!valid_) return;
  for (const auto& entry : node_.entries) {
    bool known = false;
    for (const auto& k : known_) known = known || k == entry.key;
    if (known) continue;
    const std::string near = closest_match(entry.key, known_);
    diags_.error(entry.key_loc,
                 fmt::format("unknown key '{}'{}", path_of(entry.key),
                             near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
  }
}

}  // namespace prismsim
