#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace prismsim {

/// SHA-256 (FIPS 180-4) of bytes fed in any number of pieces; for the provenance of inputs.
class Sha256 {
 public:
  Sha256();
  /// Appends `data` to the message.
  Sha256& update(std::string_view data);
  /// The 32-byte digest of the message so far; the hash cannot be updated afterwards.
  std::array<uint8_t, 32> digest();
  /// The digest as 64 lowercase hex digits.
  std::string hex();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> block_{};
  size_t filled_ = 0;    ///< bytes in block_
  uint64_t length_ = 0;  ///< message bytes so far
  bool finished_ = false;
};

/// The SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

}  // namespace prismsim
