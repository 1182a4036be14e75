// The "shaw" scheme (see shaw_relative.h).
// Shapes: letters of shape_legend.h.
#include "attention/schemes/shaw_relative.h"

#include <algorithm>

#include "nn/init.h"

namespace posgrad {

ShawRelative::ShawRelative(int64_t heads, int64_t head_width, int64_t grid_dims, int64_t window, bool per_head,
                           double init_std, Generator& gen)
    : heads_(heads), head_width_(head_width), grid_dims_(grid_dims), window_(window), per_head_(per_head) {
  if (window < 0) fail("shaw: option window must be >= 0, got {}", window);
  if (grid_dims < 1) fail("shaw: needs at least one positional dim, got {}", grid_dims);
  if (!(init_std >= 0.0)) fail("shaw: option init_std must be >= 0, got {}", init_std);
  int64_t rows = 1;
  for (int64_t d = 0; d < grid_dims; ++d) rows *= 2 * window + 1;
  if (rows > (int64_t{1} << 24))
    fail("shaw: window {} on a {}-D grid needs {} table rows; use a smaller window", window, grid_dims, rows);
  Tensor r = per_head ? Tensor::empty({heads, rows, head_width}, kFloat32) : Tensor::empty({rows, head_width}, kFloat32);
  init::normal_(r, 0.0, init_std, gen);
  r_ = register_parameter("r", r);
}

Tensor ShawRelative::clipped_rows(const PositionPair& positions) const {
  if (positions.is_tree()) fail("shaw: needs sequence or grid positions (relative offsets), got {}", positions.describe());
  const int64_t n = positions.dims(), R = positions.relative_size();
  if (n != grid_dims_)
    fail("shaw: built for {}-D positions (the context's structure) but called with {}", grid_dims_, positions.describe());
  const std::vector<int64_t> offsets = positions.relative_offsets().to_vector<int64_t>();  // [R, n]
  std::vector<int64_t> rows(static_cast<size_t>(R));
  for (int64_t e = 0; e < R; ++e) {
    int64_t row = 0;
    for (int64_t d = 0; d < n; ++d) {
      const int64_t o = std::clamp(offsets[static_cast<size_t>(e * n + d)], -window_, window_);
      row = row * (2 * window_ + 1) + (o + window_);
    }
    rows[static_cast<size_t>(e)] = row;
  }
  return Tensor::from_vector(rows, {R});
}

Variable ShawRelative::relative_table(const PositionPair& positions) const {
  const Tensor rows = clipped_rows(positions).to(r_.value().device());
  const int64_t R = rows.numel();
  if (per_head_) return index_select(r_, 1, rows);  // [H, R, Dh]
  return expand(unsqueeze(index_select(r_, 0, rows), 0), {heads_, R, head_width_});
}

AttentionTerms ShawRelative::attention_terms(const PositionPair& positions, DType dtype) {
  (void)dtype;  // the table is r's dtype; the fused op names a mismatch
  AttentionTerms terms;
  terms.query_table = relative_table(positions);  // [H, R, Dh]
  return terms;
}

std::string ShawRelative::summary() const {
  return fmt::format("shaw (window {}{})", window_, per_head_ ? ", per head" : "");
}

std::shared_ptr<AttentionHook> make_shaw_relative(const HookContext& context, const HookOptions& options, Generator& gen) {
  const int64_t dims = std::max<int64_t>(1, static_cast<int64_t>(context.structure.size()));
  return std::make_shared<ShawRelative>(context.heads, context.head_width(), dims, options.integer("window", 16),
                                        options.flag("per_head", false), options.number("init_std", 1.0), gen);
}

}  // namespace posgrad
