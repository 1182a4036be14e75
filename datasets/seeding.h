// Seed derivation for the data pipeline: turns one user seed into independent Philox keys, one
// per purpose ("shuffle epoch 3", "train/validation split", "count24 digits", ...).
// Why: a run has a single `seed`; model initialisation uses Generator(seed) directly, so data
// streams derive their own key and never reuse (or correlate with) the init stream, and epoch e's
// shuffle differs from epoch e+1's while staying reproducible from (seed, e).
// This file deliberately holds no generator state: callers build a Generator from the result.
#pragma once

#include <cstdint>

namespace posgrad {

// The data streams, as fixed tags (changing a tag changes every derived seed: do not renumber).
enum class SeedStream : uint64_t {
  Shuffle = 0x53485546464C45ull,  // DataLoader: one permutation per epoch
  Split = 0x53504C4954ull,        // train/validation split
  Count24 = 0x434F554E543234ull,  // count24 digit sequences
  TextSample = 0x54455854ull,     // char-level random windows (when an app derives one)
  Transduction = 0x5452414E53ull, // the APE transduction tasks (sequences and trees)
  Augment = 0x4155474D454E54ull,  // image augmentation: one key per (epoch, example)
};

// SplitMix64 finaliser: a bijective, well-mixing map on 64-bit integers.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The Philox key for (seed, stream, index), e.g. derive_seed(seed, SeedStream::Shuffle, epoch).
inline uint64_t derive_seed(uint64_t seed, SeedStream stream, uint64_t index = 0) {
  return splitmix64(splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(stream)) ^ index);
}

}  // namespace posgrad
