#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prismsim {

/// The fields of one line of a text table. A space separator splits on runs of whitespace; any
/// other separator (CSV's comma) gives one field per separator, empty ones included. A trailing
/// '\r' (a CRLF file) is dropped first.
std::vector<std::string> split_fields(std::string_view line, char separator);

/// `text` as a number when the whole of it is one (strtod's syntax), else nothing; numbers too
/// large for a double give nothing, numbers below its normal range their (subnormal) value.
std::optional<double> parse_number(std::string_view text);

/// Whether `x` is a whole number from `lo` to `hi`: a count that fits the integer it will become.
bool is_whole_in(double x, double lo, double hi);

/// Whether `name` matches `pattern`: equal to it, or starting with it less its final '*'.
bool matches_name_pattern(std::string_view pattern, std::string_view name);

/// Seconds for humans: 4 significant digits with a unit that suits the magnitude ("419.2 ms").
std::string human_seconds(double s);

}  // namespace prismsim
