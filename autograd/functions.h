// Differentiable ops on Variables: each wraps the tensor op of the same name (tensor/ops.h) and
// records its backward. The forward and backward of each op family sit side by side in
// autograd/ops_*.cpp. Every op here is gradchecked in tests/autograd/.
#pragma once

#include <vector>

#include "autograd/variable.h"
#include "tensor/conv.h"
#include "tensor/ops.h"

namespace posgrad {

// ------------------------------------------------------------ elementwise (ops_elementwise.cpp)
Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable div(const Variable& a, const Variable& b);
Variable maximum(const Variable& a, const Variable& b);  // ties split the gradient
Variable minimum(const Variable& a, const Variable& b);
Variable neg(const Variable& x);
Variable exp(const Variable& x);
Variable log(const Variable& x);
Variable sqrt(const Variable& x);
Variable abs(const Variable& x);
Variable sin(const Variable& x);
Variable cos(const Variable& x);
Variable tanh(const Variable& x);
Variable sigmoid(const Variable& x);
Variable relu(const Variable& x);
Variable gelu(const Variable& x);  // exact (erf) GELU, like torch.nn.GELU()
Variable square(const Variable& x);
Variable add_scalar(const Variable& x, double s);
Variable mul_scalar(const Variable& x, double s);
Variable pow_scalar(const Variable& x, double exponent);
Variable clamp(const Variable& x, double lo, double hi);  // gradient 0 outside [lo, hi]
Variable where(const Tensor& cond, const Variable& a, const Variable& b);
Variable masked_fill(const Variable& x, const Tensor& mask, double value);

inline Variable operator+(const Variable& a, const Variable& b) { return add(a, b); }
inline Variable operator-(const Variable& a, const Variable& b) { return sub(a, b); }
inline Variable operator*(const Variable& a, const Variable& b) { return mul(a, b); }
inline Variable operator/(const Variable& a, const Variable& b) { return div(a, b); }
inline Variable operator-(const Variable& x) { return neg(x); }
inline Variable operator+(const Variable& x, double s) { return add_scalar(x, s); }
inline Variable operator-(const Variable& x, double s) { return add_scalar(x, -s); }
inline Variable operator*(const Variable& x, double s) { return mul_scalar(x, s); }
inline Variable operator/(const Variable& x, double s) { return mul_scalar(x, 1.0 / s); }
inline Variable operator*(double s, const Variable& x) { return mul_scalar(x, s); }
inline Variable operator+(double s, const Variable& x) { return add_scalar(x, s); }
inline Variable operator-(double s, const Variable& x) { return add_scalar(neg(x), s); }

// ------------------------------------------------------------ shape (ops_shape.cpp)
Variable reshape(const Variable& x, const Shape& shape);
Variable permute(const Variable& x, const std::vector<int64_t>& order);
Variable transpose(const Variable& x, int64_t a, int64_t b);
Variable slice(const Variable& x, int64_t axis, int64_t start, int64_t end, int64_t step = 1);
Variable narrow(const Variable& x, int64_t axis, int64_t start, int64_t length);
Variable select(const Variable& x, int64_t axis, int64_t index);
Variable expand(const Variable& x, const Shape& shape);
Variable squeeze(const Variable& x, int64_t axis);
Variable unsqueeze(const Variable& x, int64_t axis);
Variable flatten(const Variable& x, int64_t start_axis = 0, int64_t end_axis = -1);
Variable contiguous(const Variable& x);
Variable cat(const std::vector<Variable>& xs, int64_t axis);
Variable stack(const std::vector<Variable>& xs, int64_t axis);

// ------------------------------------------------------------ reductions (ops_reduce.cpp)
Variable sum(const Variable& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Variable mean(const Variable& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Variable amax(const Variable& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Variable amin(const Variable& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Variable var(const Variable& x, const std::vector<int64_t>& axes = {}, bool keepdim = false,
             int64_t correction = 1);

// ------------------------------------------------------------ linear algebra and nn (ops_nn.cpp)
Variable matmul(const Variable& a, const Variable& b);
Variable softmax(const Variable& x, int64_t axis = -1);
Variable log_softmax(const Variable& x, int64_t axis = -1);
// LayerNorm over the last axis; weight/bias may be undefined Variables (no affine).
Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps);

// ------------------------------------------------------------ indexing (ops_index.cpp)
Variable index_select(const Variable& x, int64_t axis, const Tensor& index);
Variable gather(const Variable& x, int64_t axis, const Tensor& index);
Variable scatter_add(const Shape& shape, int64_t axis, const Tensor& index, const Variable& src);
Variable index_add(const Shape& shape, int64_t axis, const Tensor& index, const Variable& src);

// ------------------------------------------------------------ images (ops_conv.cpp)
// x [B, C, Y, X], weight [Co, C/G, kh, kw], bias [Co] or an undefined Variable (tensor/conv.h).
Variable conv2d(const Variable& x, const Variable& weight, const Variable& bias, const Conv2dOptions& options = {});
Variable max_pool2d(const Variable& x, const Pool2dOptions& options);  // the gradient goes to the first maximum

}  // namespace posgrad
