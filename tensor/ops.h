// The tensor op set: plain functions on Tensors (no gradients; autograd/ wraps each one).
// Shapes follow NumPy broadcasting. Every op checks its inputs and throws posgrad::Error naming
// the op and the shapes/dtypes involved. Ops dispatch on the device to a Backend (backend.h).
//
// Comparison ops return 1/0 in the dtype of their inputs (there is no bool dtype); `where` and
// `masked_fill` treat any non-zero mask element as true.
// Shapes: letters of shape_legend.h; matmul's M, K, N are the BLAS matrix sizes, not the legend's.
#pragma once

#include <utility>
#include <vector>

#include "tensor/op_codes.h"
#include "tensor/random.h"
#include "tensor/tensor.h"

namespace posgrad {

// ------------------------------------------------------------ elementwise
// Op codes (UnaryOp, BinaryOp) are in tensor/op_codes.h.
Tensor unary(UnaryOp op, const Tensor& x, double p = 0.0, double q = 0.0);
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);

inline Tensor neg(const Tensor& x) { return unary(UnaryOp::Neg, x); }
inline Tensor exp(const Tensor& x) { return unary(UnaryOp::Exp, x); }
inline Tensor log(const Tensor& x) { return unary(UnaryOp::Log, x); }
inline Tensor sqrt(const Tensor& x) { return unary(UnaryOp::Sqrt, x); }
inline Tensor rsqrt(const Tensor& x) { return unary(UnaryOp::Rsqrt, x); }
inline Tensor abs(const Tensor& x) { return unary(UnaryOp::Abs, x); }
inline Tensor sign(const Tensor& x) { return unary(UnaryOp::Sign, x); }
inline Tensor sin(const Tensor& x) { return unary(UnaryOp::Sin, x); }
inline Tensor cos(const Tensor& x) { return unary(UnaryOp::Cos, x); }
inline Tensor tanh(const Tensor& x) { return unary(UnaryOp::Tanh, x); }
inline Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::Sigmoid, x); }
inline Tensor relu(const Tensor& x) { return unary(UnaryOp::Relu, x); }
inline Tensor gelu(const Tensor& x) { return unary(UnaryOp::Gelu, x); }  // exact (erf) GELU
inline Tensor square(const Tensor& x) { return unary(UnaryOp::Square, x); }
inline Tensor reciprocal(const Tensor& x) { return unary(UnaryOp::Reciprocal, x); }
inline Tensor add_scalar(const Tensor& x, double s) { return unary(UnaryOp::AddScalar, x, s); }
inline Tensor mul_scalar(const Tensor& x, double s) { return unary(UnaryOp::MulScalar, x, s); }
inline Tensor pow_scalar(const Tensor& x, double e) { return unary(UnaryOp::PowScalar, x, e); }
inline Tensor clamp(const Tensor& x, double lo, double hi) { return unary(UnaryOp::Clamp, x, lo, hi); }

inline Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Add, a, b); }
inline Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Sub, a, b); }
inline Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Mul, a, b); }
inline Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Div, a, b); }
inline Tensor pow(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Pow, a, b); }
inline Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Maximum, a, b); }
inline Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Minimum, a, b); }
inline Tensor eq(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Eq, a, b); }
inline Tensor ne(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Ne, a, b); }
inline Tensor lt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Lt, a, b); }
inline Tensor le(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Le, a, b); }
inline Tensor gt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Gt, a, b); }
inline Tensor ge(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Ge, a, b); }

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator+(const Tensor& a, double s) { return add_scalar(a, s); }
inline Tensor operator-(const Tensor& a, double s) { return add_scalar(a, -s); }
inline Tensor operator*(const Tensor& a, double s) { return mul_scalar(a, s); }
inline Tensor operator/(const Tensor& a, double s) { return mul_scalar(a, 1.0 / s); }

// out = cond ? a : b (all three broadcast together).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// x with `value` wherever mask (broadcast to x) is non-zero.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// In-place accumulate: dst += src (src broadcast to dst). Used for gradient accumulation.
void add_(Tensor& dst, const Tensor& src);

// ------------------------------------------------------------ reductions
// `axes` empty means all axes. keepdim keeps reduced axes with size 1.
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor amax(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
// Variance with Bessel's correction `correction` (1 = unbiased, like torch.var; 0 = biased).
Tensor var(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false,
           int64_t correction = 1);
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim = false);  // int64
// Sums `x` down to `shape` (the inverse of broadcasting `shape` up to x.shape()).
Tensor sum_to(const Tensor& x, const Shape& shape);

// ------------------------------------------------------------ linear algebra
// a [..., M, K] @ b [..., K, N] -> [..., M, N]; batch axes broadcast. 1-D operands are not
// promoted: both must be at least 2-D. Transposed views are passed to GEMM without a copy.
Tensor matmul(const Tensor& a, const Tensor& b);

// ------------------------------------------------------------ normalisation
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
// Given y = softmax(x) (or log_softmax when `log`), and dy, returns dx. Same axis as the forward.
Tensor softmax_backward(const Tensor& y, const Tensor& dy, int64_t axis, bool log);

struct LayerNormResult {
  Tensor y;     // [..., D]
  Tensor mean;  // [...]  (rows)
  Tensor rstd;  // [...]  1 / sqrt(var + eps)
};
// LayerNorm over the last axis; weight and bias [D] may be undefined (no affine).
LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
struct LayerNormGrads {
  Tensor dx, dweight, dbias;
};
LayerNormGrads layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                   const Tensor& mean, const Tensor& rstd);

// ------------------------------------------------------------ indexing
// Rows of x along `axis` picked by int64 `index` (any shape): out shape = x.shape with axis
// replaced by index.shape. Out-of-range indices are an Error.
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);
// out = zeros(shape); out.index(axis, index) += src  (the adjoint of index_select).
Tensor index_add(const Shape& shape, int64_t axis, const Tensor& index, const Tensor& src);
// torch.gather: out[i][j][k] = x[i][index[i][j][k]][k] for axis 1; index has x's rank.
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);
// The adjoint of gather: out = zeros(shape); out[..index..] += src.
Tensor scatter_add(const Shape& shape, int64_t axis, const Tensor& index, const Tensor& src);

// ------------------------------------------------------------ joining
Tensor cat(const std::vector<Tensor>& tensors, int64_t axis);
Tensor stack(const std::vector<Tensor>& tensors, int64_t axis);

// ------------------------------------------------------------ random (Philox4x32-10)
Tensor uniform(const Shape& shape, double lo, double hi, Generator& gen, DType dtype = kFloat32,
               Device device = kCPU);
Tensor normal(const Shape& shape, double mean, double stddev, Generator& gen,
              DType dtype = kFloat32, Device device = kCPU);
Tensor bernoulli(const Shape& shape, double p, Generator& gen, DType dtype = kFloat32,
                 Device device = kCPU);  // 1 with probability p, else 0
Tensor randperm(int64_t n, Generator& gen);  // int64 permutation of 0..n-1

// ------------------------------------------------------------ comparison helpers (tests)
double max_abs_diff(const Tensor& a, const Tensor& b);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

}  // namespace posgrad
