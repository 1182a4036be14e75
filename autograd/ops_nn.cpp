// Differentiable matmul, softmax/log-softmax and LayerNorm. Matmul's backward is two more
// matmuls with transposed views (no copies); softmax and LayerNorm use their backend backward
// kernels.
#include "autograd/functions.h"

namespace posgrad {

namespace {
using Grads = std::vector<Tensor>;
}

Variable matmul(const Variable& a, const Variable& b) {
  Tensor av = a.value(), bv = b.value();
  return record("matmul", matmul(av, bv), {a, b}, [av, bv](const Tensor& g, const std::vector<bool>& n) {
    Tensor ga, gb;
    if (n[0]) ga = sum_to(matmul(g, bv.transpose(-1, -2)), av.shape());  // dA = dC B^T
    if (n[1]) gb = sum_to(matmul(av.transpose(-1, -2), g), bv.shape());  // dB = A^T dC
    return Grads{ga, gb};
  });
}

Variable softmax(const Variable& x, int64_t axis) {
  Tensor out = softmax(x.value(), axis);
  return record("softmax", out, {x}, [out, axis](const Tensor& g, const std::vector<bool>&) {
    return Grads{softmax_backward(out, g, axis, false)};
  });
}

Variable log_softmax(const Variable& x, int64_t axis) {
  Tensor out = log_softmax(x.value(), axis);
  return record("log_softmax", out, {x}, [out, axis](const Tensor& g, const std::vector<bool>&) {
    return Grads{softmax_backward(out, g, axis, true)};
  });
}

Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps) {
  const bool affine = weight.defined();
  if (affine != bias.defined())
    fail("layer_norm: weight and bias must both be given or both be absent (input {}, {} given)",
         x.defined() ? x.value().describe() : std::string("undefined"), affine ? "only weight" : "only bias");
  Tensor xv = x.value();
  Tensor wv = affine ? weight.value() : Tensor();
  LayerNormResult r = layer_norm(xv, wv, affine ? bias.value() : Tensor(), eps);
  std::vector<Variable> inputs{x};
  if (affine) inputs.insert(inputs.end(), {weight, bias});
  Tensor mean = r.mean, rstd = r.rstd;
  return record("layer_norm", r.y, inputs, [xv, wv, mean, rstd, affine](const Tensor& g, const std::vector<bool>&) {
    LayerNormGrads lg = layer_norm_backward(g, xv, wv, mean, rstd);
    if (!affine) return Grads{lg.dx};
    return Grads{lg.dx, lg.dweight, lg.dbias};
  });
}

}  // namespace posgrad
