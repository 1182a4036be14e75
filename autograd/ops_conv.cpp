// Differentiable conv2d and max_pool2d (tensor/conv.h), forward and backward side by side.
// conv2d saves its input and weight (the backward recomputes im2col, so no [B, k, Yo*Xo] buffer
// lives between forward and backward); max_pool2d saves only the argmax indices.
// Shapes: tensor/conv.h's letters.
#include "autograd/functions.h"
#include "tensor/conv.h"

namespace posgrad {

namespace {
using Grads = std::vector<Tensor>;
}

Variable conv2d(const Variable& x, const Variable& weight, const Variable& bias, const Conv2dOptions& options) {
  Tensor xv = x.value(), wv = weight.value();
  const bool has_bias = bias.defined();
  Tensor out = conv2d(xv, wv, has_bias ? bias.value() : Tensor(), options);
  std::vector<Variable> inputs{x, weight};
  if (has_bias) inputs.push_back(bias);
  return record("conv2d", out, inputs, [xv, wv, options, has_bias](const Tensor& g, const std::vector<bool>& n) {
    Grads grads(has_bias ? 3 : 2);
    if (n[0]) grads[0] = conv2d_input_grad(g, wv, xv.shape(), options);
    if (n[1]) grads[1] = conv2d_weight_grad(g, xv, wv.shape(), options);
    if (has_bias && n[2]) grads[2] = sum(g, {0, 2, 3});
    return grads;
  });
}

Variable max_pool2d(const Variable& x, const Pool2dOptions& options) {
  MaxPool2dResult r = max_pool2d(x.value(), options);
  Tensor argmax = r.argmax;
  Shape x_shape = x.shape();
  return record("max_pool2d", r.out, {x}, [argmax, x_shape](const Tensor& g, const std::vector<bool>&) {
    return Grads{max_pool2d_backward(g, argmax, x_shape)};
  });
}

}  // namespace posgrad
