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

Variable ApeSequence::token_maps(const Positions& positions) const {
  if (positions.is_tree())
    fail("ape: needs sequence or grid positions, got {} (use ape_tree for trees)", positions.describe());
  const int64_t N = positions.tokens();
  return permute(generators_->powers(N - 1), {1, 0, 2, 3});  // [N, H, Dh, Dh] -> [H, N, Dh, Dh]
}

void ApeSequence::rotate(Variable& q, Variable& k, const Positions& positions) {
  check_ape_qk("ape", q, k, heads_, head_width_);
  const Variable maps = token_maps(positions);  // computed once, used for queries and keys
  q = apply_token_maps(q, maps);
  k = apply_token_maps(k, maps);
}

Tensor ApeSequence::decay_table(const Positions& positions, DType dtype) const {
  const auto& S = positions.structure();
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

AttentionTerms ApeSequence::attention_terms(const Positions& positions, DType dtype) {
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
