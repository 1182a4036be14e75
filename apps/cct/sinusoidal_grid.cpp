// "sinusoidal_2d" (see sinusoidal_grid.h).
// Shapes: letters of shape_legend.h.
#include "apps/cct/sinusoidal_grid.h"

#include <cmath>

namespace posgrad {

SinusoidalGrid::SinusoidalGrid(int64_t width, double base) : width_(width), base_(base) {
  if (width <= 0 || width % 4 != 0) fail("sinusoidal_2d: the width must be a positive multiple of 4, got {}", width);
  if (!(base > 1.0)) fail("sinusoidal_2d: option base must be > 1, got {}", base);
}

Tensor SinusoidalGrid::table(int64_t rows, int64_t cols) const {
  const int64_t D = width_, half = D / 2;
  std::vector<double> pe(static_cast<size_t>(rows * cols * D));
  auto sinusoid = [&](int64_t p, int64_t c) {
    const double angle = static_cast<double>(p) * std::pow(base_, -2.0 * static_cast<double>(c / 2) / static_cast<double>(half));
    return c % 2 == 0 ? std::sin(angle) : std::cos(angle);
  };
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k)
      for (int64_t c = 0; c < half; ++c) {
        const size_t t = static_cast<size_t>((r * cols + k) * D);
        pe[t + c] = sinusoid(r, c);
        pe[t + half + c] = sinusoid(k, c);
      }
  return Tensor::from_vector(pe, {rows * cols, D});
}

Variable SinusoidalGrid::embed(const Variable& x, const Positions& positions) {
  if (positions.dims() != 2)
    fail("sinusoidal_2d: the positions must be a 2-D grid, got {}", positions.describe());
  if (x.dim() != 3 || x.size(2) != width_ || x.size(1) != positions.tokens())
    fail("sinusoidal_2d: embeddings must be [B, {}, {}] for {}, got {}", positions.tokens(), width_,
         positions.describe(), x.value().describe());
  const Tensor pe = table(positions.structure()[0], positions.structure()[1]).to(x.dtype()).to(x.device());
  return x + Variable(pe.reshape({1, x.size(1), width_}));
}

std::string SinusoidalGrid::summary() const { return fmt::format("sinusoidal_2d (base {})", base_); }

void register_sinusoidal_grid() {
  register_hook(
      "sinusoidal_2d",
      [](const HookContext& context, const HookOptions& options, Generator&) -> std::shared_ptr<AttentionHook> {
        return std::make_shared<SinusoidalGrid>(context.width, options.number("base", 10000.0));
      },
      "true 2-D sinusoidal absolute embedding: rows on the first D/2 features, columns on the last D/2 (apps/cct)");
}

}  // namespace posgrad
