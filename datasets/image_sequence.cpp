// Image layout helpers (see image_sequence.h).
// Shapes: letters of shape_legend.h; H, W: image height and width, as in image_sequence.h.
#include "datasets/image_sequence.h"

#include "tensor/error.h"

namespace posgrad {

Tensor images_to_channels_last(const Tensor& images) {
  if (images.dim() != 4) fail("images_to_channels_last: expected [B, C, H, W], got {}", images.describe());
  return images.permute({0, 2, 3, 1}).contiguous();
}

Tensor images_to_sequence(const Tensor& images) {
  if (images.dim() != 4) fail("images_to_sequence: expected [B, C, H, W], got {}", images.describe());
  const int64_t b = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  return images_to_channels_last(images).view({b, h * w, c});
}

}  // namespace posgrad
