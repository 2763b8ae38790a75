#pragma once

#include <cmath>
#include <cstdint>

#include "core/seeds.hpp"

namespace prismsim::training_random {

/// Draw `index` of the stream `key`: a counter-based word, so that a draw depends only on its
/// stream and its number, never on the order in which other draws were made.
inline uint64_t word(uint64_t key, uint64_t index) {
  return splitmix64(key ^ splitmix64(index + 0x7472616eULL));
}

/// The key of stream `purpose` of the replication seeded `replication_seed`.
inline uint64_t stream(uint64_t replication_seed, uint64_t purpose) {
  return splitmix64(replication_seed ^ splitmix64(purpose << 40));
}

/// A uniform number in (0, 1] from a word (never 0, so that log() is finite).
inline double unit_open_low(uint64_t w) { return (static_cast<double>(w >> 11) + 1.0) * 0x1p-53; }

/// A uniform number in [0, 1) from a word.
inline double unit(uint64_t w) { return static_cast<double>(w >> 11) * 0x1p-53; }

/// An exponential draw of rate `rate` (> 0) per second, s.
inline double exponential(uint64_t w, double rate) { return -std::log(unit_open_low(w)) / rate; }

}  // namespace prismsim::training_random
