#include "core/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>
#include <vector>

namespace prismsim::units {
namespace {

struct Unit {
  std::string suffix;
  double factor;
};

/// Splits "12.5 Gbps" into the number and the suffix; fails on a missing or malformed number.
bool split_number(std::string_view text, double* value, std::string_view* suffix) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, *value);
  if (ec != std::errc() || !std::isfinite(*value)) return false;
  std::string_view rest(ptr, static_cast<size_t>(end - ptr));
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front())))
    rest.remove_prefix(1);
  *suffix = rest;
  return true;
}

std::optional<double> parse_with(std::string_view text, const std::vector<Unit>& table,
                                 bool unit_required, const char* what, const char* example,
                                 std::string* error) {
  double value = 0;
  std::string_view suffix;
  if (!split_number(text, &value, &suffix)) {
    *error = std::string("expected a ") + what + " such as '" + example + "'";
    return std::nullopt;
  }
  if (suffix.empty()) {
    if (!unit_required) return value;
    *error = std::string("missing unit in ") + what + " (write it as e.g. '" + example + "')";
    return std::nullopt;
  }
  for (const auto& unit : table) {
    if (suffix != unit.suffix) continue;
    if (!std::isfinite(value * unit.factor)) {
      *error = std::string(what) + " out of range";
      return std::nullopt;
    }
    return value * unit.factor;
  }
  *error = std::string("unknown unit '") + std::string(suffix) + "' in " + what + " (e.g. '" +
           example + "')";
  return std::nullopt;
}

std::vector<Unit> prefixed(const std::vector<std::string_view>& bases, double base_factor,
                           bool lower_k) {
  // Decimal prefixes; both "k" and "K" are accepted for kilo where `lower_k` allows it.
  static const std::vector<std::pair<std::string_view, double>> prefixes = {
      {"", 1.0},  {"k", 1e3},  {"K", 1e3},  {"M", 1e6},
      {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18}};
  std::vector<Unit> table;
  for (const auto& [prefix, factor] : prefixes) {
    if (prefix == "k" && !lower_k) continue;
    for (const auto& base : bases) {
      table.push_back({std::string(prefix) + std::string(base), factor * base_factor});
    }
  }
  return table;
}

}  // namespace

std::optional<double> parse_bandwidth(std::string_view text, std::string* error) {
  static const std::vector<Unit> table = [] {
    auto bits = prefixed({"bps", "b/s", "bit/s"}, 1.0 / 8.0, true);
    auto bytes = prefixed({"Bps", "B/s"}, 1.0, true);
    bits.insert(bits.end(), bytes.begin(), bytes.end());
    for (auto& [prefix, factor] :
         std::vector<std::pair<const char*, double>>{{"KiBps", 1024.0},
                                                     {"MiBps", 1048576.0},
                                                     {"GiBps", 1073741824.0},
                                                     {"KiB/s", 1024.0},
                                                     {"MiB/s", 1048576.0},
                                                     {"GiB/s", 1073741824.0}}) {
      bits.push_back({prefix, factor});
    }
    return bits;
  }();
  auto value = parse_with(text, table, true, "bandwidth", "400Gbps", error);
  if (value && *value <= 0) {
    *error = "bandwidth must be positive";
    return std::nullopt;
  }
  return value;
}

std::optional<double> parse_duration(std::string_view text, std::string* error) {
  static const std::vector<Unit> table = {{"ns", 1e-9},  {"us", 1e-6},  {"ms", 1e-3},  {"s", 1.0},
                                          {"min", 60.0}, {"h", 3600.0}, {"d", 86400.0}};
  auto value = parse_with(text, table, true, "duration", "5us", error);
  if (value && *value < 0) {
    *error = "duration must not be negative";
    return std::nullopt;
  }
  return value;
}

std::optional<double> parse_bytes(std::string_view text, std::string* error) {
  static const std::vector<Unit> table = [] {
    auto decimal = prefixed({"B"}, 1.0, true);
    for (auto& [suffix, factor] :
         std::vector<std::pair<const char*, double>>{{"KiB", 1024.0},
                                                     {"MiB", 1048576.0},
                                                     {"GiB", 1073741824.0},
                                                     {"TiB", 1099511627776.0},
                                                     {"PiB", 1125899906842624.0}}) {
      decimal.push_back({suffix, factor});
    }
    return decimal;
  }();
  auto value = parse_with(text, table, false, "size", "80GiB", error);
  if (value && *value < 0) {
    *error = "size must not be negative";
    return std::nullopt;
  }
  return value;
}

std::optional<double> parse_flop_rate(std::string_view text, std::string* error) {
  static const std::vector<Unit> table =
      prefixed({"flops", "flop/s", "FLOPS", "FLOP/s"}, 1.0, false);
  auto value = parse_with(text, table, true, "compute rate", "989Tflops", error);
  if (value && *value <= 0) {
    *error = "compute rate must be positive";
    return std::nullopt;
  }
  return value;
}

std::optional<double> parse_flops(std::string_view text, std::string* error) {
  static const std::vector<Unit> table = prefixed({"flop", "FLOP"}, 1.0, false);
  auto value = parse_with(text, table, false, "amount of work", "1.2Tflop", error);
  if (value && *value < 0) {
    *error = "amount of work must not be negative";
    return std::nullopt;
  }
  return value;
}

std::optional<double> parse_distance_km(std::string_view text, std::string* error) {
  static const std::vector<Unit> table = {{"km", 1.0}, {"m", 1e-3}, {"mi", 1.609344}};
  auto value = parse_with(text, table, true, "distance", "100km", error);
  if (value && *value < 0) {
    *error = "distance must not be negative";
    return std::nullopt;
  }
  return value;
}

std::optional<double> parse_count(std::string_view text, std::string* error) {
  static const std::vector<Unit> table = {{"K", 1e3}, {"k", 1e3}, {"M", 1e6},
                                          {"G", 1e9}, {"B", 1e9}, {"T", 1e12}};
  return parse_with(text, table, false, "count", "50M", error);
}

std::optional<Deadline> parse_deadline(std::string_view text, std::string* error) {
  if (!text.empty() && text.back() == 'x') {
    static const std::vector<Unit> table = {{"x", 1.0}};
    auto multiple = parse_with(text, table, true, "multiple", "1.1x", error);
    if (!multiple) return std::nullopt;
    if (*multiple <= 0) {
      *error = "a deadline's multiple must be positive";
      return std::nullopt;
    }
    return Deadline{0, *multiple};
  }
  auto seconds = parse_duration(text, error);
  if (!seconds) {
    *error += "; or a multiple of the deterministic job time such as '1.1x'";
    return std::nullopt;
  }
  if (*seconds <= 0) {
    *error = "a deadline must be positive";
    return std::nullopt;
  }
  return Deadline{*seconds, 0};
}

}  // namespace prismsim::units
