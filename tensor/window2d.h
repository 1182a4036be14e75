// Window2d: the geometry of a 2-D sliding window over an image, shared by conv2d (tensor/conv.h)
// and max_pool2d, by their backend primitives (tensor/backend.h) and by the CUDA kernels
// (tensor/cuda/kernels.h). Plain integers only, so nvcc and every backend can include it.
//
// Local letters (H and W of shape_legend.h are heads and windows, so an image plane is Y x X):
//   Y, X    rows and columns of the input plane;  Yo, Xo  of the output
//   k       patch length C * kernel_h * kernel_w (the inner size of conv2d's GEMM)
// Output position (oy, ox) and kernel tap (i, j) read the input at
//   y = oy * stride_h - pad_h + i * dilation_h,   x = ox * stride_w - pad_w + j * dilation_w
// (outside the plane: 0 for convolutions, ignored by pooling).
// Deliberately holds no checks: the op front-end (tensor/conv.cpp) validates every field.
#pragma once

#include <cstdint>

namespace posgrad {

struct Window2d {
  int64_t channels = 1;          // C (per image; for conv2d's im2col all input channels)
  int64_t height = 1, width = 1;  // Y, X
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t out_h = 1, out_w = 1;  // Yo, Xo

  int64_t patch() const { return channels * kernel_h * kernel_w; }  // k
  int64_t out_plane() const { return out_h * out_w; }                // Yo * Xo
  int64_t plane() const { return height * width; }                   // Y * X
};

}  // namespace posgrad
