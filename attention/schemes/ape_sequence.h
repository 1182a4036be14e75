// "ape": algebraic positional encoding of sequences (Kogkalidis et al., NeurIPS 2024). One
// learnable orthogonal W_h = exp(A_h - A_h^T) per head; the token at position p (its flat index,
// so a grid is read as its row-major sequence) gets the map W_h^p:
//
//   q~_i = W^i q_i,  k~_j = W^j k_j        =>  q~_i . k~_j = q_i^T W^(j - i) k_j
//   logit_ij = (q~_i . k~_j / sqrt(Dh)) * decay^|j - i|
//
// The table [I, W, ..., W^(N-1)] is built by doubling on every forward (inside the autograd
// graph). The decay is an [R] modulation table over the relative grid (attention_terms.h), so the
// fused path runs it as the reference does.
//
// Options: init (rope_like | near_identity | normal), trainable, decay (ape_common.h).
// Parameter: orthogonal.generators A [H, Dh, Dh].
// Deliberately not here: grids with one generator per axis (ape_grid.h) and trees (ape_tree.h).
// Shapes: letters of shape_legend.h; the W in [I, W, ...] is the generator W_h, not the window.
#pragma once

#include "attention/schemes/ape_common.h"

namespace posgrad {

class ApeSequence : public AttentionHook {
 public:
  ApeSequence(int64_t heads, int64_t head_width, const ApeSettings& settings, Generator& gen);

  void rotate(Variable& q, Variable& k, const PositionPair& positions) override;
  AttentionTerms attention_terms(const PositionPair& positions, DType dtype) override;  // modulation: the decay [R]
  std::string summary() const override;

  // The map of every token of one side: W^t for its flat indices t (0..N-1 unless the sequence
  // starts later), [H, N, Dh, Dh].
  Variable token_maps(const Positions& side) const;
  // decay^|flat offset| over the relative entries of `positions`: [R] (flat offset = sum_d o_d *
  // stride_d, i.e. key index - query index).
  Tensor decay_table(const PositionPair& positions, DType dtype) const;
  const OrthogonalGenerators& generators() const { return *generators_; }
  const ApeSettings& settings() const { return settings_; }

 private:
  int64_t heads_, head_width_;
  ApeSettings settings_;
  std::shared_ptr<OrthogonalGenerators> generators_;
};

std::shared_ptr<AttentionHook> make_ape_sequence(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
