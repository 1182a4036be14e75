// Differentiable reductions. The gradient of a reduction is broadcast back over the reduced
// axes: sum -> g, mean -> g / count, amax/amin -> g shared equally among the extreme elements,
// var -> g * 2 (x - mean) / (count - correction).
#include <algorithm>

#include "autograd/functions.h"

namespace posgrad {

namespace {
using Grads = std::vector<Tensor>;

// Shape of the reduction output with keepdim, so the gradient can be broadcast back. Called after
// the forward, which has already checked the axes (with the op's name in the error).
Shape kept_shape(const Shape& in, const std::vector<int64_t>& axes) {
  Shape s = in;
  if (axes.empty()) {
    std::fill(s.begin(), s.end(), 1);
    return s;
  }
  for (int64_t a : axes) s[normalize_axis(a, in, "reduce")] = 1;
  return s;
}

int64_t reduced_count(const Shape& in, const Shape& kept) { return shape_numel(in) / std::max<int64_t>(shape_numel(kept), 1); }
}  // namespace

Variable sum(const Variable& x, const std::vector<int64_t>& axes, bool keepdim) {
  Tensor out = sum(x.value(), axes, keepdim);
  const Shape in = x.shape(), kept = kept_shape(in, axes);
  return record("sum", out, {x}, [in, kept](const Tensor& g, const std::vector<bool>&) {
    return Grads{g.reshape(kept).expand(in)};
  });
}

Variable mean(const Variable& x, const std::vector<int64_t>& axes, bool keepdim) {
  Tensor out = mean(x.value(), axes, keepdim);
  const Shape in = x.shape(), kept = kept_shape(in, axes);
  const double scale = 1.0 / static_cast<double>(std::max<int64_t>(reduced_count(in, kept), 1));
  return record("mean", out, {x},
                [in, kept, scale](const Tensor& g, const std::vector<bool>&) {
                  return Grads{mul_scalar(g.reshape(kept), scale).expand(in)};
                });
}

namespace {
Variable extreme(const Variable& x, const std::vector<int64_t>& axes, bool keepdim, bool is_max) {
  Tensor xv = x.value();
  Tensor out = is_max ? amax(xv, axes, keepdim) : amin(xv, axes, keepdim);
  const Shape in = x.shape(), kept = kept_shape(in, axes);
  return record(is_max ? "amax" : "amin", out, {x}, [xv, out, kept, axes](const Tensor& g, const std::vector<bool>&) {
    Tensor hit = eq(xv, out.reshape(kept));          // 1 where the extreme is attained
    Tensor count = sum(hit, axes, true);             // ties share the gradient equally
    return Grads{mul(hit, div(g.reshape(kept), count))};
  });
}
}  // namespace

Variable amax(const Variable& x, const std::vector<int64_t>& axes, bool keepdim) { return extreme(x, axes, keepdim, true); }
Variable amin(const Variable& x, const std::vector<int64_t>& axes, bool keepdim) { return extreme(x, axes, keepdim, false); }

Variable var(const Variable& x, const std::vector<int64_t>& axes, bool keepdim, int64_t correction) {
  Tensor xv = x.value();
  Tensor out = var(xv, axes, keepdim, correction);
  const Shape in = x.shape(), kept = kept_shape(in, axes);
  const double denom = static_cast<double>(reduced_count(in, kept) - correction);
  return record("var", out, {x},
                [xv, kept, axes, denom](const Tensor& g, const std::vector<bool>&) {
                  Tensor centered = sub(xv, mean(xv, axes, true));
                  return Grads{mul(centered, mul_scalar(g.reshape(kept), 2.0 / denom))};
                });
}

}  // namespace posgrad
