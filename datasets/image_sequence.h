// Images as token sequences, for the 1-D ("sequential CIFAR-10") and 2-D positional experiments:
// every pixel is one token whose features are its channels, in row-major pixel order (posattn
// spec section 2: both settings see the same 1024 tokens; only the structure size differs).
//   images_to_sequence:     [B, C, H, W] -> [B, H*W, C]   (N = H*W tokens of C features)
//   images_to_channels_last:[B, C, H, W] -> [B, H, W, C]  (posattn's input layout)
// Both return contiguous copies. Works for any C, H, W (MNIST: [B, 784, 1]).
// This file deliberately holds layout changes only, no normalisation.
// Shapes: letters of shape_legend.h, except H, W here: image height and width (S0, S1), not
// heads and window.
#pragma once

#include "tensor/tensor.h"

namespace posgrad {

Tensor images_to_channels_last(const Tensor& images);
Tensor images_to_sequence(const Tensor& images);

}  // namespace posgrad
