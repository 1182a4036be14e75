// The "dynamic_span" modulator (see dynamic_span.h).
// Shapes: letters of shape_legend.h; S, Rr and W are dynamic_span.h's maximum span, ramp and window.
#include "attention/spans/dynamic_span.h"

#include "attention/spans/max_span_option.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace posgrad {

DynamicSpan::DynamicSpan(int64_t width, int64_t heads, int64_t max_span, double ramp, double bias_init,
                         double loss_coef)
    : width_(width), heads_(heads), max_span_(max_span), ramp_(ramp), loss_coef_(loss_coef) {
  if (heads <= 0 || width <= 0) fail("dynamic_span: needs a positive width and heads, got {} and {}", width, heads);
  if (max_span < 1) fail("dynamic_span: option max_span must be >= 1, got {}", max_span);
  if (!(ramp > 0.0)) fail("dynamic_span: option ramp must be > 0, got {}", ramp);
  if (!std::isfinite(bias_init)) fail("dynamic_span: option bias_init must be a finite number, got {}", bias_init);
  if (!(loss_coef >= 0.0)) fail("dynamic_span: option loss_coef must be >= 0, got {}", loss_coef);
  v_ = register_parameter("v", Tensor::zeros({heads, width}, kFloat32));
  b_ = register_parameter("b", Tensor::full({heads}, bias_init, kFloat32));
}

void DynamicSpan::set_query_inputs(const Variable& x) {
  if (x.dim() != 3 || x.size(2) != width_)
    fail("dynamic_span: the query inputs must be [B, Nq, {}], got {}", width_, x.value().describe());
  if (x.dtype() != v_.dtype())
    fail("dynamic_span: parameter v is {} but the query inputs are {}; convert the hook with to()",
         v_.value().describe(), x.value().describe());
  // z = S sigmoid(x v^T + b)      [B, Nq, H] -> [B, H, Nq]
  const Variable logits = matmul(x, transpose(v_, 0, 1)) + reshape(b_, {1, 1, heads_});
  z_ = permute(sigmoid(logits) * static_cast<double>(max_span_), {0, 2, 1});
}

const Variable& DynamicSpan::spans() const {
  if (!z_.defined())
    fail("dynamic_span: no query inputs yet: the attention layer passes them before attending "
         "(MultiHeadAttention does; a layer that does not cannot use this span)");
  return z_;
}

void DynamicSpan::check_positions(const PositionPair& positions) const {
  if (positions.is_tree() || positions.dims() != 1)
    fail("dynamic_span: needs 1-D sequence positions, got {}", positions.describe());
  if (positions.queries().tokens() != spans().size(2))
    fail("dynamic_span: spans were computed for {} queries, but the positions describe {}", spans().size(2),
         positions.describe());
}

int64_t DynamicSpan::kept_distance(const PositionPair& positions) const {
  check_positions(positions);
  const std::vector<double> z = spans().value().to_vector<double>();
  const double zmax = *std::max_element(z.begin(), z.end());
  // m > 0 needs d - 1 < z + Rr, i.e. d <= ceil(z + Rr).
  const auto keep = static_cast<int64_t>(std::ceil(zmax + ramp_));
  return std::min({max_span_, keep, -positions.relative_lo()[0]});
}

std::optional<OffsetBox> DynamicSpan::key_range(const PositionPair& positions) const {
  return OffsetBox{{-std::max<int64_t>(kept_distance(positions), 1)}, {-1}};
}

Variable DynamicSpan::row_mask(const PositionPair& positions) const {
  const int64_t W = kept_distance(positions) + 1;
  std::vector<double> ramp_start(static_cast<size_t>(W)), allowed(static_cast<size_t>(W));
  for (int64_t c = 0; c < W; ++c) {
    const int64_t d = W - 1 - c;
    ramp_start[static_cast<size_t>(c)] = (ramp_ - static_cast<double>(d - 1)) / ramp_;  // (Rr - (d - 1)) / Rr
    allowed[static_cast<size_t>(c)] = (d >= 1 && d <= max_span_) ? 1.0 : 0.0;
  }
  const Variable& z = spans();
  const DType dtype = z.dtype();
  const Device device = z.value().device();
  // m = clamp(z / Rr + (Rr - (d - 1)) / Rr, 0, 1) * [1 <= d <= S]      [B, H, Nq, W]
  const Variable ramp = unsqueeze(z, 3) * (1.0 / ramp_) +
                        Variable(Tensor::from_vector(ramp_start, {1, 1, 1, W}).to(dtype).to(device));
  return clamp(ramp, 0.0, 1.0) * Variable(Tensor::from_vector(allowed, {1, 1, 1, W}).to(dtype).to(device));
}

AttentionTerms DynamicSpan::attention_terms(const PositionPair& positions, DType) {
  AttentionTerms terms;
  terms.row_prob_mask = row_mask(positions);
  return terms;
}

Variable DynamicSpan::regulariser() { return mean(spans()) * loss_coef_; }

std::string DynamicSpan::summary() const {
  std::vector<std::string> b;
  for (double x : b_.value().to_vector<double>()) b.push_back(fmt::format("{:.2f}", x));
  if (!z_.defined()) return fmt::format("dynamic_span (S {}, ramp {}): b [{}]", max_span_, ramp_, fmt::join(b, ", "));
  const std::vector<double> z = z_.value().to_vector<double>();
  double mean_z = 0.0;
  for (double x : z) mean_z += x / static_cast<double>(z.size());
  return fmt::format("dynamic_span (S {}, ramp {}): last forward's span z mean {:.1f}, max {:.1f}; b [{}]", max_span_,
                     ramp_, mean_z, *std::max_element(z.begin(), z.end()), fmt::join(b, ", "));
}

std::shared_ptr<AttentionHook> make_dynamic_span(const HookContext& context, const HookOptions& options, Generator&) {
  return std::make_shared<DynamicSpan>(context.width, context.heads, max_span_option(context, options, "dynamic_span"),
                                       options.number("ramp", 32.0), options.number("bias_init", -4.0),
                                       options.number("loss_coef", 2e-6));
}

}  // namespace posgrad
