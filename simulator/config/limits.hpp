#pragma once

#include <limits>

namespace prismsim {

/// The range a validated value must lie in, with its ends as messages write them. Ranges are
/// physical (no network below 1 kbit/s or above 1 Pbit/s) and keep every derived quantity
/// (transfer and kernel times, slowdowns, their draws) finite; README.md lists them.
struct ValueRange {
  double min = 0;
  double max = std::numeric_limits<double>::infinity();
  const char* min_text = "0";
  const char* max_text = "";
  bool min_exclusive = false;  ///< the value must exceed `min`
};

namespace limits {

/// Every bandwidth (links, ports, WAN, HBM), in bytes/s: 1 kbit/s to 1 Pbit/s.
constexpr ValueRange kBandwidth{1e3 / 8, 1e15 / 8, "1kbps", "1Pbps"};
/// Every latency and fixed cost of the platform (links, switch hops, collective launch,
/// protocol latencies, kernel issue), in seconds: 0 to 1 s.
constexpr ValueRange kLatency{0, 1, "0s", "1s"};
/// A WAN link's distance, in km: up to half the Earth's circumference.
constexpr ValueRange kDistance{0, 20'000, "0km", "20000km"};
/// Fibre routes are longer than the great circle by this factor.
constexpr ValueRange kRouteInflation{1, 10, "1", "10"};
/// Achievable fractions of a peak (efficiencies).
constexpr ValueRange kFraction{1e-3, 1, "0.001", "1"};
/// Peak compute rate of one GPU, flop/s: 1 Gflop/s to 1 Eflop/s.
constexpr ValueRange kFlopRate{1e9, 1e18, "1Gflops", "1Eflops"};
/// Memory of one GPU, bytes: 1 MiB to 1 PiB.
constexpr ValueRange kGpuMemory{1 << 20, 1125899906842624.0, "1MiB", "1PiB"};
/// Gradient bucket, bytes: up to 1 PiB.
constexpr ValueRange kBucket{0, 1125899906842624.0, "0", "1PiB", true};
/// A GEMM dimension at which efficiency halves.
constexpr ValueRange kGemmHalfSize{0, 1e6, "0", "1000000"};
/// A switch tier's down:up port ratio.
constexpr ValueRange kOversubscription{1, 1000, "1", "1000"};
/// A layer-stack layer's parameters and forward work per sample (flop).
constexpr ValueRange kLayerParameters{0, 1e13, "0", "1e13", true};
constexpr ValueRange kLayerFlops{0, 1e18, "0", "1e18", true};
/// Transformer sizes: hidden and FFN widths, heads, vocabulary, sequence length.
constexpr ValueRange kModelWidth{1, 1 << 20, "1", "1048576"};
constexpr ValueRange kModelVocab{1, 1 << 24, "1", "16777216"};
constexpr ValueRange kModelSequence{1, 1 << 24, "1", "16777216"};

/// Values of other distributions: positive ones (durations in their unit), or any.
constexpr ValueRange kPositive{1e-12, 1e12, "1e-12", "1e12"};
constexpr ValueRange kAnyValue{-1e12, 1e12, "-1e12", "1e12"};
/// A multiplicative factor (slowdowns, jitter, regime slowdowns) and every value its
/// distributions take: 1/1000 to 1000.
constexpr ValueRange kFactor{1e-3, 1e3, "0.001", "1000"};
/// A WAN round-trip time, in ms: up to 10 s.
constexpr ValueRange kRoundTripMs{1e-3, 1e4, "0.001", "10000"};
/// A temperature, in degrees C.
constexpr ValueRange kTemperature{-100, 1000, "-100", "1000"};
/// A lognormal's sigma: beyond 5 its tails (e^(5 x 9.1) at the sampler's 2^-64) leave doubles.
constexpr double kMaxLogSigma = 5;
/// A gamma's shape.
constexpr ValueRange kGammaShape{1e-2, 1e6, "0.01", "1000000"};
/// Thermal model: thermal resistance (C/W), power (W), time constant (s).
constexpr ValueRange kThermalResistance{0, 10, "0", "10", true};
constexpr ValueRange kPower{0, 1e5, "0", "100000"};
constexpr ValueRange kTimeConstant{0, 86400, "0s", "24h", true};
/// Clock derating per degree and the lowest clock fraction.
constexpr ValueRange kDerate{0, 1, "0", "1"};

}  // namespace limits
}  // namespace prismsim
