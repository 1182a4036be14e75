// The "alibi" scheme (Press et al. 2022, "Train Short, Test Long"): a fixed linear penalty on
// distance added to the logits, per head h = 1..H with slope m_h:
//
//   s_ij += -m_h |j - i|                  (sequences; with a causal mask only j <= i is seen, so
//                                          this is the paper's causal bias -m_h (i - j))
//   s_ij += -m_h ||c_j - c_i||_2          (grids, an extension: Euclidean distance of the cells)
//
// Slopes: for H a power of two, the geometric sequence m_h = 2^(-8h/H), h = 1..H. Otherwise,
// with n = 2^floor(log2 H) (the largest power of two below H): the n slopes 2^(-8h/n), h = 1..n,
// followed by H - n slopes of the sequence for 2n heads taken at odd h, 2^(-8h/(2n)) for
// h = 1, 3, 5, ..., 2(H-n)-1 (the rule of the paper's reference code; it interleaves the new
// slopes between the old ones).
//
// Implementation: a [H, R] table over the relative grid, the positional `bias` of
// attention_terms.h; not scaled by 1/sqrt(Dh). No
// parameters and no options. Trees are an Error (no offsets). Deliberately not here: learned
// slopes and the causal-only variant that never sees future keys (a causal mask does that).
// Shapes: letters of shape_legend.h.
#pragma once

#include "attention/registry.h"

namespace posgrad {

// The H slopes described above, head 0 first.
std::vector<double> alibi_slopes(int64_t heads);

class Alibi : public AttentionHook {
 public:
  explicit Alibi(int64_t heads);

  AttentionTerms attention_terms(const PositionPair& positions, DType dtype) override;  // bias [H, R]
  std::string summary() const override;

  // The bias over the relative grid, [H, R] float64: -m_h * distance(entry).
  Tensor relative_table(const PositionPair& positions) const;
  const std::vector<double>& slopes() const { return slopes_; }

 private:
  int64_t heads_;
  std::vector<double> slopes_;
};

std::shared_ptr<AttentionHook> make_alibi(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
