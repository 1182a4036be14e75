// The "rope" scheme (Su et al., RoFormer): queries and keys are rotated pairwise by angles that
// grow with the token's position, so q_i' . k_j' depends on positions only through j - i.
// Interleaved pairs (2i, 2i+1), i < Dh/2, at position p:
//
//   q'_{2i}   = q_{2i} cos(p theta_i) - q_{2i+1} sin(p theta_i)
//   q'_{2i+1} = q_{2i+1} cos(p theta_i) + q_{2i} sin(p theta_i),      theta_i = base^(-2i/Dh)
//
// (the same for k). Positions: the flat index 0..N-1 for sequences. Grids (option axes):
//   flat   the row-major cell index, a 1-D rotation over the flattened grid (default);
//   split  an extension for n-D grids: the Dh/2 pairs are cut into n consecutive groups (as
//          equal as possible, the first groups one larger), group d rotates by coordinate d
//          (2-D: the first half of the pairs by the row, the second half by the column), and
//          group d of G pairs has its own frequency ladder theta_t = base^(-2t/(2G)), t < G, so
//          every axis spans the full range of frequencies. On a sequence split = flat.
// Tree positions are an Error (there is no flat offset; pass Positions::sequence(N) for the
// flattened order, as APE's baselines do).
//
// Options: trainable (false: "frozen", theta is a buffer; true: "tuned", theta is a parameter,
// the APE repo's default), base (10000), axes (flat | split). An odd Dh is an Error.
// State: "theta" [Dh/2], the frequency of each pair (frozen: a record; the angles are computed in
// double from base). Deliberately not here: rotating only part
// of the head ("partial rotary"), NTK/YaRN base scaling.
// Shapes: letters of shape_legend.h.
#pragma once

#include "attention/registry.h"

namespace posgrad {

class Rope : public AttentionHook {
 public:
  Rope(int64_t head_width, int64_t grid_dims, bool trainable, double base, bool split_axes);

  void rotate(Variable& q, Variable& k, const PositionPair& positions) override;
  std::string summary() const override;

  // x [..., N, Dh] rotated for `positions` (what rotate applies to q and to k).
  Variable apply(const Variable& x, const Positions& side) const;
  const Variable& theta() const { return theta_; }  // [Dh/2]
  bool trainable() const { return trainable_; }
  // The coordinate every pair rotates by, per token: [N, Dh/2] float64 (positions p, or the
  // grid coordinate of the pair's axis under axes: split).
  Tensor pair_positions(const Positions& side) const;

 private:
  int64_t head_width_, grid_dims_;
  bool trainable_, split_;
  double base_;
  Variable theta_;
  std::vector<double> theta_exact_;  // theta in double (frozen rope rotates by these)
};

std::shared_ptr<AttentionHook> make_rope(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
