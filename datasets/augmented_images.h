// AugmentedImages: a Dataset view of an image dataset that augments every example as it is read,
// so the work runs on the DataLoader's worker thread (data_loader.h) with the batch it belongs to.
//
//   input  [C, Y, X] in [0, 1] (PixelRange::Unit) -> bytes -> AutoAugment's CIFAR-10 policy (when
//          on) -> random crop with zero padding (when padding > 0) -> horizontal flip with
//          probability 1/2 (when on) -> (x / 255 - mean) / std, float32 [C, Y, X]
//
// (the order of the CCT recipe: CIFAR10Policy, RandomCrop(32, 4), RandomHorizontalFlip, ToTensor,
// Normalize). Reproducible: example i of epoch e draws from Generator(derive_seed(seed,
// SeedStream::Augment, e) mixed with i), so its augmentation depends on (seed, e, i) only, never on
// the batch, the thread or the prefetch depth. A view is built per epoch (cheap: it shares the
// base dataset); with every option off it only normalises, which is what evaluation uses.
// Deliberately not here: other policies, cutout / mixup, resizing.
// Local letters: Y, X rows and columns of an image; C of shape_legend.h.
#pragma once

#include <memory>
#include <vector>

#include "datasets/dataset.h"

namespace posgrad {

struct AugmentSettings {
  bool autoaugment = false;  // AutoAugment's CIFAR-10 policy
  int64_t crop_padding = 0;  // random crop of the zero-padded image; 0 = no crop
  bool flip = false;         // horizontal flip with probability 1/2
  std::vector<double> mean{0.4914, 0.4822, 0.4465};  // CIFAR-10's channel statistics (the CCT code's)
  std::vector<double> std{0.2470, 0.2435, 0.2616};
};

class AugmentedImages : public Dataset {
 public:
  // base: examples input float32 [C, Y, X] in [0, 1], any target.
  AugmentedImages(std::shared_ptr<const Dataset> base, AugmentSettings settings, uint64_t seed, int64_t epoch);
  int64_t size() const override { return base_->size(); }
  Example get(int64_t i) const override;

 private:
  std::shared_ptr<const Dataset> base_;
  AugmentSettings settings_;
  uint64_t epoch_key_;
};

}  // namespace posgrad
