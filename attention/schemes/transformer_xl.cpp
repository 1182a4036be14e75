// The "txl_baseline" and "transformer_xl" schemes (see transformer_xl.h).
// Shapes: letters of shape_legend.h.
#include "attention/schemes/transformer_xl.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "nn/init.h"

namespace posgrad {

namespace {

void require_1d(const char* name, const std::vector<int64_t>& structure) {
  if (structure.size() > 1)
    fail("{} is 1-D only, got a {}-D structure {}; use \"siren\" for grids", name, structure.size(),
         fmt::join(structure, "x"));
}

// The cache key of a 1-D pair's relative grid: (lo, hi).
std::tuple<int64_t, int64_t> offset_range(const char* name, const PositionPair& positions) {
  if (positions.is_tree() || positions.dims() != 1)
    fail("{} is 1-D only, got {}; use \"siren\" for grids", name, positions.describe());
  return {positions.relative_lo()[0], positions.relative_hi()[0]};
}

}  // namespace

Tensor baseline_sinusoids(int64_t R, int64_t width, DType dtype) {
  std::vector<double> s(static_cast<size_t>(R * width));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t m = 0; 2 * m < width; ++m) {
      const double angle = static_cast<double>(r) * std::pow(10000.0, -2.0 * static_cast<double>(m) / static_cast<double>(width));
      s[static_cast<size_t>(r * width + 2 * m)] = std::sin(angle);
      if (2 * m + 1 < width) s[static_cast<size_t>(r * width + 2 * m + 1)] = std::cos(angle);
    }
  return Tensor::from_vector(s, {R, width}).to(dtype);
}

Tensor txl_sinusoids(int64_t lo, int64_t hi, int64_t width, DType dtype) {
  const int64_t R = hi - lo + 1, half = width / 2;
  std::vector<double> s(static_cast<size_t>(R * width));
  for (int64_t r = 0; r < R; ++r) {
    const double distance = static_cast<double>(-(lo + r));  // i - j = -(key - query)
    for (int64_t k = 0; k < half; ++k) {
      const double angle = distance * std::pow(10000.0, -2.0 * static_cast<double>(k) / static_cast<double>(width));
      s[static_cast<size_t>(r * width + k)] = std::sin(angle);
      s[static_cast<size_t>(r * width + half + k)] = std::cos(angle);
    }
  }
  return Tensor::from_vector(s, {R, width}).to(dtype);
}

// ------------------------------------------------------------------ txl_baseline

SinusoidBaseline::SinusoidBaseline(int64_t width, int64_t heads, int64_t hidden, Generator& gen)
    : RelativeEncodingScheme(width, heads), hidden_(hidden) {
  if (hidden < 2 || hidden % 2 != 0) fail("txl_baseline: option 'hidden' must be even and >= 2, got {}", hidden);
  init_biases_xavier(gen);
  proj_ = register_module("proj", std::make_shared<Linear>(hidden, width, true, gen));  // PyTorch default init
}

Variable SinusoidBaseline::encode(const PositionPair& positions, DType dtype) {
  const auto [lo, hi] = offset_range("txl_baseline", positions);
  Tensor& table = cache_[{lo, hi, dtype}];
  if (!table.defined()) table = baseline_sinusoids(hi - lo + 1, hidden_, dtype);
  return proj_->forward(Variable(table.to(u_.device())));  // [R, D]
}

std::string SinusoidBaseline::summary() const { return fmt::format("txl_baseline(hidden={})", hidden_); }

// ------------------------------------------------------------------ transformer_xl

TransformerXLRelative::TransformerXLRelative(int64_t width, int64_t heads, Init init, Generator& gen)
    : RelativeEncodingScheme(width, heads), init_(init) {
  if (width % 2 != 0) fail("transformer_xl: the sinusoid needs an even width, got {}", width);
  w_kr_ = register_module("w_kr", std::make_shared<Linear>(width, width, false, gen));
  if (init == Init::TransformerXL) {
    init::normal_(u_.mutable_value(), 0.0, 0.02, gen);
    init::normal_(v_.mutable_value(), 0.0, 0.02, gen);
    init::normal_(w_kr_->weight().value(), 0.0, 0.02, gen);
  } else {
    init_biases_xavier(gen);
    init::xavier_uniform_(w_kr_->weight().value(), gen);
  }
}

Variable TransformerXLRelative::encode(const PositionPair& positions, DType dtype) {
  const auto [lo, hi] = offset_range("transformer_xl", positions);
  Tensor& table = cache_[{lo, hi, dtype}];
  if (!table.defined()) table = txl_sinusoids(lo, hi, width_, dtype);
  return w_kr_->forward(Variable(table.to(u_.device())));  // [R, D]
}

std::string TransformerXLRelative::summary() const {
  return fmt::format("transformer_xl(init={})", init_ == Init::TransformerXL ? "txl" : "xavier");
}

// ------------------------------------------------------------------ factories

std::shared_ptr<AttentionHook> make_txl_baseline(const HookContext& context, const HookOptions& options, Generator& gen) {
  require_1d("txl_baseline", context.structure);
  return std::make_shared<SinusoidBaseline>(context.width, context.heads, options.integer("hidden", 64), gen);
}

std::shared_ptr<AttentionHook> make_transformer_xl(const HookContext& context, const HookOptions& options, Generator& gen) {
  require_1d("transformer_xl", context.structure);
  const std::string init = options.choice("init", "xavier", {"xavier", "txl"});
  return std::make_shared<TransformerXLRelative>(
      context.width, context.heads, init == "txl" ? TransformerXLRelative::Init::TransformerXL : TransformerXLRelative::Init::Xavier, gen);
}

}  // namespace posgrad
