// The "ape" sequence scheme (see ape_sequence.h).
// Shapes: letters of shape_legend.h.
#include "attention/schemes/ape_sequence.h"

#include <fmt/format.h>

#include <cstdlib>

namespace posgrad {

ApeSequence::ApeSequence(int64_t heads, int64_t head_width, const ApeSettings& settings, Generator& gen)
    : heads_(heads), head_width_(head_width), settings_(settings) {
  generators_ = add_ape_generators(*this, "orthogonal", heads, head_width, settings, gen);
}

Variable ApeSequence::token_maps(const Positions& side) const {
  if (side.is_tree()) fail("ape: needs sequence or grid positions, got {} (use ape_tree for trees)", side.describe());
  const Variable powers = generators_->powers(side.first() + side.tokens() - 1);  // W^0 .. W^last
  const Variable maps = side.first() == 0 ? powers : narrow(powers, 0, side.first(), side.tokens());
  return permute(maps, {1, 0, 2, 3});  // [N, H, Dh, Dh] -> [H, N, Dh, Dh]
}

void ApeSequence::rotate(Variable& q, Variable& k, const PositionPair& positions) {
  check_ape_qk("ape", q, k, heads_, head_width_);
  const Variable query_maps = token_maps(positions.queries());  // self-attention: once for both
  q = apply_token_maps(q, query_maps);
  k = apply_token_maps(k, positions.is_self() ? query_maps : token_maps(positions.keys()));
}

Tensor ApeSequence::decay_table(const PositionPair& positions, DType dtype) const {
  // The distance is the flattened one, |key - query| in token order: a function of the offset
  // for sequences and for a grid attending to itself only.
  if (positions.dims() > 1 && !positions.is_self())
    fail("ape: cross-attention between grids has no flattened distance ({}); use ape_grid", positions.describe());
  const auto& S = positions.keys().structure();
  const int64_t n = positions.dims(), R = positions.relative_size();
  std::vector<int64_t> stride(static_cast<size_t>(n), 1);
  for (int64_t d = n - 2; d >= 0; --d) stride[static_cast<size_t>(d)] = stride[static_cast<size_t>(d + 1)] * S[static_cast<size_t>(d + 1)];
  const std::vector<int64_t> offsets = positions.relative_offsets().to_vector<int64_t>();
  std::vector<int64_t> distance(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) {
    int64_t flat = 0;
    for (int64_t d = 0; d < n; ++d) flat += offsets[static_cast<size_t>(r * n + d)] * stride[static_cast<size_t>(d)];
    distance[static_cast<size_t>(r)] = std::llabs(flat);
  }
  return decay_factors(distance, {R}, settings_.decay, dtype, kCPU);
}

AttentionTerms ApeSequence::attention_terms(const PositionPair& positions, DType dtype) {
  AttentionTerms terms;
  if (settings_.decays()) terms.modulation = Variable(decay_table(positions, dtype));
  return terms;
}

std::string ApeSequence::summary() const {
  return fmt::format("ape (H={}, Dh={}, {})", heads_, head_width_, settings_.describe());
}

std::shared_ptr<AttentionHook> make_ape_sequence(const HookContext& context, const HookOptions& options, Generator& gen) {
  const ApeSettings settings = read_ape_settings(options);
  return std::make_shared<ApeSequence>(context.heads, context.head_width(), settings, gen);
}

}  // namespace posgrad
