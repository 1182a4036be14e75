// The "learned_absolute" scheme (see learned_absolute.h).
// Shapes: letters of shape_legend.h.
#include "attention/schemes/learned_absolute.h"

#include <algorithm>

#include "nn/init.h"

namespace posgrad {

LearnedAbsolute::LearnedAbsolute(int64_t width, int64_t size, bool clamp, double init_std, Generator& gen)
    : width_(width), size_(size), clamp_(clamp) {
  if (width <= 0) fail("learned_absolute: width must be positive, got {}", width);
  if (size <= 0) fail("learned_absolute: option size must be positive, got {}", size);
  if (!(init_std >= 0.0)) fail("learned_absolute: option init_std must be >= 0, got {}", init_std);
  Tensor w = Tensor::empty({size, width}, kFloat32);
  init::normal_(w, 0.0, init_std, gen);
  weight_ = register_parameter("weight", w);
}

Variable LearnedAbsolute::embed(const Variable& x, const Positions& positions) {
  if (x.dim() != 3 || x.size(2) != width_)
    fail("learned_absolute: embeddings must be [B, N, {}], got {}", width_, x.value().describe());
  const int64_t N = x.size(1);
  if (N != positions.tokens())
    fail("learned_absolute: {} tokens but positions describe {} ({})", N, positions.tokens(), positions.describe());
  if (N > size_ && !clamp_)
    fail("learned_absolute: position {} is past the table of {} positions (set option size >= {}, or clamp: true "
         "to reuse the last row)", N - 1, size_, N);
  std::vector<int64_t> rows(static_cast<size_t>(N));
  for (int64_t p = 0; p < N; ++p) rows[static_cast<size_t>(p)] = std::min(p, size_ - 1);
  Variable pe = index_select(weight_, 0, Tensor::from_vector(rows, {N}).to(x.device()));  // [N, D]
  return x + unsqueeze(pe, 0);
}

std::string LearnedAbsolute::summary() const {
  return fmt::format("learned_absolute (P = {}{})", size_, clamp_ ? ", clamped" : "");
}

std::shared_ptr<AttentionHook> make_learned_absolute(const HookContext& context, const HookOptions& options, Generator& gen) {
  const int64_t fallback = context.structure.empty() ? 0 : shape_numel(context.structure);
  const int64_t size = options.integer("size", fallback);
  if (size == 0 && !options.has("size"))
    fail("learned_absolute: the context has no structure to size the table; set option size");
  return std::make_shared<LearnedAbsolute>(context.width, size, options.flag("clamp", false),
                                           options.number("init_std", 1.0), gen);
}

}  // namespace posgrad
