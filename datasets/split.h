// Seeded random train/validation split (the posattn protocol, thesis spec section 8.2).
//
// posattn splits the 50,000 CIFAR-10 training images 80/20 with PyTorch's
// random_split(dataset, [0.8, 0.2], generator seeded from the run's random_state): a random
// permutation of 0..n-1, the first 80% train, the rest validation, so the split changes with the
// seed. We do the same with our own Philox randperm, keyed by derive_seed(seed, SeedStream::Split):
// the proportions (n_val = floor(n * val_fraction), n_train = n - n_val, i.e. 40,000 / 10,000) and
// the seeding principle are the same, but the permutation itself differs from torch's, so a given
// seed does not select the same images as posattn with that seed.
// This file deliberately copies no data: the parts are SubsetDatasets (index lists).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "datasets/dataset.h"

namespace posgrad {

struct SplitIndices {
  std::vector<int64_t> train;  // n - floor(n * val_fraction) indices, in permutation order
  std::vector<int64_t> val;    // floor(n * val_fraction) indices
};

// Splits 0..n-1; val_fraction in [0, 1).
SplitIndices random_split_indices(int64_t n, double val_fraction, uint64_t seed);

struct TrainVal {
  std::shared_ptr<SubsetDataset> train;
  std::shared_ptr<SubsetDataset> val;
};

// The two parts of `dataset` by random_split_indices(dataset->size(), val_fraction, seed).
TrainVal random_split(std::shared_ptr<const Dataset> dataset, double val_fraction, uint64_t seed);

}  // namespace posgrad
