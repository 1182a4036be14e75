// The Generator state (seed, offset) of the counter-based random numbers (Philox4x32-10, in
// tensor/philox.h).
// Element i of a draw uses counter block (offset + i/4) and lane i%4, so every element is computed
// independently: the CPU and the GPU give the same numbers for the same seed, in parallel.
// This file deliberately has no global generator: callers pass one (reproducible runs).
#pragma once

#include <cstdint>

#include "tensor/philox.h"

namespace posgrad {

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
  // A seed for another generator (a layer's dropout), drawn from this one: uniform in [0, 2^53).
  uint64_t next_seed() { return static_cast<uint64_t>(next_uniform() * 9007199254740992.0); }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

}  // namespace posgrad
