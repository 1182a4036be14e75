// CIFAR-10, binary version: data_batch_1.bin .. data_batch_5.bin (50,000 training images) and,
// when a user has it, test_batch.bin (10,000). Each record is 3073 bytes: 1 label byte (0..9),
// then 1024 red, 1024 green, 1024 blue bytes, each plane row-major 32x32.
// images: float32 [n, 3, 32, 32] in [-1, 1] (x/255 then Normalize(0.5, 0.5), the posattn
// protocol; PixelRange::Unit gives [0, 1]); labels: int64 [n].
// For the posattn train/validation split see load_cifar10_posattn (and split.h); for the
// 1-D / channels-last token layout see image_sequence.h.
// This file deliberately does no augmentation (posattn uses none).
// Shapes: letters of shape_legend.h, except n here: the number of images, not positional dims.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "datasets/dataset.h"
#include "datasets/pixels.h"
#include "datasets/split.h"

namespace posgrad {

inline constexpr int64_t kCifarRecordBytes = 3073;
inline constexpr int64_t kCifarTrainBatches = 5;
inline constexpr int64_t kCifarBatchRecords = 10000;  // in each data_batch_N.bin and in test_batch.bin

struct Cifar10 {
  Tensor images;  // float32 [n, 3, 32, 32]
  Tensor labels;  // int64 [n], 0..9
  int64_t size() const { return images.size(0); }
  // A TensorDataset: example i is input float32 [3, 32, 32], target int64 [].
  std::shared_ptr<TensorDataset> dataset() const;
};

// One or more batch files, concatenated in the given order. Errors name the file: missing, empty,
// size not a multiple of 3073, a label above 9 (with its record index), and, when
// `records_per_file` is not 0, a file of another number of records (one cut at a record boundary
// has a valid size).
Cifar10 load_cifar10_files(const std::vector<std::filesystem::path>& files,
                           PixelRange range = PixelRange::Symmetric, int64_t records_per_file = 0);
// data_batch_1.bin .. data_batch_<batches>.bin from `dir` (all five: 50,000 images; fewer for a
// partial copy, e.g. the one batch the GPU bundle carries). `batches` outside 1..5 is an error;
// so is a file that does not hold exactly `records_per_file` records (CIFAR-10's 10,000; tests
// write smaller batches).
Cifar10 load_cifar10_train(const std::filesystem::path& dir, PixelRange range = PixelRange::Symmetric,
                           int64_t batches = kCifarTrainBatches, int64_t records_per_file = kCifarBatchRecords);
// test_batch.bin from `dir` when it exists (exactly `records_per_file` records), else nullopt.
std::optional<Cifar10> load_cifar10_test(const std::filesystem::path& dir,
                                         PixelRange range = PixelRange::Symmetric,
                                         int64_t records_per_file = kCifarBatchRecords);
// Class names from batches.meta.txt when present, else the standard ten.
std::vector<std::string> cifar10_class_names(const std::filesystem::path& dir = {});

// The posattn protocol: the 50,000 training images in [-1, 1], split 80/20 (40,000 / 10,000) by
// random_split with `seed` (see split.h for how this relates to torch's random_split).
struct Cifar10Splits {
  Cifar10 all;     // the 50,000 images the parts index into
  TrainVal parts;  // parts.train (40,000), parts.val (10,000)
};
Cifar10Splits load_cifar10_posattn(const std::filesystem::path& dir, uint64_t seed,
                                   double val_fraction = 0.2);

}  // namespace posgrad
