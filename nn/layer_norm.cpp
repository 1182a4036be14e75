// LayerNorm (see layer_norm.h).
#include "nn/layer_norm.h"

#include "autograd/functions.h"

namespace posgrad {

LayerNorm::LayerNorm(int64_t width, double eps, bool affine) : width_(width), eps_(eps) {
  if (width <= 0) fail("LayerNorm: width must be > 0, got {}", width);
  if (!(eps > 0)) fail("LayerNorm: eps must be > 0, got {}", eps);
  if (affine) {
    weight_ = register_parameter("weight", Tensor::ones({width}));
    bias_ = register_parameter("bias", Tensor::zeros({width}));
  }
}

Variable LayerNorm::forward(const Variable& x) {
  if (x.dim() < 1 || x.size(-1) != width_)
    fail("LayerNorm({}): input {} must end in {}", width_, x.value().describe(), width_);
  return layer_norm(x, weight_, bias_, eps_);
}

std::string LayerNorm::extra_repr() const {
  return fmt::format("width={}, eps={}, affine={}", width_, eps_, weight_.defined());
}

}  // namespace posgrad
