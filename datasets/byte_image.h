// ByteImage: an 8-bit image [C, Y, X] (channel planes, row-major), the form augmentation works in
// (AutoAugment's operations are defined on 8-bit pixels, PIL's), and the plain operations of the
// CIFAR training recipe: random crop with zero padding, horizontal flip, and conversion to a
// float tensor normalised by per-channel mean and standard deviation (torchvision's ToTensor then
// Normalize: (x / 255 - mean) / std, in float32).
// Deliberately not here: random draws (the caller passes the offsets: augmentation.h draws them),
// AutoAugment's operations (autoaugment.h), resizing.
// Local letters: Y, X rows and columns of the image; C of shape_legend.h.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace posgrad {

struct ByteImage {
  int64_t channels = 0, height = 0, width = 0;
  std::vector<uint8_t> pixels;  // [C, Y, X]

  ByteImage() = default;
  ByteImage(int64_t c, int64_t y, int64_t x, uint8_t fill = 0)
      : channels(c), height(y), width(x), pixels(static_cast<size_t>(c * y * x), fill) {}
  uint8_t& at(int64_t c, int64_t y, int64_t x) { return pixels[static_cast<size_t>((c * height + y) * width + x)]; }
  uint8_t at(int64_t c, int64_t y, int64_t x) const { return pixels[static_cast<size_t>((c * height + y) * width + x)]; }
};

// float32 [C, Y, X] with values in [0, 1] (x / 255, e.g. CIFAR-10 loaded with PixelRange::Unit)
// -> bytes (rounded); an error for another rank or values outside [0, 1].
ByteImage byte_image_from_unit(const Tensor& image);
// The window of the image padded by `padding` zeros on every side whose top-left corner is at
// (top, left) of the padded image, 0 <= top, left <= 2 * padding: same size as the input.
ByteImage crop_padded(const ByteImage& image, int64_t padding, int64_t top, int64_t left);
ByteImage flip_horizontal(const ByteImage& image);
// float32 [C, Y, X] = (x / 255 - mean[c]) / std[c].
Tensor normalize_image(const ByteImage& image, const std::vector<double>& mean, const std::vector<double>& std);

}  // namespace posgrad
