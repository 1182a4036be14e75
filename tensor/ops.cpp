// The op front-end (see ops.h): argument checks, broadcasting, axis moves and output allocation,
// then one Backend primitive. No arithmetic happens in this file.
// Shapes: letters of shape_legend.h, except R (the length of a row) and n (the size of the
// indexed axis in [outer, n, inner]).
#include "tensor/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "tensor/backend.h"

namespace posgrad {

namespace {

void check_defined(const Tensor& t, const char* op) {
  if (!t.defined()) fail("{}: an input tensor is undefined", op);
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype() != b.dtype()) fail("{}: dtypes differ ({} and {})", op, a.describe(), b.describe());
}

// The user-facing names of the op codes (the functions of ops.h), for error messages.
const char* unary_name(UnaryOp op) {
  static const char* names[] = {"neg",     "exp",     "log",  "sqrt",   "rsqrt",      "abs",
                                "sign",    "sin",     "cos",  "tanh",   "sigmoid",    "relu",
                                "gelu",    "square",  "reciprocal", "add_scalar", "mul_scalar",
                                "pow_scalar", "clamp", "gelu_grad", "relu_mask"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(UnaryOp::ReluMask) + 1);
  return names[static_cast<int>(op)];
}

const char* binary_name(BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum",
                                "eq",  "ne",  "lt",  "le",  "gt",  "ge"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(BinaryOp::Ge) + 1);
  return names[static_cast<int>(op)];
}

void check_floating(const Tensor& x, const char* op) {
  if (!is_floating(x.dtype())) fail("{}: floating-point input required, got {}", op, x.describe());
}

// Sorted, de-duplicated, normalised axes; empty input means all axes.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, const Tensor& x, const char* op) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    out.resize(x.dim());
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  for (int64_t a : axes) out.push_back(normalize_axis(a, x.shape(), op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    fail("{}: repeated axis in {} for {}", op, shape_str(axes), x.describe());
  return out;
}

// Moves `axes` of x to the end and returns it as a contiguous [rows, R] matrix, plus the kept
// shape (with or without size-1 reduced axes).
struct RowsView {
  Tensor matrix;
  Shape out_shape;
};
RowsView move_axes_last(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  std::vector<int64_t> order;
  Shape out_shape;
  int64_t rows = 1, r = 1;
  for (int64_t i = 0; i < x.dim(); ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced) {
      order.push_back(i);
      out_shape.push_back(x.size(i));
      rows *= x.size(i);
    } else {
      r *= x.size(i);
      if (keepdim) out_shape.push_back(1);
    }
  }
  order.insert(order.end(), axes.begin(), axes.end());
  Tensor m = x.permute(order).contiguous().view({rows, r});
  return {m, out_shape};
}

Tensor reduce(ReduceOp op, const char* name, const Tensor& x, const std::vector<int64_t>& axes_in,
              bool keepdim, int64_t correction = 0) {
  check_defined(x, name);
  if (op == ReduceOp::Mean || op == ReduceOp::Var) check_floating(x, name);  // no integer means
  const auto axes = normalize_axes(axes_in, x, name);
  RowsView rv = move_axes_last(x, axes, keepdim);
  if (rv.matrix.size(1) == 0 && (op == ReduceOp::Max || op == ReduceOp::Min))
    fail("{}: cannot reduce over an empty axis of {}", name, x.describe());
  Tensor out = Tensor::empty({rv.matrix.size(0)}, x.dtype(), x.device());
  backend_for(x.device()).reduce_rows(op, rv.matrix, out, correction);
  return out.view(rv.out_shape);
}

// Moves `axis` last, runs fn on the contiguous [rows, R] matrix, and moves it back.
template <typename Fn>
Tensor along_last(const Tensor& x, int64_t axis, const char* op, Fn&& fn) {
  axis = normalize_axis(axis, x.shape(), op);
  const int64_t last = x.dim() - 1;
  Tensor moved = axis == last ? x : x.transpose(axis, last);
  Tensor m = moved.contiguous();
  const int64_t r = x.dim() ? x.size(axis) : 1;
  Tensor out = fn(m.view({m.numel() / std::max<int64_t>(r, 1), r}));
  out = out.view(m.shape());
  return axis == last ? out : out.transpose(axis, last).contiguous();
}

// Views x as contiguous [outer, n, inner] around `axis`.
Tensor three_axis_view(const Tensor& x, int64_t axis) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.size(i);
  for (int64_t i = axis + 1; i < x.dim(); ++i) inner *= x.size(i);
  return x.contiguous().view({outer, x.size(axis), inner});
}

}  // namespace

// ------------------------------------------------------------ elementwise

Tensor unary(UnaryOp op, const Tensor& x, double p, double q) {
  const char* name = unary_name(op);
  check_defined(x, name);
  if (x.dtype() == kInt64 && op != UnaryOp::Neg && op != UnaryOp::Abs && op != UnaryOp::AddScalar &&
      op != UnaryOp::MulScalar && op != UnaryOp::Clamp && op != UnaryOp::Sign)
    fail("{}: not defined for int64 tensors, got {} (convert with to(kFloat32))", name, x.describe());
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  backend_for(x.device()).unary(op, x, out, p, q);
  return out;
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_name(op);
  check_defined(a, name);
  check_defined(b, name);
  check_same_dtype(a, b, name);
  check_same_device(a, b, name);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  backend_for(a.device()).binary(op, a.expand(shape), b.expand(shape), out);
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_defined(cond, "where");
  check_defined(a, "where");
  check_defined(b, "where");
  check_same_dtype(a, b, "where");
  check_same_device(a, b, "where");
  check_same_device(cond, a, "where");
  const Shape shape = broadcast_shapes(broadcast_shapes(a.shape(), b.shape(), "where"), cond.shape(), "where");
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  backend_for(a.device()).where(cond.expand(shape), a.expand(shape), b.expand(shape), out);
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  check_defined(x, "masked_fill");
  if (!mask.defined()) fail("masked_fill: the mask is undefined (input {})", x.describe());
  const Shape shape = broadcast_shapes(x.shape(), mask.shape(), "masked_fill");
  if (shape != x.shape())
    fail("masked_fill: mask {} must broadcast to the input {}", mask.describe(), x.describe());
  return where(mask, Tensor::full({}, value, x.dtype(), x.device()), x);
}

void add_(Tensor& dst, const Tensor& src) {
  check_defined(dst, "add_");
  check_defined(src, "add_");
  check_same_dtype(dst, src, "add_");
  check_same_device(dst, src, "add_");
  if (!dst.is_contiguous()) fail("add_: destination must be contiguous, got {}", dst.describe());
  const Shape shape = broadcast_shapes(src.shape(), dst.shape(), "add_");
  if (shape != dst.shape()) fail("add_: {} does not broadcast to {}", src.describe(), dst.describe());
  backend_for(dst.device()).accumulate(dst, src.expand(dst.shape()));
}

// ------------------------------------------------------------ reductions

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(ReduceOp::Sum, "sum", x, axes, keepdim);
}
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(ReduceOp::Mean, "mean", x, axes, keepdim);
}
Tensor amax(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(ReduceOp::Max, "amax", x, axes, keepdim);
}
Tensor amin(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(ReduceOp::Min, "amin", x, axes, keepdim);
}
Tensor var(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, int64_t correction) {
  return reduce(ReduceOp::Var, "var", x, axes, keepdim, correction);
}

Tensor argmax(const Tensor& x, int64_t axis, bool keepdim) {
  check_defined(x, "argmax");
  const auto axes = normalize_axes({axis}, x, "argmax");
  RowsView rv = move_axes_last(x, axes, keepdim);
  if (rv.matrix.size(1) == 0) fail("argmax: empty axis in {}", x.describe());
  Tensor out = Tensor::empty({rv.matrix.size(0)}, kInt64, x.device());
  backend_for(x.device()).argmax_rows(rv.matrix, out);
  return out.view(rv.out_shape);
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int64_t lead = x.dim() - static_cast<int64_t>(shape.size());
  if (lead < 0) fail("sum_to: cannot sum {} to the larger shape {}", x.describe(), shape_str(shape));
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < x.dim(); ++i) {
    if (i < lead) axes.push_back(i);
    else if (shape[i - lead] == 1 && x.size(i) != 1) axes.push_back(i);
    else if (shape[i - lead] != x.size(i))
      fail("sum_to: {} is not a broadcast of {}", x.describe(), shape_str(shape));
  }
  if (axes.empty()) return x.reshape(shape);
  return sum(x, axes, true).reshape(shape);
}

// ------------------------------------------------------------ matmul

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_defined(a, "matmul");
  check_defined(b, "matmul");
  check_same_dtype(a, b, "matmul");
  check_same_device(a, b, "matmul");
  if (!is_floating(a.dtype())) fail("matmul: floating-point tensors required, got {}", a.describe());
  if (a.dim() < 2 || b.dim() < 2)
    fail("matmul: both operands must be at least 2-D, got {} and {}", a.describe(), b.describe());
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  if (b.size(-2) != K)
    fail("matmul: inner sizes differ: {} @ {} ({} vs {})", a.describe(), b.describe(), K, b.size(-2));
  const Shape a_batch(a.shape().begin(), a.shape().end() - 2);
  const Shape b_batch(b.shape().begin(), b.shape().end() - 2);
  const Shape batch = broadcast_shapes(a_batch, b_batch, "matmul");
  const int64_t bt = shape_numel(batch);
  Shape a_full = batch, b_full = batch, out_shape = batch;
  a_full.insert(a_full.end(), {M, K});
  b_full.insert(b_full.end(), {K, N});
  out_shape.insert(out_shape.end(), {M, N});
  // Flatten the batch axes into one; reshape keeps broadcast (stride-0) batches as views when it can.
  Tensor a3 = a.expand(a_full).reshape({bt, M, K});
  Tensor b3 = b.expand(b_full).reshape({bt, K, N});
  Tensor out = Tensor::empty({bt, M, N}, a.dtype(), a.device());
  backend_for(a.device()).matmul(a3, b3, out);
  return out.view(out_shape);
}

// ------------------------------------------------------------ softmax, layernorm

Tensor softmax(const Tensor& x, int64_t axis) {
  check_defined(x, "softmax");
  if (!is_floating(x.dtype())) fail("softmax: floating-point input required, got {}", x.describe());
  return along_last(x, axis, "softmax", [&](const Tensor& m) {
    Tensor out = Tensor::empty_like(m);
    backend_for(x.device()).softmax_rows(m, out, false);
    return out;
  });
}

Tensor log_softmax(const Tensor& x, int64_t axis) {
  check_defined(x, "log_softmax");
  if (!is_floating(x.dtype())) fail("log_softmax: floating-point input required, got {}", x.describe());
  return along_last(x, axis, "log_softmax", [&](const Tensor& m) {
    Tensor out = Tensor::empty_like(m);
    backend_for(x.device()).softmax_rows(m, out, true);
    return out;
  });
}

Tensor softmax_backward(const Tensor& y, const Tensor& dy, int64_t axis, bool log) {
  check_defined(y, "softmax_backward");
  check_defined(dy, "softmax_backward");
  if (y.shape() != dy.shape()) fail("softmax_backward: {} vs {}", y.describe(), dy.describe());
  if (!is_floating(y.dtype())) fail("softmax_backward: floating-point input required, got {}", y.describe());
  check_same_dtype(y, dy, "softmax_backward");
  check_same_device(y, dy, "softmax_backward");
  axis = normalize_axis(axis, y.shape(), "softmax_backward");
  const int64_t last = y.dim() - 1;
  Tensor ym = (axis == last ? y : y.transpose(axis, last)).contiguous();
  Tensor dym = (axis == last ? dy : dy.transpose(axis, last)).contiguous();
  const int64_t r = y.size(axis);
  Tensor dx = Tensor::empty_like(ym);
  Tensor y2 = ym.view({ym.numel() / std::max<int64_t>(r, 1), r});
  Tensor dy2 = dym.view(y2.shape());
  Tensor dx2 = dx.view(y2.shape());
  backend_for(y.device()).softmax_backward_rows(y2, dy2, dx2, log);
  return axis == last ? dx : dx.transpose(axis, last).contiguous();
}

LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  check_defined(x, "layer_norm");
  if (x.dim() < 1) fail("layer_norm: input must have at least one axis, got {}", x.describe());
  if (!is_floating(x.dtype())) fail("layer_norm: floating-point input required, got {}", x.describe());
  const int64_t D = x.size(-1);
  for (const Tensor* p : {&weight, &bias})
    if (p->defined() && (p->dim() != 1 || p->size(0) != D || p->dtype() != x.dtype()))
      fail("layer_norm: weight/bias must be {}[{}] for the input {}, got {}", dtype_name(x.dtype()), D,
           x.describe(), p->describe());
  for (const Tensor* p : {&weight, &bias})
    if (p->defined()) check_same_device(x, *p, "layer_norm");
  Tensor xm = x.contiguous();
  const int64_t rows = D ? xm.numel() / D : 0;
  Shape row_shape(x.shape().begin(), x.shape().end() - 1);
  LayerNormResult r{Tensor::empty(x.shape(), x.dtype(), x.device()),
                    Tensor::empty(row_shape, x.dtype(), x.device()),
                    Tensor::empty(row_shape, x.dtype(), x.device())};
  Tensor y2 = r.y.view({rows, D}), m = r.mean.view({rows}), s = r.rstd.view({rows});
  backend_for(x.device()).layer_norm(xm.view({rows, D}), weight.defined() ? weight.contiguous() : weight,
                                     bias.defined() ? bias.contiguous() : bias, eps, y2, m, s);
  return r;
}

LayerNormGrads layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                   const Tensor& mean, const Tensor& rstd) {
  check_defined(x, "layer_norm_backward");
  if (!is_floating(x.dtype())) fail("layer_norm_backward: floating-point input required, got {}", x.describe());
  if (x.dim() < 1) fail("layer_norm_backward: input must have at least one axis, got {}", x.describe());
  for (const Tensor* t : {&dy, &mean, &rstd})
    if (!t->defined()) fail("layer_norm_backward: dy, mean and rstd are required");
  const Shape row_shape(x.shape().begin(), x.shape().end() - 1);
  if (dy.shape() != x.shape())
    fail("layer_norm_backward: dy {} must have the shape of the input {}", dy.describe(), x.describe());
  if (mean.shape() != row_shape || rstd.shape() != row_shape)
    fail("layer_norm_backward: mean {} and rstd {} must be {} for the input {}", mean.describe(), rstd.describe(),
         shape_str(row_shape), x.describe());
  if (weight.defined() && weight.shape() != Shape{x.size(-1)})
    fail("layer_norm_backward: weight {} must be [{}] for the input {}", weight.describe(), x.size(-1), x.describe());
  for (const Tensor* t : {&dy, &weight, &mean, &rstd})
    if (t->defined()) {
      check_same_dtype(x, *t, "layer_norm_backward");
      check_same_device(x, *t, "layer_norm_backward");
    }
  const int64_t D = x.size(-1);
  const int64_t rows = D ? x.numel() / D : 0;
  LayerNormGrads g{Tensor::empty(x.shape(), x.dtype(), x.device()), Tensor(), Tensor()};
  if (weight.defined()) {
    g.dweight = Tensor::empty({D}, x.dtype(), x.device());
    g.dbias = Tensor::empty({D}, x.dtype(), x.device());
  }
  Tensor dx2 = g.dx.view({rows, D});
  backend_for(x.device()).layer_norm_backward(
      dy.contiguous().view({rows, D}), x.contiguous().view({rows, D}),
      weight.defined() ? weight.contiguous() : weight, mean.contiguous().view({rows}),
      rstd.contiguous().view({rows}), dx2, g.dweight, g.dbias);
  return g;
}

// ------------------------------------------------------------ indexing

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index) {
  check_defined(x, "index_select");
  check_dtype(index, kInt64, "index_select (index)");
  check_same_device(x, index, "index_select");
  axis = normalize_axis(axis, x.shape(), "index_select");
  Tensor x3 = three_axis_view(x, axis);
  Tensor idx = index.contiguous().view({index.numel()});
  Tensor out = Tensor::empty({x3.size(0), idx.size(0), x3.size(2)}, x.dtype(), x.device());
  backend_for(x.device()).index_select(x3, idx, out);
  Shape shape(x.shape().begin(), x.shape().begin() + axis);
  shape.insert(shape.end(), index.shape().begin(), index.shape().end());
  shape.insert(shape.end(), x.shape().begin() + axis + 1, x.shape().end());
  return out.view(shape);
}

Tensor index_add(const Shape& shape, int64_t axis, const Tensor& index, const Tensor& src) {
  check_defined(src, "index_add");
  check_dtype(index, kInt64, "index_add (index)");
  check_same_device(src, index, "index_add");
  axis = normalize_axis(axis, shape, "index_add");
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  if (src.numel() != outer * index.numel() * inner)
    fail("index_add: source {} does not match index {} in a target of shape {}", src.describe(),
         index.describe(), shape_str(shape));
  Tensor out = Tensor::zeros(shape, src.dtype(), src.device());
  Tensor out3 = out.view({outer, shape[axis], inner});
  backend_for(src.device()).index_add(index.contiguous().view({index.numel()}),
                                      src.contiguous().view({outer, index.numel(), inner}), out3);
  return out;
}

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  check_defined(x, "gather");
  check_dtype(index, kInt64, "gather (index)");
  check_same_device(x, index, "gather");
  axis = normalize_axis(axis, x.shape(), "gather");
  if (index.dim() != x.dim()) fail("gather: index {} must have the rank of {}", index.describe(), x.describe());
  for (int64_t i = 0; i < x.dim(); ++i)
    if (i != axis && index.size(i) != x.size(i))
      fail("gather: index {} and input {} differ on axis {}", index.describe(), x.describe(), i);
  Tensor x3 = three_axis_view(x, axis);
  Tensor i3 = three_axis_view(index, axis);
  Tensor out = Tensor::empty(i3.shape(), x.dtype(), x.device());
  backend_for(x.device()).gather(x3, i3, out);
  return out.view(index.shape());
}

Tensor scatter_add(const Shape& shape, int64_t axis, const Tensor& index, const Tensor& src) {
  check_defined(src, "scatter_add");
  check_dtype(index, kInt64, "scatter_add (index)");
  check_same_device(src, index, "scatter_add");
  axis = normalize_axis(axis, shape, "scatter_add");
  if (index.shape() != src.shape())
    fail("scatter_add: index {} and source {} must have the same shape", index.describe(), src.describe());
  // The adjoint of gather: the index has the target's shape except along `axis` (the backend
  // walks the index with the target's outer and inner sizes).
  bool matches = index.dim() == static_cast<int64_t>(shape.size());
  for (int64_t i = 0; matches && i < index.dim(); ++i) matches = i == axis || index.size(i) == shape[i];
  if (!matches)
    fail("scatter_add: index {} must have the target's shape {} on every axis but {}", index.describe(),
         shape_str(shape), axis);
  Tensor out = Tensor::zeros(shape, src.dtype(), src.device());
  Tensor out3 = three_axis_view(out, axis);
  backend_for(src.device()).scatter_add(three_axis_view(index, axis), three_axis_view(src, axis), out3);
  return out;
}

// ------------------------------------------------------------ joining

Tensor cat(const std::vector<Tensor>& tensors, int64_t axis) {
  if (tensors.empty()) fail("cat: no tensors given");
  const Tensor& first = tensors[0];
  axis = normalize_axis(axis, first.shape(), "cat");
  Shape shape = first.shape();
  int64_t total = 0;
  for (const Tensor& t : tensors) {
    check_defined(t, "cat");
    check_same_dtype(first, t, "cat");
    check_same_device(first, t, "cat");
    if (t.dim() != first.dim()) fail("cat: ranks differ ({} vs {})", first.describe(), t.describe());
    for (int64_t i = 0; i < t.dim(); ++i)
      if (i != axis && t.size(i) != first.size(i))
        fail("cat: {} and {} differ on axis {} (concatenating along {})", first.describe(), t.describe(), i, axis);
    total += t.size(axis);
  }
  shape[axis] = total;
  Tensor out = Tensor::empty(shape, first.dtype(), first.device());
  int64_t at = 0;
  for (const Tensor& t : tensors) {
    Tensor dst = out.narrow(axis, at, t.size(axis));
    backend_for(out.device()).copy(t, dst);
    at += t.size(axis);
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t axis) {
  if (tensors.empty()) fail("stack: no tensors given");
  axis = normalize_axis(axis, tensors[0].shape(), "stack", 1);
  std::vector<Tensor> expanded;
  for (const Tensor& t : tensors) {
    check_defined(t, "stack");
    if (t.shape() != tensors[0].shape())
      fail("stack: shapes differ ({} vs {})", tensors[0].describe(), t.describe());
    check_same_dtype(tensors[0], t, "stack");
    check_same_device(tensors[0], t, "stack");
    expanded.push_back(t.unsqueeze(axis));
  }
  return cat(expanded, axis);
}

// ------------------------------------------------------------ random

namespace {
Tensor random_tensor(RandomKind kind, const char* op, const Shape& shape, double a, double b, Generator& gen,
                     DType dtype, Device device) {
  if (!is_floating(dtype)) fail("{}: floating-point dtype required, got {}", op, dtype_name(dtype));
  Tensor out = Tensor::empty(shape, dtype, device);
  const uint64_t offset = gen.reserve(static_cast<uint64_t>(out.numel()));
  backend_for(device).random(kind, out, a, b, gen.seed(), offset);
  return out;
}
}  // namespace

Tensor uniform(const Shape& shape, double lo, double hi, Generator& gen, DType dtype, Device device) {
  if (!(lo <= hi) || !std::isfinite(lo) || !std::isfinite(hi))
    fail("uniform: the range [{}, {}) must be finite with lo <= hi", lo, hi);
  return random_tensor(RandomKind::Uniform, "uniform", shape, lo, hi, gen, dtype, device);
}
Tensor normal(const Shape& shape, double mean, double stddev, Generator& gen, DType dtype, Device device) {
  if (!(stddev >= 0.0) || !std::isfinite(stddev) || !std::isfinite(mean))
    fail("normal: mean {} and stddev {} must be finite with stddev >= 0", mean, stddev);
  return random_tensor(RandomKind::Normal, "normal", shape, mean, stddev, gen, dtype, device);
}
Tensor bernoulli(const Shape& shape, double p, Generator& gen, DType dtype, Device device) {
  if (!(p >= 0.0 && p <= 1.0)) fail("bernoulli: probability must be in [0, 1], got {}", p);
  return random_tensor(RandomKind::Bernoulli, "bernoulli", shape, p, 0.0, gen, dtype, device);
}

Tensor randperm(int64_t n, Generator& gen) {
  if (n < 0) fail("randperm: n must be >= 0, got {}", n);
  // Sort-free Fisher-Yates driven by one Philox draw per element (host side).
  Tensor keys = uniform({n}, 0.0, 1.0, gen, kFloat64);
  const double* u = keys.data<double>();
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = std::min<int64_t>(i, static_cast<int64_t>(u[i] * static_cast<double>(i + 1)));
    std::swap(perm[i], perm[j]);
  }
  return Tensor::from_vector(perm, {n});
}

// ------------------------------------------------------------ comparison helpers

double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) fail("max_abs_diff: shapes differ ({} vs {})", a.describe(), b.describe());
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  double m = 0.0;
  for (size_t i = 0; i < va.size(); ++i) {
    const double d = std::abs(va[i] - vb[i]);
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    m = std::max(m, d);
  }
  return m;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.shape() != b.shape()) return false;
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  for (size_t i = 0; i < va.size(); ++i)
    if (!(std::abs(va[i] - vb[i]) <= atol + rtol * std::abs(vb[i]))) return false;
  return true;
}

}  // namespace posgrad
