// The "adaptive_span" modulator (see adaptive_span.h).
// Shapes: letters of shape_legend.h; S and Rr are adaptive_span.h's maximum span and ramp.
#include "attention/spans/adaptive_span.h"

#include "attention/spans/max_span_option.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace posgrad {

AdaptiveSpan::AdaptiveSpan(int64_t heads, int64_t max_span, double ramp, double init, double loss_coef,
                           bool attend_self, int64_t granularity)
    : heads_(heads), max_span_(max_span), ramp_(ramp), loss_coef_(loss_coef), attend_self_(attend_self),
      granularity_(granularity) {
  if (heads <= 0) fail("adaptive_span: needs at least one head, got {}", heads);
  if (max_span < 1) fail("adaptive_span: option max_span must be >= 1, got {}", max_span);
  if (!(ramp > 0.0)) fail("adaptive_span: option ramp must be > 0, got {}", ramp);
  if (!(init >= 0.0 && init <= 1.0)) fail("adaptive_span: option init must be in [0, 1], got {}", init);
  if (!(loss_coef >= 0.0)) fail("adaptive_span: option loss_coef must be >= 0, got {}", loss_coef);
  if (granularity < 1) fail("adaptive_span: option granularity must be >= 1, got {}", granularity);
  c_ = register_parameter("c", Tensor::full({heads}, init, kFloat32));
}

void AdaptiveSpan::check_positions(const PositionPair& positions) const {
  if (positions.is_tree() || positions.dims() != 1)
    fail("adaptive_span: needs 1-D sequence positions, got {}", positions.describe());
}

int64_t AdaptiveSpan::kept_distance() const {
  const std::vector<double> c = c_.value().to_vector<double>();
  const double zmax = *std::max_element(c.begin(), c.end()) * static_cast<double>(max_span_);
  // Every key with d > ceil(max z) + Rr has mask exactly 0 (m > 0 needs d - 1 < z + Rr).
  const double keep = std::max(0.0, std::ceil(zmax)) + std::ceil(ramp_);
  const int64_t max_size = std::min<int64_t>(max_span_, static_cast<int64_t>(keep));
  return max_span_ - std::min(max_span_ - 1, max_span_ - max_size) / granularity_ * granularity_;
}

// The spec trims in steps of 64 keys ("for the memory management") and only ever removes keys
// whose mask is exactly 0 for every head. By default (granularity 1) we trim exactly, to the last
// key any head can see. The two differ only through the renormaliser's epsilon: a trimmed key has p m = 0, so it changes
// only the softmax normaliser Z, which the pipeline's p m / (sum p m + 1e-8) sees as
// e m / (sum e m + 1e-8 Z): each kept weight changes by a relative amount below 1e-8 / q, q the
// head's in-span mass (sum p m over all keys). Negligible while q is large; visible (1e-3 and
// more) when the keys beyond the span take nearly all the softmax mass (q ~ 1e-6).
std::optional<OffsetBox> AdaptiveSpan::key_range(const PositionPair& positions) const {
  check_positions(positions);
  const int64_t s = attend_self_ ? 1 : 0;
  return OffsetBox{{-(kept_distance() - s)}, {s - 1}};
}

Variable AdaptiveSpan::relative_mask(const PositionPair& positions, DType dtype) const {
  check_positions(positions);
  const int64_t R = positions.relative_size();
  const std::vector<int64_t> offsets = positions.relative_offsets().to_vector<int64_t>();  // [R, 1]: key - query
  std::vector<double> ramp_start(static_cast<size_t>(R)), allowed(static_cast<size_t>(R));
  for (int64_t e = 0; e < R; ++e) {
    const int64_t d = -offsets[static_cast<size_t>(e)];
    ramp_start[static_cast<size_t>(e)] = (ramp_ - static_cast<double>(d - 1)) / ramp_;  // (Rr - (d - 1)) / Rr
    allowed[static_cast<size_t>(e)] = (d >= (attend_self_ ? 0 : 1) && d <= max_span_) ? 1.0 : 0.0;
  }
  const Device device = c_.value().device();
  Variable c = reshape(c_, {heads_, 1});
  if (c.dtype() != dtype) fail("adaptive_span: parameter c is {} but scores are {}", c.value().describe(), dtype_name(dtype));
  // m = clamp(c S / Rr + (Rr - (d - 1)) / Rr, 0, 1) * [1 <= d <= S]      [H, R]
  Variable ramp = c * (static_cast<double>(max_span_) / ramp_) +
                  Variable(Tensor::from_vector(ramp_start, {1, R}).to(dtype).to(device));
  return clamp(ramp, 0.0, 1.0) * Variable(Tensor::from_vector(allowed, {1, R}).to(dtype).to(device));
}

AttentionTerms AdaptiveSpan::attention_terms(const PositionPair& positions, DType) {
  AttentionTerms terms;
  terms.prob_mask = relative_mask(positions, c_.dtype());
  return terms;
}

Variable AdaptiveSpan::regulariser() { return mean(c_) * (loss_coef_ * static_cast<double>(max_span_)); }

void AdaptiveSpan::after_optimizer_step() {
  Tensor& c = c_.mutable_value();
  c.copy_(clamp(c, 0.0, 1.0));
}

std::vector<double> AdaptiveSpan::current_spans() const {
  std::vector<double> z = c_.value().to_vector<double>();
  for (double& v : z) v *= static_cast<double>(max_span_);
  return z;
}

double AdaptiveSpan::average_span() const {
  const std::vector<double> z = current_spans();
  double mean_z = 0.0;
  for (double v : z) mean_z += v / static_cast<double>(z.size());
  return std::clamp(std::ceil(mean_z) + ramp_, 0.0, static_cast<double>(max_span_));
}

double AdaptiveSpan::largest_span() const {
  const std::vector<double> z = current_spans();
  return std::clamp(std::ceil(*std::max_element(z.begin(), z.end())) + ramp_, 0.0, static_cast<double>(max_span_));
}

std::string AdaptiveSpan::summary() const {
  std::vector<std::string> z;
  for (double v : current_spans()) z.push_back(fmt::format("{:.1f}", v));
  return fmt::format("adaptive_span (S {}, ramp {}): avg span {}, max span {}, z [{}]", max_span_, ramp_,
                     average_span(), largest_span(), fmt::join(z, ", "));
}

std::shared_ptr<AttentionHook> make_adaptive_span(const HookContext& context, const HookOptions& options, Generator&) {
  return std::make_shared<AdaptiveSpan>(context.heads, max_span_option(context, options, "adaptive_span"), options.number("ramp", 32.0),
                                        options.number("init", 0.0), options.number("loss_coef", 2e-6),
                                        options.flag("attend_self", false), options.integer("granularity", 1));
}

}  // namespace posgrad
