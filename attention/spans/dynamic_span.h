// The "dynamic_span" span modulator (adaptive-span paper, section 4; spec adaptive_span.md 1.1):
// every query token t of every head h gets its own span, computed from the token's input x_t
// (the layer's query input, [D]):
//
//   z_t = S sigmoid(v_h . x_t + b_h)                           in (0, S), tokens
//   m_t(d) = clamp((Rr + z_t - (d - 1)) / Rr, 0, 1)   for 1 <= d <= S,     0 otherwise
//
// at distance d = query - key (d - 1 is the paper's 0-based distance x; the current token, d = 0,
// gets 0 as in the adaptive span). The probabilities are multiplied by m_t and renormalised as
// the adaptive span does, p <- p m / (sum p m + 1e-8 sum p), both sums over the keys the query
// keeps: those with m_t(d) > 0, d <= ceil(z_t + Rr) (the per-token form of the spec's trimming,
// section 2.2). v [H, D] (init 0) and b [H] (init bias_init, -4 as in the paper) are the hook's
// parameters; gradients reach them and x through z_t on both paths.
//
// Hooks used:
//   set_query_inputs()  z_t of every query row from the layer's xq [B, Nq, D], once per forward.
//   key_range()   lo = -min(S, ceil(max_t z_t + Rr)), hi = -1: the longest span of the call.
//   attention_terms()  row_prob_mask (attention_terms.h): the mask above per query row, over the
//                 window of distances 0 .. -lo, [B, H, Nq, W]. Its rows' supports are the
//                 per-query key ranges: the fused path visits only d = 1 .. ceil(z_t + Rr) for
//                 query t (O(N mean span) instead of O(N longest span)).
//   regulariser() loss_coef * mean over (b, h, t) of z_t of the last forward: the span loss on
//                 the mean span (training only; the model adds it to the loss).
//
// Costs: the table is [B, H, Nq, W] with W - 1 the call's longest span + Rr, built with autograd
// ops (a clamp per entry): as large as the scores the fused path computes at the longest span.
// Options: max_span S (default N - 1 of the context), ramp Rr (32), bias_init b (-4), loss_coef
// (2e-6). 1-D sequences only (a grid or a tree is an Error: a per-token span has no direction on
// a grid). Deliberately not here: the clamp of the adaptive span (z stays in (0, S) by its
// sigmoid), a cache of previous segments (the layer's memory), key_pe.
// Shapes: letters of shape_legend.h; S here is the maximum span (option max_span), W the window.
#pragma once

#include "attention/registry.h"

namespace posgrad {

class DynamicSpan : public AttentionHook {
 public:
  DynamicSpan(int64_t width, int64_t heads, int64_t max_span, double ramp, double bias_init, double loss_coef);

  void set_query_inputs(const Variable& queries_from) override;  // xq [B, Nq, D] -> z [B, H, Nq]
  std::optional<OffsetBox> key_range(const PositionPair& positions) const override;
  AttentionTerms attention_terms(const PositionPair& positions, DType dtype) override;  // row_prob_mask
  Variable regulariser() override;
  std::string summary() const override;

  const Variable& v() const { return v_; }  // [H, D]
  const Variable& b() const { return b_; }  // [H]
  int64_t max_span() const { return max_span_; }
  double ramp() const { return ramp_; }
  double loss_coef() const { return loss_coef_; }
  // z of the last set_query_inputs [B, H, Nq] (an Error before the first).
  const Variable& spans() const;
  // The mask rows [B, H, Nq, W] at `positions` (differentiable in z): column c is distance W - 1 - c.
  Variable row_mask(const PositionPair& positions) const;
  // The keys before the query that the call keeps: min(S, ceil(max z + Rr), the farthest key).
  int64_t kept_distance(const PositionPair& positions) const;

 private:
  void check_positions(const PositionPair& positions) const;
  int64_t width_, heads_, max_span_;
  double ramp_, loss_coef_;
  Variable v_, b_;
  Variable z_;  // [B, H, Nq] of the last forward
};

std::shared_ptr<AttentionHook> make_dynamic_span(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
