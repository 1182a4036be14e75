// The "alibi" scheme (see alibi.h).
// Shapes: letters of shape_legend.h.
#include "attention/schemes/alibi.h"

#include <cmath>

namespace posgrad {

std::vector<double> alibi_slopes(int64_t heads) {
  if (heads <= 0) fail("alibi: needs at least one head, got {}", heads);
  int64_t n = 1;
  while (2 * n <= heads) n *= 2;
  std::vector<double> m;
  for (int64_t h = 1; h <= n; ++h) m.push_back(std::pow(2.0, -8.0 * static_cast<double>(h) / static_cast<double>(n)));
  for (int64_t h = 1; static_cast<int64_t>(m.size()) < heads; h += 2)
    m.push_back(std::pow(2.0, -8.0 * static_cast<double>(h) / static_cast<double>(2 * n)));
  return m;
}

Alibi::Alibi(int64_t heads) : heads_(heads), slopes_(alibi_slopes(heads)) {}

Tensor Alibi::relative_table(const PositionPair& positions) const {
  if (positions.is_tree()) fail("alibi: needs sequence or grid positions (relative offsets), got {}", positions.describe());
  const int64_t n = positions.dims(), R = positions.relative_size();
  const std::vector<int64_t> offsets = positions.relative_offsets().to_vector<int64_t>();  // [R, n]
  std::vector<double> table(static_cast<size_t>(heads_ * R));
  for (int64_t e = 0; e < R; ++e) {
    double sq = 0.0;
    for (int64_t d = 0; d < n; ++d) {
      const double o = static_cast<double>(offsets[static_cast<size_t>(e * n + d)]);
      sq += o * o;
    }
    const double dist = std::sqrt(sq);  // |o| exactly on sequences
    for (int64_t h = 0; h < heads_; ++h) table[static_cast<size_t>(h * R + e)] = -slopes_[static_cast<size_t>(h)] * dist;
  }
  return Tensor::from_vector(table, {heads_, R});
}

AttentionTerms Alibi::attention_terms(const PositionPair& positions, DType dtype) {
  AttentionTerms terms;
  terms.bias = Variable(relative_table(positions).to(dtype));
  return terms;
}

std::string Alibi::summary() const {
  return fmt::format("alibi (slopes 2^{:.3g} .. 2^{:.3g})", std::log2(slopes_.front()), std::log2(slopes_.back()));
}

std::shared_ptr<AttentionHook> make_alibi(const HookContext& context, const HookOptions&, Generator&) {
  return std::make_shared<Alibi>(context.heads);
}

}  // namespace posgrad
