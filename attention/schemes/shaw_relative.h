// The "shaw" scheme (Shaw et al. 2018; APE's "Relative" baseline): a learned vector per clipped
// relative offset, read by the query. For query i and key j (offset o = j - i):
//
//   s_ij += q_i . r[clip(j - i, -w, w)]          (NOT scaled by 1/sqrt(Dh), like the APE code)
//
// r is [2w+1, Dh] shared by every head (option per_head: true gives [H, 2w+1, Dh]); row
// o + w holds offset o. APE writes the index as clip(i - j, ...); that only mirrors the rows of a
// learned table, an equivalent parameterisation. There is no value-side term.
//
// Grids (an extension): every axis offset is clipped separately, and the table has one row per
// clipped offset vector, (2w+1)^n rows enumerated row-major (row = sum_d (clip(o_d) + w) *
// (2w+1)^(n-1-d)); on a 1-D sequence this is the formula above. Trees are an Error (no offsets).
//
// Implementation: per forward the table over the relative grid [H, R, Dh] is one index_select of
// r with the clipped offsets of the R relative entries, returned as the query_table of
// attention_terms.h - never a per-pair [N, N, Dh] tensor.
//
// Options: window w (16), per_head (false), init_std (rows start N(0, init_std^2), default 1
// like nn.Embedding). Parameter: "r". Deliberately not here: the value-side term a^V of Shaw et
// al. and sharing r across layers (models may share one hook as a shared hook).
// Shapes: letters of shape_legend.h.
#pragma once

#include "attention/registry.h"

namespace posgrad {

class ShawRelative : public AttentionHook {
 public:
  ShawRelative(int64_t heads, int64_t head_width, int64_t grid_dims, int64_t window, bool per_head, double init_std,
               Generator& gen);

  AttentionTerms attention_terms(const PositionPair& positions, DType dtype) override;  // query_table
  std::string summary() const override;

  const Variable& r() const { return r_; }  // [(2w+1)^n, Dh] or [H, (2w+1)^n, Dh]
  // The table row of every relative entry of `positions`: int64 [R].
  Tensor clipped_rows(const PositionPair& positions) const;
  // The table over the relative grid, [H, R, Dh].
  Variable relative_table(const PositionPair& positions) const;

 private:
  int64_t heads_, head_width_, grid_dims_, window_;
  bool per_head_;
  Variable r_;
};

std::shared_ptr<AttentionHook> make_shaw_relative(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
