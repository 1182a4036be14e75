// "ape_grid": algebraic positional encoding of n-D grids. Each head's Dh features are split into
// n equal parts of d = Dh / n; part a is acted on by the axis-a generator W_{a,h} (orthogonal,
// d x d) raised to the token's coordinate on axis a. The map of a token at coordinates c is the
// direct sum W_{0,h}^{c_0} (+) ... (+) W_{n-1,h}^{c_{n-1}}, so for n = 2 (rows r, columns c):
//
//   q~ . k~ = q_0^T W_0^(r_k - r_q) k_0 + q_1^T W_1^(c_k - c_q) k_1
//   logit   = (q~ . k~ / sqrt(Dh)) * decay^floor(|key - query|)      (Euclidean offset length)
//
// One doubling table [I, W, ..., W^(S_max - 1)] covers all n*H generators (S_max = the largest
// axis); each axis then gathers its powers at the tokens' coordinates. Keys are mapped with their
// own coordinates (the released code used the query maps for both, harmless only in self
// attention).
//
// Options: axes (n; default: the context's structure size, else 2), init, trainable, decay
// (ape_common.h). Parameter: orthogonal.generators A [n*H, d, d], generator a*H + h for (axis a,
// head h), as in the released code. An error if Dh is not divisible by n.
// Deliberately not here: sequences read as flat indices (ape_sequence.h) and trees (ape_tree.h).
// Shapes: letters of shape_legend.h; d = Dh / n, S_max as above, and the W in [I, W, ...] is a
// generator, not the window.
#pragma once

#include "attention/schemes/ape_common.h"

namespace posgrad {

class ApeGrid : public AttentionHook {
 public:
  ApeGrid(int64_t heads, int64_t head_width, int64_t axes, const ApeSettings& settings, Generator& gen);

  void rotate(Variable& q, Variable& k, const PositionPair& positions) override;
  AttentionTerms attention_terms(const PositionPair& positions, DType dtype) override;  // modulation: the decay [R]
  std::string summary() const override;

  // The maps of axis a for every token: W_a^{c_a(t)}, [H, N, d, d], for a = 0..n-1.
  std::vector<Variable> axis_maps(const Positions& side) const;
  // decay^floor(Euclidean length of the offset) over the relative entries: [R].
  Tensor decay_table(const PositionPair& positions, DType dtype) const;
  const OrthogonalGenerators& generators() const { return *generators_; }
  int64_t axes() const { return axes_; }

 private:
  int64_t heads_, head_width_, axes_, part_;
  ApeSettings settings_;
  std::shared_ptr<OrthogonalGenerators> generators_;
};

// floor(sqrt(s)) for an integer s >= 0, exact.
int64_t integer_sqrt(int64_t s);

std::shared_ptr<AttentionHook> make_ape_grid(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
