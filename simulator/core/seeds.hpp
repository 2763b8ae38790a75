#pragma once

#include <cstdint>

namespace prismsim {

/// SplitMix64's output function: a bijective 64-bit mix.
constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// Seed of replication `run` (0-based) of a study seeded with `base`.
constexpr uint64_t run_seed(uint64_t base, uint64_t run) {
  return splitmix64(base ^ splitmix64(run + 1));
}

}  // namespace prismsim
