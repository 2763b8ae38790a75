#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace prismsim {

/// Parsers for quantities written as users write them ("400Gbps", "5us", "80GiB", "989Tflops").
/// Each returns the value in SI base units, or nullopt with `error` set to a short reason.
namespace units {

/// Bandwidth in bytes per second. Bits: "400Gbps", "400Gb/s"; bytes: "450GBps", "450GB/s".
std::optional<double> parse_bandwidth(std::string_view text, std::string* error);
/// Duration in seconds: "5us", "1.5ms", "12ns", "2s", "1min", "3h", "54d".
std::optional<double> parse_duration(std::string_view text, std::string* error);
/// Size in bytes: "80GiB", "1.5GB", "512KiB", "4096B", or a bare byte count.
std::optional<double> parse_bytes(std::string_view text, std::string* error);
/// Compute rate in flop/s: "989Tflops", "312 TFLOP/s".
std::optional<double> parse_flop_rate(std::string_view text, std::string* error);
/// Amount of work in flop: "1.2Tflop", "3.5e12", "800Gflop".
std::optional<double> parse_flops(std::string_view text, std::string* error);
/// Distance in km: "100km", "2500 km", "800m".
std::optional<double> parse_distance_km(std::string_view text, std::string* error);
/// Dimensionless count with an optional SI suffix: "50M", "1.3G", "7e9", "1024".
std::optional<double> parse_count(std::string_view text, std::string* error);
/// A deadline: a duration ("12h") in seconds, or a multiple of a reference ("1.1x").
struct Deadline {
  double seconds = 0;   ///< absolute, when `multiple` is 0
  double multiple = 0;  ///< of the deterministic job time, when not 0
};
std::optional<Deadline> parse_deadline(std::string_view text, std::string* error);

}  // namespace units
}  // namespace prismsim
