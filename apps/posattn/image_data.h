// The images of a posattn run: CIFAR-10, MNIST or sequential MNIST from the data folder, in
// [-1, 1] (Normalize(0.5, 0.5)), channels last, optionally average-pooled to a smaller side (the
// quick presets), optionally a seeded random subset (small_dataset), split 80/20 with the seed
// (the thesis's per-seed split; datasets/split.h). No augmentation.
//
//   images  float32 [n, S0, S1, C] (grids) or [n, N, C] (smnist)     labels int64 [n]
//
// Deliberately does not: cache decoded files, augment, or know about models.
// Shapes: letters of shape_legend.h, except n here: the number of images.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/posattn/posattn_settings.h"
#include "datasets/dataset.h"
#include "datasets/split.h"

namespace posgrad::posattn_app {

struct ImageSet {
  std::shared_ptr<TensorDataset> all;  // every image kept (after the subset), channels last
  std::vector<int64_t> structure;      // (S0, S1) or (N)
  int64_t channels = 0, classes = 10;
  std::vector<std::string> class_names;
};

struct ImageSplits {
  ImageSet set;
  TrainVal parts;  // train, val: index lists into set.all
};

// The data folder for the dataset: data.dir, POSGRAD_DATA_DIR or ../shared/data, then its
// cifar10/ or mnist/ subfolder. Errors say where it looked and how to point elsewhere.
std::filesystem::path dataset_folder(const PosattnSettings& c);
// The training images (subset, split) for the run.
ImageSplits load_train_val(const PosattnSettings& c);
// The dataset's official test images (CIFAR-10 test_batch.bin, MNIST t10k) prepared the same
// way; an Error saying what is missing when the file is not there.
ImageSet load_test(const PosattnSettings& c);

}  // namespace posgrad::posattn_app
