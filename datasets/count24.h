// count24: the counting exercise. Each example is a sequence of N = 10 digits drawn uniformly
// from 0..9; the label is 1 when the sequence holds more 2s than 4s, else 0 (equal counts -> 0).
// A model must count two symbols anywhere in the sequence, so it needs attention over the whole
// sequence but no positional information.
//
//   Count24 train = make_count24(10000, seed);       // inputs int64 [B, 10], labels float32 [B, 1]
//   DataLoader loader(train.dataset(), 64, true, seed);
//
// Digits come from a Philox generator keyed by derive_seed(seed, SeedStream::Count24): the same
// (num, seed) always gives the same data; different seeds give independent sets (use one seed
// for training data and another for test data).
// This file deliberately has no model and no task variants (other digits or lengths are a
// parameter away, but the experiment is fixed).
// Shapes: letters of shape_legend.h.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "datasets/dataset.h"

namespace posgrad {

inline constexpr int64_t kCount24Length = 10;  // N: digits per sequence

struct Count24 {
  Tensor inputs;  // int64 [B, 10], digits 0..9
  Tensor labels;  // float32 [B, 1], 1 if count(2) > count(4) else 0
  // A TensorDataset over (inputs, labels): example i is input int64 [10], target float32 [1].
  std::shared_ptr<TensorDataset> dataset() const;
  int64_t size() const { return inputs.size(0); }
};

// `num` sequences from `seed`.
Count24 make_count24(int64_t num, uint64_t seed);

// The label rule on one sequence: 1 if it has more 2s than 4s, else 0.
int64_t count24_label(std::span<const int64_t> digits);

// The fraction of labels equal to 1 (labels of any shape, any dtype).
double positive_fraction(const Tensor& labels);

// The exact probability that a uniform 10-digit sequence is positive: (1 - P(#2 == #4)) / 2
// = 0.35343... (for sanity checks of generated data and of a model's trivial baseline).
double count24_positive_probability();

}  // namespace posgrad
