// Linear (see linear.h).
// Shapes: letters of shape_legend.h; M here is the leading axes flattened into rows, not keys.
#include "nn/linear.h"

#include <cmath>

#include "autograd/functions.h"
#include "nn/init.h"

namespace posgrad {

Variable linear(const Variable& x, const Variable& weight, const Variable& bias) {
  if (weight.dim() != 2) fail("linear: weight must be [out, in], got {}", weight.value().describe());
  const int64_t out = weight.size(0), in = weight.size(1);
  if (x.dim() < 1 || x.size(-1) != in)
    fail("linear: input {} must end in the weight's in_features {} (weight {})", x.value().describe(), in,
         weight.value().describe());
  if (bias.defined() && bias.shape() != Shape{out})
    fail("linear: bias {} must be [{}] to match weight {}", bias.value().describe(), out, weight.value().describe());
  // [..., in] -> [M, in] @ [in, out] -> [M, out] -> [..., out]: one GEMM over all leading axes.
  const Shape lead(x.shape().begin(), x.shape().end() - 1);
  Shape out_shape = lead;
  out_shape.push_back(out);
  const Variable x2 = x.dim() == 2 ? x : reshape(x, {shape_numel(lead), in});
  Variable y = matmul(x2, transpose(weight, 0, 1));
  if (bias.defined()) y = y + bias;
  return x.dim() == 2 ? y : reshape(y, out_shape);
}

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, Generator& gen)
    : in_(in_features), out_(out_features) {
  if (in_features < 0 || out_features < 0)
    fail("Linear: sizes must be >= 0, got in={} out={}", in_features, out_features);
  Tensor w = Tensor::empty({out_features, in_features});
  init::kaiming_uniform_(w, gen, std::sqrt(5.0));
  weight_ = register_parameter("weight", w);
  if (bias) {
    const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0.0;
    Tensor b = Tensor::empty({out_features});
    init::uniform_(b, -bound, bound, gen);
    bias_ = register_parameter("bias", b);
  }
}

Variable Linear::forward(const Variable& x) { return linear(x, weight_, bias_); }

std::string Linear::extra_repr() const {
  return fmt::format("in={}, out={}, bias={}", in_, out_, bias_.defined());
}

}  // namespace posgrad
