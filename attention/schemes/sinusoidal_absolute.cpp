// The "sinusoidal" scheme (see sinusoidal_absolute.h).
// Shapes: letters of shape_legend.h.
#include "attention/schemes/sinusoidal_absolute.h"

#include <cmath>

namespace posgrad {

SinusoidalAbsolute::SinusoidalAbsolute(int64_t width, double base) : width_(width), base_(base) {
  if (width <= 0) fail("sinusoidal: width must be positive, got {}", width);
  if (!(base > 1.0)) fail("sinusoidal: option base must be > 1, got {}", base);
}

Tensor SinusoidalAbsolute::table(int64_t tokens) const {
  const int64_t N = tokens, D = width_;
  std::vector<double> pe(static_cast<size_t>(N * D));
  for (int64_t p = 0; p < N; ++p)
    for (int64_t c = 0; c < D; ++c) {
      const int64_t i = c / 2;  // pair index: columns 2i and 2i+1 share the frequency
      const double angle = static_cast<double>(p) * std::pow(base_, -2.0 * static_cast<double>(i) / static_cast<double>(D));
      pe[static_cast<size_t>(p * D + c)] = c % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  return Tensor::from_vector(pe, {N, D});
}

Variable SinusoidalAbsolute::embed(const Variable& x, const Positions& positions) {
  if (x.dim() != 3 || x.size(2) != width_)
    fail("sinusoidal: embeddings must be [B, N, {}], got {}", width_, x.value().describe());
  if (x.size(1) != positions.tokens())
    fail("sinusoidal: {} tokens but positions describe {} ({})", x.size(1), positions.tokens(), positions.describe());
  const Tensor pe = table(x.size(1)).to(x.dtype()).to(x.device());  // [N, D]
  return x + Variable(pe.reshape({1, x.size(1), width_}));
}

std::string SinusoidalAbsolute::summary() const { return fmt::format("sinusoidal (base {})", base_); }

std::shared_ptr<AttentionHook> make_sinusoidal_absolute(const HookContext& context, const HookOptions& options, Generator&) {
  return std::make_shared<SinusoidalAbsolute>(context.width, options.number("base", 10000.0));
}

}  // namespace posgrad
