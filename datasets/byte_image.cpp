// ByteImage and the crop / flip / normalise operations (see byte_image.h).
#include "datasets/byte_image.h"

#include <cmath>

#include "tensor/error.h"

namespace posgrad {

ByteImage byte_image_from_unit(const Tensor& image) {
  if (image.dim() != 3) fail("byte_image_from_unit: the image must be [C, Y, X], got {}", image.describe());
  ByteImage out(image.size(0), image.size(1), image.size(2));
  const std::vector<float> v = image.to(kCPU).to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) {
    if (!(v[i] >= 0.0f && v[i] <= 1.0f))
      fail("byte_image_from_unit: pixel values must be in [0, 1] (PixelRange::Unit), got {} at element {} of {}", v[i],
           i, image.describe());
    out.pixels[i] = static_cast<uint8_t>(std::lround(v[i] * 255.0f));
  }
  return out;
}

ByteImage crop_padded(const ByteImage& image, int64_t padding, int64_t top, int64_t left) {
  if (padding < 0 || top < 0 || left < 0 || top > 2 * padding || left > 2 * padding)
    fail("crop_padded: the corner ({}, {}) must lie in [0, {}] for padding {}", top, left, 2 * padding, padding);
  ByteImage out(image.channels, image.height, image.width);
  for (int64_t c = 0; c < image.channels; ++c)
    for (int64_t y = 0; y < image.height; ++y)
      for (int64_t x = 0; x < image.width; ++x) {
        const int64_t sy = y + top - padding, sx = x + left - padding;
        const bool inside = sy >= 0 && sy < image.height && sx >= 0 && sx < image.width;
        out.at(c, y, x) = inside ? image.at(c, sy, sx) : 0;
      }
  return out;
}

ByteImage flip_horizontal(const ByteImage& image) {
  ByteImage out(image.channels, image.height, image.width);
  for (int64_t c = 0; c < image.channels; ++c)
    for (int64_t y = 0; y < image.height; ++y)
      for (int64_t x = 0; x < image.width; ++x) out.at(c, y, x) = image.at(c, y, image.width - 1 - x);
  return out;
}

Tensor normalize_image(const ByteImage& image, const std::vector<double>& mean, const std::vector<double>& std) {
  if (static_cast<int64_t>(mean.size()) != image.channels || static_cast<int64_t>(std.size()) != image.channels)
    fail("normalize_image: mean and std need one value per channel ({}), got {} and {}", image.channels, mean.size(),
         std.size());
  Tensor out = Tensor::empty({image.channels, image.height, image.width});
  float* p = out.data<float>();
  const int64_t plane = image.height * image.width;
  for (int64_t c = 0; c < image.channels; ++c) {
    const float m = static_cast<float>(mean[c]), s = static_cast<float>(std[c]);
    if (!(s > 0.0f)) fail("normalize_image: std must be > 0, got {} for channel {}", std[c], c);
    for (int64_t i = 0; i < plane; ++i)
      p[c * plane + i] = (static_cast<float>(image.pixels[c * plane + i]) / 255.0f - m) / s;
  }
  return out;
}

}  // namespace posgrad
