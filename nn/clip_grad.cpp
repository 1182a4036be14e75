// Gradient clipping: see clip_grad.h.
#include "nn/clip_grad.h"

#include <algorithm>
#include <cmath>

#include "tensor/ops.h"

namespace posgrad {

namespace {

// sum |x|^p over the tensor (or max |x| when p is infinite), in double. NaN propagates.
double norm_accumulate(const Tensor& t, double p) {
  const Tensor c = t.to(kCPU).contiguous();
  return dispatch_float(c.dtype(), "clip_grad_norm_", [&]<typename T>() {
    const T* x = c.data<T>();
    const int64_t n = c.numel();
    double acc = 0;
    if (std::isinf(p)) {
      for (int64_t i = 0; i < n; ++i) {
        const double a = std::abs(static_cast<double>(x[i]));
        if (std::isnan(a)) return a;
        if (a > acc) acc = a;
      }
    } else if (p == 2.0) {
      for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    } else if (p == 1.0) {
      for (int64_t i = 0; i < n; ++i) acc += std::abs(static_cast<double>(x[i]));
    } else {
      for (int64_t i = 0; i < n; ++i) acc += std::pow(std::abs(static_cast<double>(x[i])), p);
    }
    return acc;
  });
}

}  // namespace

double grad_norm(const std::vector<Variable>& params, double norm_type) {
  if (!(norm_type > 0)) fail("grad_norm: norm_type must be > 0 (or infinity), got {}", norm_type);
  const bool inf = std::isinf(norm_type);
  double acc = 0;
  for (const Variable& p : params) {
    if (!p.defined() || !p.grad().defined()) continue;
    const double a = norm_accumulate(p.grad(), norm_type);
    if (inf) acc = (a > acc || std::isnan(a)) ? a : acc;
    else acc += a;
  }
  if (inf) return acc;
  if (norm_type == 2.0) return std::sqrt(acc);
  if (norm_type == 1.0) return acc;
  return std::pow(acc, 1.0 / norm_type);
}

double clip_grad_norm_(const std::vector<Variable>& params, double max_norm, double norm_type) {
  if (!(max_norm >= 0)) fail("clip_grad_norm_: max_norm must be >= 0, got {}", max_norm);
  const double total = grad_norm(params, norm_type);
  if (!std::isfinite(total)) return total;  // leave the evidence for the caller (see header)
  const double coef = max_norm / (total + 1e-6);
  if (coef >= 1.0) return total;
  for (const Variable& p : params) {
    if (!p.defined() || !p.grad().defined()) continue;
    Tensor g = p.grad();  // shares storage: scaling it scales the parameter's gradient
    g.copy_(g * coef);
  }
  return total;
}

void clip_grad_value_(const std::vector<Variable>& params, double clip_value) {
  if (!(clip_value >= 0)) fail("clip_grad_value_: clip_value must be >= 0, got {}", clip_value);
  for (const Variable& p : params) {
    if (!p.defined() || !p.grad().defined()) continue;
    Tensor g = p.grad();
    g.copy_(clamp(g, -clip_value, clip_value));
  }
}

}  // namespace posgrad
