// Counter-based random numbers: Philox4x32-10 and the Generator state (seed, offset).
// Element i of a draw uses counter block (offset + i/4) and lane i%4, so every element is computed
// independently: the CPU and the GPU give the same numbers for the same seed, in parallel.
// This file deliberately has no global generator: callers pass one (reproducible runs).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace posgrad {

// One Philox4x32-10 block: 4 random uint32 from a 128-bit counter and a 64-bit key.
inline std::array<uint32_t, 4> philox4x32_10(uint64_t counter_lo, uint64_t counter_hi, uint64_t key) {
  uint32_t c0 = static_cast<uint32_t>(counter_lo), c1 = static_cast<uint32_t>(counter_lo >> 32);
  uint32_t c2 = static_cast<uint32_t>(counter_hi), c3 = static_cast<uint32_t>(counter_hi >> 32);
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {c0, c1, c2, c3};
}

// A uint32 mapped to the open interval (0, 1): never 0, so log() is safe.
inline double uint_to_unit(uint32_t x) { return (static_cast<double>(x) + 0.5) * (1.0 / 4294967296.0); }

// Element `i` of a uniform(0,1) draw that started at block `offset`.
inline double philox_uniform(uint64_t seed, uint64_t offset, uint64_t i) {
  return uint_to_unit(philox4x32_10(offset + i / 4, 0, seed)[i % 4]);
}
// Element `i` of a standard normal draw (Box-Muller on lanes (0,1) and (2,3) of block i/4).
inline double philox_normal(uint64_t seed, uint64_t offset, uint64_t i) {
  const auto r = philox4x32_10(offset + i / 4, 0, seed);
  const int pair = static_cast<int>((i % 4) / 2);
  const double u1 = uint_to_unit(r[2 * pair]), u2 = uint_to_unit(r[2 * pair + 1]);
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 6.283185307179586 * u2;
  return (i % 2 == 0) ? radius * std::cos(angle) : radius * std::sin(angle);
}

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void set_state(uint64_t seed, uint64_t offset) { seed_ = seed; offset_ = offset; }
  // Reserves the blocks for `n` elements and returns the first block's offset.
  uint64_t reserve(uint64_t n) {
    const uint64_t start = offset_;
    offset_ += (n + 3) / 4;
    return start;
  }
  // A single uniform double in (0, 1) (for host-side decisions like shuffling).
  double next_uniform() { return philox_uniform(seed_, reserve(1), 0); }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

}  // namespace posgrad
