// Linear: y = x W^T + b, with W [out, in] and b [out] laid out like PyTorch's nn.Linear (so
// weights port between the two). x [..., in] -> y [..., out]: any leading axes (B, N, ...) are
// flattened into one GEMM and restored. Default init matches PyTorch: W ~ U(+-1/sqrt(in))
// (kaiming_uniform with a = sqrt(5)), b ~ U(+-1/sqrt(in)), drawn from the Generator given.
//
// Deliberately not here: fused activations, weight parameterisations (orthogonal, ...), or any
// other init (re-initialise weight().mutable_value() with nn/init.h).
// Shapes: letters of shape_legend.h.
#pragma once

#include "nn/module.h"
#include "tensor/random.h"

namespace posgrad {

// The function behind Linear: x [..., in], weight [out, in], bias [out] or undefined.
Variable linear(const Variable& x, const Variable& weight, const Variable& bias = Variable());

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias, Generator& gen);
  Linear(int64_t in_features, int64_t out_features, Generator& gen) : Linear(in_features, out_features, true, gen) {}

  Variable forward(const Variable& x) override;  // [..., in] -> [..., out]

  const Variable& weight() const { return weight_; }  // [out, in]
  const Variable& bias() const { return bias_; }      // [out], undefined without bias
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  std::string extra_repr() const override;

 private:
  int64_t in_, out_;
  Variable weight_, bias_;
};

}  // namespace posgrad
