// The "adaptive_span" span modulator (Sukhbaatar et al. 2019; spec adaptive_span.md sections 1,
// 2, 7, 8): every head h learns how far back it looks. With c_h in [0, 1] (parameter "c" [H]),
// the maximum span S (option max_span) and the ramp length Rr (option ramp), the probability of
// the key at distance d = query - key is multiplied by
//
//   m_h(d) = clamp((Rr + c_h S - (d - 1)) / Rr, 0, 1)   for 1 - s <= d <= S,     0 otherwise
//
// (z_h = c_h S is the span in tokens; d - 1 is the paper's 0-based distance; s = 1 with option
// attend_self, where the current token gets 1, else s = 0 and it gets 0 as in the original code).
// The pipeline then renormalises p <- p m / (sum p m + 1e-8). Without attend_self the first token
// has no key at all and outputs zero attention.
//
// Hooks used:
//   key_range()   the window of W keys, distances 1 - s .. W - s (offsets lo = -(W - s),
//                 hi = s - 1), with the trimming of spec section 2.2:
//                   max_size = min(S, ceil(max_h z_h) + ceil(Rr)),
//                   W = S - floor(min(S - 1, S - max_size) / g) g     (g: option granularity)
//                 It shrinks as the spans shrink, so the fused path costs O(N (max span + Rr)).
//   attention_terms()  prob_mask: the mask above as an [H, R] table over the relative grid,
//                 differentiable in c.
//   regulariser() loss_coef * S * mean_h(c_h), the per-layer span loss (spec 1.4); the model
//                 sums it over layers and adds it to the training loss only.
//   after_optimizer_step()  clamps c to [0, 1] in place (spec 1.5).
//
// Options: max_span S (default N - 1 of the context), ramp Rr (32), init c (0), loss_coef
// (2e-6), attend_self (false), granularity g (1: trim exactly to the last key any head can see;
// the paper's code uses 64; g >= S never trims). 1-D sequences only (a grid or a tree is an
// Error). Deliberately not here: the learned position term key_pe of the original model (a
// separate scheme, key_pe.h), the cache of previous segments, and the dynamic-span variant.
// Shapes: letters of shape_legend.h; S here is the maximum span (option max_span), not a grid size.
#pragma once

#include "attention/registry.h"

namespace posgrad {

class AdaptiveSpan : public AttentionHook {
 public:
  AdaptiveSpan(int64_t heads, int64_t max_span, double ramp, double init, double loss_coef, bool attend_self = false,
               int64_t granularity = 1);

  std::optional<OffsetBox> key_range(const PositionPair& positions) const override;
  AttentionTerms attention_terms(const PositionPair& positions, DType dtype) override;  // prob_mask [H, R]
  Variable regulariser() override;
  void after_optimizer_step() override;
  std::string summary() const override;

  const Variable& c() const { return c_; }  // [H]
  int64_t max_span() const { return max_span_; }
  double ramp() const { return ramp_; }
  double loss_coef() const { return loss_coef_; }
  // The mask over the relative grid of `positions`: [H, R] (differentiable in c).
  Variable relative_mask(const PositionPair& positions, DType dtype) const;
  // z_h = c_h S per head, in tokens.
  std::vector<double> current_spans() const;
  // As the original logger: ceil(mean_h z_h) + Rr (resp. max_h), clamped to [0, S].
  double average_span() const;
  double largest_span() const;
  // The window W of key_range (see above): the keys a query sees, the current one included with
  // attend_self. With granularity 1, min(S, max(0, ceil(max_h z_h)) + ceil(Rr)).
  int64_t kept_distance() const;
  bool attend_self() const { return attend_self_; }

 private:
  void check_positions(const PositionPair& positions) const;
  int64_t heads_, max_span_;
  double ramp_, loss_coef_;
  bool attend_self_;
  int64_t granularity_;
  Variable c_;
};

std::shared_ptr<AttentionHook> make_adaptive_span(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
