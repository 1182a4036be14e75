// MNIST from its four original IDX files (gzip-compressed as published, or unpacked):
//   train-images-idx3-ubyte(.gz)  train-labels-idx1-ubyte(.gz)   60,000 examples
//   t10k-images-idx3-ubyte(.gz)   t10k-labels-idx1-ubyte(.gz)    10,000 examples
// images: float32 [n, 1, 28, 28] in [0, 1] (or [-1, 1] with PixelRange::Symmetric, the posattn
// protocol); labels: int64 [n], 0..9.
// This file deliberately does no splitting or augmentation (see split.h for a train/val split).
// Shapes: letters of shape_legend.h, except n here: the number of images, not positional dims.
#pragma once

#include <filesystem>
#include <memory>

#include "datasets/dataset.h"
#include "datasets/pixels.h"

namespace posgrad {

struct Mnist {
  Tensor images;  // float32 [n, 1, rows, cols]
  Tensor labels;  // int64 [n]
  int64_t size() const { return images.size(0); }
  // A TensorDataset: example i is input float32 [1, 28, 28], target int64 [] (a scalar).
  std::shared_ptr<TensorDataset> dataset() const;
};

// One IDX image file -> float32 [n, 1, rows, cols].
Tensor load_idx_images(const std::filesystem::path& path, PixelRange range = PixelRange::Unit);
// One IDX label file -> int64 [n]; a label above 9 is an Error naming the file and the index.
Tensor load_idx_labels(const std::filesystem::path& path);
// An image file and its label file; a count mismatch is an Error naming both files.
Mnist load_mnist_files(const std::filesystem::path& images, const std::filesystem::path& labels,
                       PixelRange range = PixelRange::Unit);
// The training (train = true) or test split from a folder holding the standard file names; each
// name is tried with ".gz" first, then unpacked.
Mnist load_mnist(const std::filesystem::path& dir, bool train, PixelRange range = PixelRange::Unit);

}  // namespace posgrad
