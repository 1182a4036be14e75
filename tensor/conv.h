// 2-D convolution and max pooling on [B, C, Y, X] images (NCHW, as PyTorch): the tensor ops and
// their gradients, without autograd (autograd/ops_conv.cpp records them). Front-end only: every
// shape check and output allocation is here; the backend runs im2col / col2im / max_pool2d
// (tensor/backend.h) and the GEMMs go through matmul (the packed SGEMM on the CPU, cuBLAS on CUDA).
//
//   conv2d:  cols = im2col(x) [B, G, k/G, Yo*Xo];  y = weight [G, Co/G, k/G] @ cols  -> [B, Co, Yo, Xo]
//   d input  = col2im(weight^T @ dy);   d weight = sum_b dy @ cols^T (im2col recomputed: the
//   forward keeps no [B, k, Yo*Xo] buffer alive for the backward)
//
// Errors name the op, the offending setting and every shape involved: an input that is not 4-D,
// channels not divisible by the groups, a weight of the wrong shape, a kernel (dilated) larger
// than the padded input, padding over half the pooling kernel, a non-positive stride.
// Deliberately not here: 1-D / 3-D convolutions, transposed convolutions, padding modes other
// than zeros, ceil_mode and dilation for pooling, average pooling.
// Shapes: shape_legend.h's B and C; tensor/window2d.h's Y, X, Yo, Xo, k (= C*kh*kw); Co output
// channels; G groups.
#pragma once

#include <array>

#include "tensor/tensor.h"
#include "tensor/window2d.h"

namespace posgrad {

struct Conv2dOptions {
  std::array<int64_t, 2> stride{1, 1};    // (rows, columns)
  std::array<int64_t, 2> padding{0, 0};   // zeros on each side
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;                     // G: C and Co must be multiples of it
};

struct Pool2dOptions {
  std::array<int64_t, 2> kernel{2, 2};
  std::array<int64_t, 2> stride{0, 0};    // 0 = the kernel size (PyTorch's default)
  std::array<int64_t, 2> padding{0, 0};   // at most half the kernel; padded cells never win
};

// The window of a conv2d of x [B, C, Y, X] with weight [Co, C/G, kh, kw]; checks every setting.
Window2d conv2d_window(const Shape& x, const Shape& weight, const Conv2dOptions& options);
// The window of a max_pool2d of x [B, C, Y, X]; checks every setting.
Window2d pool2d_window(const Shape& x, const Pool2dOptions& options);

// x [B, C, Y, X], weight [Co, C/G, kh, kw], bias [Co] or undefined -> [B, Co, Yo, Xo].
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& options = {});
// The gradients of conv2d: dy [B, Co, Yo, Xo] -> d input [B, C, Y, X] / d weight [Co, C/G, kh, kw].
Tensor conv2d_input_grad(const Tensor& dy, const Tensor& weight, const Shape& x_shape, const Conv2dOptions& options);
Tensor conv2d_weight_grad(const Tensor& dy, const Tensor& x, const Shape& weight_shape, const Conv2dOptions& options);

struct MaxPool2dResult {
  Tensor out;     // [B, C, Yo, Xo]
  Tensor argmax;  // int64 [B, C, Yo, Xo]: flat index y * X + x in the input plane
};
MaxPool2dResult max_pool2d(const Tensor& x, const Pool2dOptions& options);
// dy [B, C, Yo, Xo] sent back to the argmax cells (scatter_add) -> [B, C, Y, X].
Tensor max_pool2d_backward(const Tensor& dy, const Tensor& argmax, const Shape& x_shape);

}  // namespace posgrad
