// LayerNorm over the last axis: y = (x - mean) / sqrt(var + eps) * weight + bias, with the biased
// variance, like PyTorch's nn.LayerNorm(D). x [..., D] -> [..., D]. weight [D] starts at 1 and
// bias [D] at 0 (affine = true); without affine there are no parameters.
//
// Deliberately not here: normalising over several trailing axes, RMSNorm, fused residual adds.
// Shapes: letters of shape_legend.h.
#pragma once

#include "nn/module.h"

namespace posgrad {

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t width, double eps = 1e-5, bool affine = true);

  Variable forward(const Variable& x) override;  // [..., D] -> [..., D]

  const Variable& weight() const { return weight_; }  // [D], undefined without affine
  const Variable& bias() const { return bias_; }      // [D], undefined without affine
  int64_t width() const { return width_; }
  double eps() const { return eps_; }
  std::string extra_repr() const override;

 private:
  int64_t width_;
  double eps_;
  Variable weight_, bias_;
};

}  // namespace posgrad
