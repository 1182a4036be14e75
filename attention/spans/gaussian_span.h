// GaussianSpan (registry name "gaussian_span"): posattn's differentiable span (posattn spec
// section 6). One sigma per positional dim (shared by the heads and the batch) defines
//
//   G(x) = exp(-1/2 sum_d x_d^2 / sigma_d^2),   x = normalised relative offset in [-1, 1]^n,
//
// evaluated on the R entries of the relative grid (a modulation table of attention_terms.h). It
// MULTIPLIES THE PRE-SOFTMAX LOGITS by it (not the probabilities): all of them (multiply:
// all_logits, posattn's setting) or only the positional part (positional_logits). Far keys are
// pulled towards logit 0, not -inf.
//
// Threshold t (option `threshold`, 0.1): key_range() returns the box |offset_d| <= half_d with
//   half_d = ceil(sqrt(-2 ln t) * |sigma_d| * (S_d - 1)),  clipped to S_d - 1,
// so SpanSize_d = min(2 half_d + 1, 2 S_d - 1). No gradient flows through the box; t <= 0 means
// no box (every key stays). The box is what lets the fused path skip the keys outside it.
//
// sigma is raw and unconstrained (only sigma^2 enters). posattn gives NaN at sigma = 0; here
// sigma^2 is clamped below at min_sigma^2 (option `min_sigma`, 1e-3) in G and |sigma| at
// min_sigma in the box, so sigma -> 0 keeps only the centre and never gives NaN (the gradient
// of sigma is 0 while it is clamped). min_sigma itself must be >= 1e-12: below that its square
// underflows float32 (to 0 from about 1e-23), and a floor of 1e-12 already keeps the centre
// alone on any grid shorter than 1e11.
//
// Options: sigma (0.3), learn_sigma (true), threshold (0.1), multiply (all_logits |
// positional_logits), min_sigma (1e-3). Parameter: sigma [n] (requires_grad = learn_sigma).
//
// Deliberately not here: a span regulariser (posattn has none), per-head sigmas, trees.
// Shapes: letters of shape_legend.h.
#pragma once

#include "attention/registry.h"

namespace posgrad {

// The smallest accepted min_sigma (see above).
inline constexpr double kGaussianSpanSmallestMinSigma = 1e-12;

struct GaussianSpanOptions {
  double sigma = 0.3;
  bool learn_sigma = true;
  double threshold = 0.1;  // <= 0: no box
  bool positional_only = false;  // multiply: positional_logits
  double min_sigma = 1e-3;
};

class GaussianSpan : public AttentionHook {
 public:
  // `structure`: the grid the layer will see (n = its size); half_widths() and span_sizes()
  // without an argument report the box for it.
  GaussianSpan(std::vector<int64_t> structure, const GaussianSpanOptions& options);

  std::optional<OffsetBox> key_range(const PositionPair& positions) const override;
  // modulation (all_logits) or positional_modulation (positional_logits): G [R].
  AttentionTerms attention_terms(const PositionPair& positions, DType dtype) override;
  std::string summary() const override;

  // G on the relative grid of `positions`: [R] in `dtype`, differentiable in sigma.
  Variable gaussian(const PositionPair& positions, DType dtype) const;
  // Box half-widths and span sizes for `structure` (default: the one given at construction).
  // Without a threshold: S_d - 1 and 2 S_d - 1.
  std::vector<int64_t> half_widths(const std::vector<int64_t>& structure) const;
  std::vector<int64_t> half_widths() const { return half_widths(structure_); }
  std::vector<int64_t> span_sizes(const std::vector<int64_t>& structure) const;
  std::vector<int64_t> span_sizes() const { return span_sizes(structure_); }
  std::vector<double> sigma_values() const;

  const Variable& sigma() const { return sigma_; }  // [n]
  const GaussianSpanOptions& options() const { return options_; }

 private:
  void check_positions(const PositionPair& positions) const;

  std::vector<int64_t> structure_;
  GaussianSpanOptions options_;
  Variable sigma_;
};

std::shared_ptr<AttentionHook> make_gaussian_span(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
