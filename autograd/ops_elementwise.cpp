// Elementwise differentiable ops: forward through tensor/ops.h, backward side by side.
// Broadcast inputs get their gradient summed back to their own shape (sum_to).
#include "autograd/functions.h"

namespace posgrad {

namespace {
using Grads = std::vector<Tensor>;
}

Variable add(const Variable& a, const Variable& b) {
  const Shape sa = a.shape(), sb = b.shape();
  return record("add", add(a.value(), b.value()), {a, b}, [sa, sb](const Tensor& g, const std::vector<bool>& n) {
    return Grads{n[0] ? sum_to(g, sa) : Tensor(), n[1] ? sum_to(g, sb) : Tensor()};
  });
}

Variable sub(const Variable& a, const Variable& b) {
  const Shape sa = a.shape(), sb = b.shape();
  return record("sub", sub(a.value(), b.value()), {a, b}, [sa, sb](const Tensor& g, const std::vector<bool>& n) {
    return Grads{n[0] ? sum_to(g, sa) : Tensor(), n[1] ? sum_to(neg(g), sb) : Tensor()};
  });
}

Variable mul(const Variable& a, const Variable& b) {
  Tensor av = a.value(), bv = b.value();
  return record("mul", mul(av, bv), {a, b}, [av, bv](const Tensor& g, const std::vector<bool>& n) {
    return Grads{n[0] ? sum_to(mul(g, bv), av.shape()) : Tensor(), n[1] ? sum_to(mul(g, av), bv.shape()) : Tensor()};
  });
}

Variable div(const Variable& a, const Variable& b) {
  Tensor av = a.value(), bv = b.value();
  Tensor out = div(av, bv);
  return record("div", out, {a, b}, [av, bv, out](const Tensor& g, const std::vector<bool>& n) {
    Tensor ga, gb;
    if (n[0]) ga = sum_to(div(g, bv), av.shape());
    if (n[1]) gb = sum_to(neg(div(mul(g, out), bv)), bv.shape());  // -g * a / b^2
    return Grads{ga, gb};
  });
}

namespace {
// maximum/minimum: the winner takes the gradient, ties split it half-half (like PyTorch).
Variable extremum(const Variable& a, const Variable& b, bool is_max) {
  Tensor av = a.value(), bv = b.value();
  Tensor out = is_max ? maximum(av, bv) : minimum(av, bv);
  return record(is_max ? "maximum" : "minimum", out, {a, b},
                [av, bv, is_max](const Tensor& g, const std::vector<bool>& n) {
                  Tensor a_wins = is_max ? gt(av, bv) : lt(av, bv);
                  Tensor tie = mul_scalar(eq(av, bv), 0.5);
                  Tensor wa = add(a_wins, tie);
                  Tensor ga, gb;
                  if (n[0]) ga = sum_to(mul(g, wa), av.shape());
                  if (n[1]) gb = sum_to(mul(g, add_scalar(neg(wa), 1.0)), bv.shape());
                  return Grads{ga, gb};
                });
}
}  // namespace

Variable maximum(const Variable& a, const Variable& b) { return extremum(a, b, true); }
Variable minimum(const Variable& a, const Variable& b) { return extremum(a, b, false); }

// Unary ops whose gradient is g * f'(x), with f' computed from the input and/or the output.
#define POSGRAD_UNARY(fname, expr)                                                          \
  Variable fname(const Variable& x) {                                                       \
    Tensor xv = x.value();                                                                  \
    Tensor out = fname(xv);                                                                 \
    return record(#fname, out, {x}, [xv, out](const Tensor& g, const std::vector<bool>&) { \
      return Grads{expr};                                                                   \
    });                                                                                     \
  }

POSGRAD_UNARY(neg, neg(g))
POSGRAD_UNARY(exp, mul(g, out))
POSGRAD_UNARY(log, div(g, xv))
POSGRAD_UNARY(sqrt, div(mul_scalar(g, 0.5), out))
POSGRAD_UNARY(abs, mul(g, sign(xv)))
POSGRAD_UNARY(sin, mul(g, cos(xv)))
POSGRAD_UNARY(cos, neg(mul(g, sin(xv))))
POSGRAD_UNARY(tanh, mul(g, add_scalar(neg(square(out)), 1.0)))
POSGRAD_UNARY(sigmoid, mul(g, mul(out, add_scalar(neg(out), 1.0))))
POSGRAD_UNARY(relu, mul(g, unary(UnaryOp::ReluMask, xv)))
POSGRAD_UNARY(gelu, mul(g, unary(UnaryOp::GeluGrad, xv)))
POSGRAD_UNARY(square, mul(g, mul_scalar(xv, 2.0)))
#undef POSGRAD_UNARY

Variable add_scalar(const Variable& x, double s) {
  return record("add_scalar", add_scalar(x.value(), s), {x},
                [](const Tensor& g, const std::vector<bool>&) { return Grads{g}; });
}

Variable mul_scalar(const Variable& x, double s) {
  return record("mul_scalar", mul_scalar(x.value(), s), {x},
                [s](const Tensor& g, const std::vector<bool>&) { return Grads{mul_scalar(g, s)}; });
}

Variable pow_scalar(const Variable& x, double e) {
  Tensor xv = x.value();
  return record("pow_scalar", pow_scalar(xv, e), {x}, [xv, e](const Tensor& g, const std::vector<bool>&) {
    return Grads{mul(g, mul_scalar(pow_scalar(xv, e - 1.0), e))};
  });
}

Variable clamp(const Variable& x, double lo, double hi) {
  Tensor xv = x.value();
  return record("clamp", clamp(xv, lo, hi), {x}, [xv, lo, hi](const Tensor& g, const std::vector<bool>&) {
    Tensor inside = mul(ge(xv, Tensor::full({}, lo, xv.dtype(), xv.device())),
                        le(xv, Tensor::full({}, hi, xv.dtype(), xv.device())));
    return Grads{mul(g, inside)};
  });
}

Variable where(const Tensor& cond, const Variable& a, const Variable& b) {
  const Shape sa = a.shape(), sb = b.shape();
  return record("where", where(cond, a.value(), b.value()), {a, b},
                [cond, sa, sb](const Tensor& g, const std::vector<bool>& n) {
                  Tensor zero = Tensor::zeros({}, g.dtype(), g.device());
                  Tensor ga, gb;
                  if (n[0]) ga = sum_to(where(cond, g, zero), sa);
                  if (n[1]) gb = sum_to(where(cond, zero, g), sb);
                  return Grads{ga, gb};
                });
}

Variable masked_fill(const Variable& x, const Tensor& mask, double value) {
  return record("masked_fill", masked_fill(x.value(), mask, value), {x},
                [mask](const Tensor& g, const std::vector<bool>&) { return Grads{masked_fill(g, mask, 0.0)}; });
}

}  // namespace posgrad
