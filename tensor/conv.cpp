// conv2d and max_pool2d front-end (see conv.h): checks, windows, output allocation, and the
// im2col + GEMM formulation of the convolution and its two gradients.
// Shapes: conv.h's letters.
#include "tensor/conv.h"

#include "tensor/backend.h"
#include "tensor/error.h"
#include "tensor/ops.h"

namespace posgrad {

namespace {

void check_image(const Shape& x, const char* op) {
  if (x.size() != 4) fail("{}: the input must be [B, C, Y, X] (4-D), got shape {}", op, shape_str(x));
}

// Output size along one axis, or an error when the (dilated) kernel does not fit the padded input.
int64_t out_size(int64_t size, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, const char* op,
                 const char* axis, const std::string& shapes) {
  const int64_t span = dilation * (kernel - 1) + 1;
  if (span > size + 2 * pad)
    fail("{}: the kernel's {} extent {} (kernel {}, dilation {}) is larger than the padded input's {} (size {}, "
         "padding {}); {}",
         op, axis, span, kernel, dilation, size + 2 * pad, size, pad, shapes);
  return (size + 2 * pad - span) / stride + 1;
}

void check_pair(const std::array<int64_t, 2>& v, int64_t least, const char* op, const char* what) {
  if (v[0] < least || v[1] < least) fail("{}: {} must be >= {}, got ({}, {})", op, what, least, v[0], v[1]);
}

}  // namespace

Window2d conv2d_window(const Shape& x, const Shape& weight, const Conv2dOptions& o) {
  check_image(x, "conv2d");
  if (weight.size() != 4) fail("conv2d: the weight must be [Co, C/groups, kh, kw] (4-D), got shape {}", shape_str(weight));
  check_pair(o.stride, 1, "conv2d", "stride");
  check_pair(o.dilation, 1, "conv2d", "dilation");
  check_pair(o.padding, 0, "conv2d", "padding");
  const std::string shapes = fmt::format("input {}, weight {}", shape_str(x), shape_str(weight));
  const int64_t C = x[1], Co = weight[0], G = o.groups;
  if (G < 1) fail("conv2d: groups must be >= 1, got {}", G);
  if (C % G != 0 || Co % G != 0)
    fail("conv2d: input channels {} and output channels {} must both be divisible by groups {}; {}", C, Co, G, shapes);
  if (weight[1] != C / G)
    fail("conv2d: the weight's second axis must be the input channels per group {} ({} / groups {}), got {}; {}",
         C / G, C, G, weight[1], shapes);
  if (weight[2] < 1 || weight[3] < 1) fail("conv2d: an empty kernel; {}", shapes);
  Window2d w;
  w.channels = C;
  w.height = x[2];
  w.width = x[3];
  w.kernel_h = weight[2];
  w.kernel_w = weight[3];
  w.stride_h = o.stride[0];
  w.stride_w = o.stride[1];
  w.pad_h = o.padding[0];
  w.pad_w = o.padding[1];
  w.dilation_h = o.dilation[0];
  w.dilation_w = o.dilation[1];
  w.out_h = out_size(w.height, w.kernel_h, w.stride_h, w.pad_h, w.dilation_h, "conv2d", "row", shapes);
  w.out_w = out_size(w.width, w.kernel_w, w.stride_w, w.pad_w, w.dilation_w, "conv2d", "column", shapes);
  return w;
}

Window2d pool2d_window(const Shape& x, const Pool2dOptions& o) {
  check_image(x, "max_pool2d");
  check_pair(o.kernel, 1, "max_pool2d", "kernel");
  check_pair(o.stride, 0, "max_pool2d", "stride");
  check_pair(o.padding, 0, "max_pool2d", "padding");
  Window2d w;
  w.channels = x[1];
  w.height = x[2];
  w.width = x[3];
  w.kernel_h = o.kernel[0];
  w.kernel_w = o.kernel[1];
  w.stride_h = o.stride[0] ? o.stride[0] : o.kernel[0];
  w.stride_w = o.stride[1] ? o.stride[1] : o.kernel[1];
  w.pad_h = o.padding[0];
  w.pad_w = o.padding[1];
  if (2 * w.pad_h > w.kernel_h || 2 * w.pad_w > w.kernel_w)
    fail("max_pool2d: padding ({}, {}) must be at most half the kernel ({}, {}); input {}", w.pad_h, w.pad_w,
         w.kernel_h, w.kernel_w, shape_str(x));
  const std::string shapes = fmt::format("input {}, kernel ({}, {})", shape_str(x), w.kernel_h, w.kernel_w);
  w.out_h = out_size(w.height, w.kernel_h, w.stride_h, w.pad_h, 1, "max_pool2d", "row", shapes);
  w.out_w = out_size(w.width, w.kernel_w, w.stride_w, w.pad_w, 1, "max_pool2d", "column", shapes);
  return w;
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) {
  if (!x.defined() || !weight.defined()) fail("conv2d: the input and the weight must be defined");
  if (!is_floating(x.dtype()) || x.dtype() != weight.dtype())
    fail("conv2d: the input and the weight must have the same floating dtype, got {} and {}", x.describe(), weight.describe());
  check_same_device(x, weight, "conv2d");
  const Window2d w = conv2d_window(x.shape(), weight.shape(), o);
  const int64_t B = x.size(0), Co = weight.size(0), G = o.groups, P = w.out_plane();
  if (bias.defined() && (bias.shape() != Shape{Co} || bias.dtype() != x.dtype()))
    fail("conv2d: the bias must be {}[{}] for the weight {}, got {}", dtype_name(x.dtype()), Co, weight.describe(),
         bias.describe());
  if (bias.defined()) check_same_device(x, bias, "conv2d");
  Tensor cols = Tensor::empty({B, w.patch(), P}, x.dtype(), x.device());
  backend_for(x.device()).im2col(x.contiguous(), w, cols);
  Tensor y = matmul(weight.reshape({G, Co / G, w.patch() / G}), cols.view({B, G, w.patch() / G, P}));  // [B, G, Co/G, P]
  y = y.view({B, Co, w.out_h, w.out_w});
  if (bias.defined()) add_(y, bias.view({1, Co, 1, 1}));
  return y;
}

Tensor conv2d_input_grad(const Tensor& dy, const Tensor& weight, const Shape& x_shape, const Conv2dOptions& o) {
  const Window2d w = conv2d_window(x_shape, weight.shape(), o);
  const int64_t B = x_shape[0], Co = weight.size(0), G = o.groups, P = w.out_plane();
  if (dy.shape() != Shape{B, Co, w.out_h, w.out_w})
    fail("conv2d backward: the output gradient {} must be [{}, {}, {}, {}]", dy.describe(), B, Co, w.out_h, w.out_w);
  Tensor wt = weight.reshape({G, Co / G, w.patch() / G}).transpose(1, 2);          // [G, k/G, Co/G]
  Tensor cols = matmul(wt, dy.reshape({B, G, Co / G, P})).view({B, w.patch(), P});  // [B, k, P]
  Tensor dx = Tensor::empty(x_shape, dy.dtype(), dy.device());
  backend_for(dy.device()).col2im(cols, w, dx);
  return dx;
}

Tensor conv2d_weight_grad(const Tensor& dy, const Tensor& x, const Shape& weight_shape, const Conv2dOptions& o) {
  const Window2d w = conv2d_window(x.shape(), weight_shape, o);
  const int64_t B = x.size(0), Co = weight_shape[0], G = o.groups, P = w.out_plane();
  if (dy.shape() != Shape{B, Co, w.out_h, w.out_w})
    fail("conv2d backward: the output gradient {} must be [{}, {}, {}, {}]", dy.describe(), B, Co, w.out_h, w.out_w);
  Tensor cols = Tensor::empty({B, w.patch(), P}, x.dtype(), x.device());
  backend_for(x.device()).im2col(x.contiguous(), w, cols);
  Tensor per_image = matmul(dy.reshape({B, G, Co / G, P}), cols.view({B, G, w.patch() / G, P}).transpose(2, 3));
  return sum(per_image, {0}).view(weight_shape);  // [G, Co/G, k/G] -> [Co, C/G, kh, kw]
}

MaxPool2dResult max_pool2d(const Tensor& x, const Pool2dOptions& o) {
  if (!x.defined()) fail("max_pool2d: the input is undefined");
  if (!is_floating(x.dtype())) fail("max_pool2d: floating-point input required, got {}", x.describe());
  const Window2d w = pool2d_window(x.shape(), o);
  const int64_t B = x.size(0), C = x.size(1), planes = B * C;
  MaxPool2dResult r{Tensor::empty({B, C, w.out_h, w.out_w}, x.dtype(), x.device()),
                    Tensor::empty({B, C, w.out_h, w.out_w}, kInt64, x.device())};
  Tensor out3 = r.out.view({planes, w.out_h, w.out_w}), arg3 = r.argmax.view({planes, w.out_h, w.out_w});
  backend_for(x.device()).max_pool2d(x.contiguous().view({planes, w.height, w.width}), w, out3, arg3);
  return r;
}

Tensor max_pool2d_backward(const Tensor& dy, const Tensor& argmax, const Shape& x_shape) {
  check_image(x_shape, "max_pool2d backward");
  if (dy.shape() != argmax.shape() || dy.dim() != 4 || dy.size(0) != x_shape[0] || dy.size(1) != x_shape[1])
    fail("max_pool2d backward: the output gradient {} and argmax {} must be [{}, {}, Yo, Xo]", dy.describe(),
         argmax.describe(), x_shape[0], x_shape[1]);
  const int64_t planes = x_shape[0] * x_shape[1], out_plane = dy.size(2) * dy.size(3);
  Tensor dx = scatter_add({planes, x_shape[2] * x_shape[3]}, 1, argmax.reshape({planes, out_plane}),
                          dy.reshape({planes, out_plane}));
  return dx.view(x_shape);
}

}  // namespace posgrad
