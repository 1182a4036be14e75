// window_scores and window_weighted_sum (see window_attention_ops.h): checks, contiguous copies,
// and the autograd records. The arithmetic is in window_kernels.cpp; each op's forward and both
// input gradients are one band kernel each:
//
//   window_scores        forward  band_dots(q, k)        dq = band_apply(dS, k)   dk = band_apply_transposed(dS, q)
//   window_weighted_sum  forward  band_apply(p, v)       dp = band_dots(dOut, v)  dv = band_apply_transposed(p, dOut)
//
// Deliberately not here: device dispatch (CPU only for now; other devices are an Error).
// Shapes: letters of shape_legend.h; X, Y (and D in the band kernels) are the operands' last dims,
// Dh or Dv, not the model width.
#include "attention/window_attention_ops.h"

#include <memory>

#include "attention/window_kernels.h"

namespace posgrad {

namespace {

using window_detail::BandPlan;
using Grads = std::vector<Tensor>;
using PlanPtr = std::shared_ptr<const BandPlan>;

// Common checks of both ops: x [B, H, N, X], y [B, H, N, Y], same dtype (float32/float64), CPU,
// N equal to the window's token count. `xs`/`ys` name the inputs and their last dims.
void check_inputs(const char* op, const Tensor& x, const char* xname, const Tensor& y, const char* yname,
                  const KeyWindow& window) {
  try {
    window.validate();
  } catch (const Error& e) {
    fail("{}: {}", op, e.what());
  }
  if (!x.defined() || !y.defined()) fail("{}: undefined input", op);
  if (!x.device().is_cpu() || !y.device().is_cpu())
    fail("{}: only CPU tensors are supported for now, got {} {} and {} {}", op, xname, x.describe(), yname,
         y.describe());
  if (x.dtype() != y.dtype() || !is_floating(x.dtype()))
    fail("{}: {} and {} must share a float dtype (float32 or float64), got {} and {}", op, xname, yname,
         x.describe(), y.describe());
  if (x.dim() != 4 || y.dim() != 4 || x.size(0) != y.size(0) || x.size(1) != y.size(1) || x.size(2) != y.size(2))
    fail("{}: {} and {} must be [B, H, N, *] with equal B, H, N, got {} and {}", op, xname, yname,
         x.describe(), y.describe());
  if (x.size(2) != window.tokens())
    fail("{}: inputs have N = {} tokens but the {} has {}", op, x.size(2), window.describe(), window.tokens());
}

// A fresh [B, H, N, X] output filled by one band kernel.
template <typename Kernel>
Tensor run_kernel(const Tensor& like, int64_t last, Kernel&& kernel) {
  Tensor out = Tensor::empty({like.size(0), like.size(1), like.size(2), last}, like.dtype());
  dispatch_float(like.dtype(), "window attention", [&]<typename T>() { kernel.template operator()<T>(out.data<T>()); });
  return out;
}

// band_dots(a, b) -> [B, H, N, W]
Tensor dots(const BandPlan& P, const Tensor& a, const Tensor& b) {
  const int64_t BH = a.size(0) * a.size(1), D = a.size(3);
  return run_kernel(a, P.slots(), [&]<typename T>(T* out) {
    window_detail::band_dots<T>(P, BH, D, a.data<T>(), b.data<T>(), out);
  });
}
// band_apply(p, b) -> [B, H, N, D]
Tensor apply(const BandPlan& P, const Tensor& p, const Tensor& b) {
  const int64_t BH = p.size(0) * p.size(1), D = b.size(3);
  return run_kernel(b, D, [&]<typename T>(T* out) {
    window_detail::band_apply<T>(P, BH, D, p.data<T>(), b.data<T>(), out);
  });
}
// band_apply_transposed(p, a) -> [B, H, N, D]
Tensor apply_transposed(const BandPlan& P, const Tensor& p, const Tensor& a) {
  const int64_t BH = p.size(0) * p.size(1), D = a.size(3);
  return run_kernel(a, D, [&]<typename T>(T* out) {
    window_detail::band_apply_transposed<T>(P, BH, D, p.data<T>(), a.data<T>(), out);
  });
}

}  // namespace

Variable window_scores(const Variable& q, const Variable& k, const KeyWindow& window) {
  const char* op = "window_scores";
  if (!q.defined() || !k.defined()) fail("{}: undefined input", op);
  check_inputs(op, q.value(), "q", k.value(), "k", window);
  if (q.shape() != k.shape())
    fail("{}: q and k must both be [B, H, N, Dh] with equal shapes, got q {} and k {}", op, q.value().describe(),
         k.value().describe());
  const Tensor qc = q.value().contiguous(), kc = k.value().contiguous();
  const PlanPtr plan = std::make_shared<const BandPlan>(window_detail::make_band_plan(window));
  Tensor scores = dots(*plan, qc, kc);  // [B, H, N, W]
  return record(op, scores, {q, k}, [plan, qc, kc](const Tensor& g, const std::vector<bool>& needs) {
    const Tensor gc = g.contiguous();  // dS [B, H, N, W]
    Tensor dq, dk;
    if (needs[0]) dq = apply(*plan, gc, kc);             // dq[i] = sum_w dS[i, w] k[key(i, w)]
    if (needs[1]) dk = apply_transposed(*plan, gc, qc);  // dk[j] = sum_{key(i, w) = j} dS[i, w] q[i]
    return Grads{dq, dk};
  });
}

Variable window_weighted_sum(const Variable& p, const Variable& v, const KeyWindow& window) {
  const char* op = "window_weighted_sum";
  if (!p.defined() || !v.defined()) fail("{}: undefined input", op);
  check_inputs(op, p.value(), "p", v.value(), "v", window);
  if (p.size(3) != window.slots())
    fail("{}: p must be [B, H, N, W] with W = {} slots of the {}, got p {} (v {})", op, window.slots(),
         window.describe(), p.value().describe(), v.value().describe());
  const Tensor pc = p.value().contiguous(), vc = v.value().contiguous();
  const PlanPtr plan = std::make_shared<const BandPlan>(window_detail::make_band_plan(window));
  Tensor out = apply(*plan, pc, vc);  // [B, H, N, Dv]
  return record(op, out, {p, v}, [plan, pc, vc](const Tensor& g, const std::vector<bool>& needs) {
    const Tensor gc = g.contiguous();  // dOut [B, H, N, Dv]
    Tensor dp, dv;
    if (needs[0]) dp = dots(*plan, gc, vc);              // dp[i, w] = dOut[i] . v[key(i, w)]
    if (needs[1]) dv = apply_transposed(*plan, pc, gc);  // dv[j] = sum_{key(i, w) = j} p[i, w] dOut[i]
    return Grads{dp, dv};
  });
}

}  // namespace posgrad
