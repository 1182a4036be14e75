// The CIFAR-10 splits of the cct app: the training images (data_batch_*.bin, pixels in [0, 1])
// minus a seeded validation split (model selection), and a test split: the official
// test_batch.bin when the data folder has it, else a further seeded split held out of the
// training images (reported as such in the run's summary). Training examples are augmented per
// epoch on the loader's worker thread (datasets/augmented_images.h); validation and test
// examples are only normalised.
// Deliberately does not: download data (posgrad-data fetch cifar10 does), other datasets.
#pragma once

#include <memory>
#include <string>

#include "apps/cct/cct_settings.h"
#include "datasets/augmented_images.h"
#include "datasets/dataset.h"

namespace posgrad::cct_app {

struct CctData {
  std::shared_ptr<const Dataset> train, val, test;  // raw: input float32 [3, 32, 32] in [0, 1], target int64 []
  std::string test_source;                          // "test_batch.bin" or "held out of data_batch_*.bin"
  std::vector<std::string> class_names;
};

CctData load_cct_data(const CctSettings& c);
AugmentSettings train_augmentation(const CctSettings& c);
// The normalised (not augmented) view used for evaluation.
std::shared_ptr<const Dataset> evaluation_view(std::shared_ptr<const Dataset> raw);

}  // namespace posgrad::cct_app
