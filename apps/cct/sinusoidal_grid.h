// "sinusoidal_2d": the true 2-D sinusoidal absolute encoding of a grid of tokens. The first D/2
// features of token (r, c) are the 1-D sinusoid of width D/2 at its row r, the last D/2 the one
// at its column c (each as "sinusoidal": pe[p, 2i] = sin(p base^(-2i/(D/2))), pe[p, 2i+1] = cos).
// APE's "Sinusoidal 2D" baseline is instead a 1-D sinusoid over the flattened index (spec ape.md
// section 10 item 8), which the built-in "sinusoidal" scheme computes; CCT offers both.
// An AbsoluteEncoding: the model adds it to its tokens. Registered by the CCT model
// (register_sinusoidal_grid) through the public registry, so no attention/ file changes.
// Option: base (10000). An error for a width not divisible by 4 or positions that are not a 2-D grid.
// Deliberately not here: grids of other dimensions, learned per-axis tables.
// Shapes: letters of shape_legend.h.
#pragma once

#include "attention/registry.h"

namespace posgrad {

class SinusoidalGrid : public AbsoluteEncoding {
 public:
  SinusoidalGrid(int64_t width, double base);
  Variable embed(const Variable& x, const Positions& positions) override;  // [B, N, D] -> + pe
  std::string summary() const override;
  Tensor table(int64_t rows, int64_t cols) const;  // pe [rows * cols, D] in float64

 private:
  int64_t width_;
  double base_;
};

// Registers "sinusoidal_2d" with the hook registry (idempotent).
void register_sinusoidal_grid();

}  // namespace posgrad
