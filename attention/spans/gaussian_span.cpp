// The "gaussian_span" modulator (see gaussian_span.h).
// Shapes: letters of shape_legend.h.
#include "attention/spans/gaussian_span.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace posgrad {

GaussianSpan::GaussianSpan(std::vector<int64_t> structure, const GaussianSpanOptions& options)
    : structure_(std::move(structure)), options_(options) {
  if (structure_.empty()) fail("gaussian_span needs the positional structure (the grid or sequence size)");
  if (!std::isfinite(options.sigma)) fail("option 'sigma' must be finite, got {}", options.sigma);
  if (!(options.min_sigma > 0) || !std::isfinite(options.min_sigma))
    fail("option 'min_sigma' must be a positive number, got {}", options.min_sigma);
  if (options.min_sigma < kGaussianSpanSmallestMinSigma)
    fail("gaussian_span: option 'min_sigma' must be at least {} (got {}): a smaller floor keeps the same centre-only "
         "span, and its square underflows float32, which turns G into 0/0 = NaN",
         kGaussianSpanSmallestMinSigma, options.min_sigma);
  if (!(options.threshold < 1.0) || !std::isfinite(options.threshold))
    fail("option 'threshold' must be < 1 (<= 0 means no box), got {}", options.threshold);
  const int64_t n = static_cast<int64_t>(structure_.size());
  sigma_ = register_parameter("sigma", Tensor::full({n}, options.sigma), options.learn_sigma);
}

void GaussianSpan::check_positions(const PositionPair& positions) const {
  if (positions.is_tree() || positions.dims() != sigma_.size(0))
    fail("gaussian_span: built for {}-D positions (one sigma per dim), got {}", sigma_.size(0), positions.describe());
}

std::vector<double> GaussianSpan::sigma_values() const { return sigma_.value().to(kCPU).to_vector<double>(); }

std::vector<int64_t> GaussianSpan::half_widths(const std::vector<int64_t>& structure) const {
  const std::vector<double> sigma = sigma_values();
  if (structure.size() != sigma.size())
    fail("gaussian_span: {} sigmas for a {}-D structure", sigma.size(), structure.size());
  const bool box = options_.threshold > 0;
  const double reach = box ? std::sqrt(-2.0 * std::log(options_.threshold)) : 0.0;
  std::vector<int64_t> half(structure.size());
  for (size_t d = 0; d < structure.size(); ++d) {
    const int64_t full = structure[d] - 1;
    if (!box) {
      half[d] = full;
      continue;
    }
    const double s = std::max(std::abs(sigma[d]), options_.min_sigma);
    const double x = std::ceil(reach * s * static_cast<double>(full));
    // Compared as doubles before the cast: a huge sigma gives an x beyond int64 (UB to convert).
    half[d] = std::isfinite(x) && x >= 0.0 && x < static_cast<double>(full) ? static_cast<int64_t>(x) : full;
  }
  return half;
}

std::vector<int64_t> GaussianSpan::span_sizes(const std::vector<int64_t>& structure) const {
  std::vector<int64_t> sizes = half_widths(structure);
  for (int64_t& s : sizes) s = 2 * s + 1;
  return sizes;
}

std::optional<OffsetBox> GaussianSpan::key_range(const PositionPair& positions) const {
  check_positions(positions);
  if (options_.threshold <= 0) return std::nullopt;
  // The normalised grid's unit per dim (S_d - 1 for self-attention), as a structure's size.
  std::vector<int64_t> extent;
  for (size_t d = 0; d < positions.relative_lo().size(); ++d)
    extent.push_back(std::max(-positions.relative_lo()[d], positions.relative_hi()[d]) + 1);
  OffsetBox box;
  for (int64_t h : half_widths(extent)) {
    box.lo.push_back(-h);
    box.hi.push_back(h);
  }
  return box;
}

Variable GaussianSpan::gaussian(const PositionPair& positions, DType dtype) const {
  check_positions(positions);
  if (dtype != sigma_.dtype())
    fail("gaussian_span: sigma is {} but the logits are {}; convert the module with to()", dtype_name(sigma_.dtype()),
         dtype_name(dtype));
  const Tensor x = positions.normalised_relative_grid(dtype).to(sigma_.device());  // [R, n]
  const double floor = options_.min_sigma * options_.min_sigma;
  Variable s2 = maximum(square(sigma_), Variable(Tensor::full({}, floor, sigma_.dtype(), sigma_.device())));  // [n]
  return exp(sum(Variable(square(x)) / s2, {1}) * -0.5);  // [R]
}

AttentionTerms GaussianSpan::attention_terms(const PositionPair& positions, DType dtype) {
  AttentionTerms terms;
  (options_.positional_only ? terms.positional_modulation : terms.modulation) = gaussian(positions, dtype);
  return terms;
}

std::string GaussianSpan::summary() const {
  std::vector<std::string> sig;
  for (double s : sigma_values()) sig.push_back(fmt::format("{:.4g}", s));
  return fmt::format("gaussian_span(sigma=[{}], span={}, threshold={}, multiply={})", fmt::join(sig, ", "),
                     options_.threshold > 0 ? fmt::format("{}", fmt::join(span_sizes(), "x")) : std::string("full"),
                     options_.threshold, options_.positional_only ? "positional_logits" : "all_logits");
}

std::shared_ptr<AttentionHook> make_gaussian_span(const HookContext& context, const HookOptions& options, Generator&) {
  GaussianSpanOptions o;
  o.sigma = options.number("sigma", o.sigma);
  o.learn_sigma = options.flag("learn_sigma", o.learn_sigma);
  o.threshold = options.number("threshold", o.threshold);
  o.positional_only = options.choice("multiply", "all_logits", {"all_logits", "positional_logits"}) == "positional_logits";
  o.min_sigma = options.number("min_sigma", o.min_sigma);
  return std::make_shared<GaussianSpan>(context.structure, o);
}

}  // namespace posgrad
