// Shape ops as differentiable views: the backward of a view maps the gradient back to the
// input's shape (reshape back, inverse permutation, zero-padding a slice, summing an expand).
#include <numeric>

#include "autograd/functions.h"

namespace posgrad {

namespace {
using Grads = std::vector<Tensor>;
}

Variable reshape(const Variable& x, const Shape& shape) {
  const Shape in = x.shape();
  return record("reshape", x.value().reshape(shape), {x},
                [in](const Tensor& g, const std::vector<bool>&) { return Grads{g.reshape(in)}; });
}

Variable permute(const Variable& x, const std::vector<int64_t>& order) {
  std::vector<int64_t> inverse(order.size());
  Tensor out = x.value().permute(order);
  for (size_t i = 0; i < order.size(); ++i) inverse[normalize_axis(order[i], x.dim(), "permute")] = static_cast<int64_t>(i);
  return record("permute", out, {x},
                [inverse](const Tensor& g, const std::vector<bool>&) { return Grads{g.permute(inverse)}; });
}

Variable transpose(const Variable& x, int64_t a, int64_t b) {
  return record("transpose", x.value().transpose(a, b), {x},
                [a, b](const Tensor& g, const std::vector<bool>&) { return Grads{g.transpose(a, b)}; });
}

Variable slice(const Variable& x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  const Shape in = x.shape();
  const DType dt = x.dtype();
  const Device dev = x.device();
  return record("slice", x.value().slice(axis, start, end, step), {x},
                [=](const Tensor& g, const std::vector<bool>&) {
                  Tensor full = Tensor::zeros(in, dt, dev);
                  full.slice(axis, start, end, step).copy_(g);
                  return Grads{full};
                });
}

Variable narrow(const Variable& x, int64_t axis, int64_t start, int64_t length) {
  x.value().narrow(axis, start, length);  // argument checks
  return slice(x, axis, start, start + length);
}

Variable select(const Variable& x, int64_t axis, int64_t index) {
  axis = normalize_axis(axis, x.shape(), "select");
  const int64_t n = x.size(axis);
  if (index < -n || index >= n)
    fail("select: index {} is out of range for axis {} of {}", index, axis, x.value().describe());
  if (index < 0) index += n;
  return squeeze(slice(x, axis, index, index + 1), axis);
}

Variable expand(const Variable& x, const Shape& shape) {
  const Shape in = x.shape();
  return record("expand", x.value().expand(shape), {x},
                [in](const Tensor& g, const std::vector<bool>&) { return Grads{sum_to(g, in)}; });
}

Variable squeeze(const Variable& x, int64_t axis) {
  const Shape in = x.shape();
  return record("squeeze", x.value().squeeze(axis), {x},
                [in](const Tensor& g, const std::vector<bool>&) { return Grads{g.reshape(in)}; });
}

Variable unsqueeze(const Variable& x, int64_t axis) {
  const Shape in = x.shape();
  return record("unsqueeze", x.value().unsqueeze(axis), {x},
                [in](const Tensor& g, const std::vector<bool>&) { return Grads{g.reshape(in)}; });
}

Variable flatten(const Variable& x, int64_t start_axis, int64_t end_axis) {
  return reshape(x, x.value().flatten(start_axis, end_axis).shape());
}

Variable contiguous(const Variable& x) {
  if (x.value().is_contiguous()) return x;
  return record("contiguous", x.value().contiguous(), {x},
                [](const Tensor& g, const std::vector<bool>&) { return Grads{g}; });
}

Variable cat(const std::vector<Variable>& xs, int64_t axis) {
  std::vector<Tensor> values;
  for (const Variable& x : xs) values.push_back(x.value());
  Tensor out = cat(values, axis);  // checks ranks, sizes, dtypes and the axis
  const int64_t ax = normalize_axis(axis, out.shape(), "cat");
  std::vector<int64_t> sizes;
  for (const Tensor& v : values) sizes.push_back(v.size(ax));
  return record("cat", out, xs, [sizes, ax](const Tensor& g, const std::vector<bool>& n) {
    Grads grads(sizes.size());
    int64_t at = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (n[i]) grads[i] = g.narrow(ax, at, sizes[i]);
      at += sizes[i];
    }
    return grads;
  });
}

Variable stack(const std::vector<Variable>& xs, int64_t axis) {
  if (xs.empty()) fail("stack: no tensors given");
  std::vector<Variable> expanded;
  const int64_t ax = normalize_axis(axis, xs[0].shape(), "stack", 1);
  for (const Variable& x : xs) {
    if (x.shape() != xs[0].shape() || x.dtype() != xs[0].dtype() || x.device() != xs[0].device())
      fail("stack: inputs differ ({} vs {})", xs[0].value().describe(), x.value().describe());
    expanded.push_back(unsqueeze(x, ax));
  }
  return cat(expanded, ax);
}

}  // namespace posgrad
