// The "sinusoidal" scheme (Vaswani et al. 2017): a fixed absolute embedding added to the token
// embeddings, x [B, N, D] -> x + pe[p] with
//
//   pe[p, 2i] = sin(p * base^(-2i/D)),  pe[p, 2i+1] = cos(p * base^(-2i/D)),  base = 10000
//
// where p is the token's flat index 0..N-1. For a grid this is the row-major cell index, i.e. a
// 1-D sinusoid over the flattened grid (what APE's "Sinusoidal 2D" actually computes, spec
// ape.md section 6); for tree positions it is the token's index in the flattened sequence, as
// APE's baselines use it. An odd D leaves the last column as a sine.
//
// An AbsoluteEncoding (attention_hook.h): the model adds it to its token embeddings before the
// first layer; attention refuses it.
//
// Option: base (10000). No parameters, no buffers (the table is recomputed per call, in the
// dtype and on the device of x). Deliberately not here: scaling the token embeddings (models
// multiply by sqrt(D) themselves if they want to) and any per-axis 2-D sinusoid.
// Shapes: letters of shape_legend.h.
#pragma once

#include "attention/registry.h"

namespace posgrad {

class SinusoidalAbsolute : public AbsoluteEncoding {
 public:
  SinusoidalAbsolute(int64_t width, double base);

  Variable embed(const Variable& x, const Positions& positions) override;
  std::string summary() const override;

  // The table pe [N, D] in float64 (for tests and figures).
  Tensor table(int64_t tokens) const;

 private:
  int64_t width_;
  double base_;
};

std::shared_ptr<AttentionHook> make_sinusoidal_absolute(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
