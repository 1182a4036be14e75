// The "key_pe" scheme (see key_pe.h).
// Shapes: letters of shape_legend.h; S is the maximum span.
#include "attention/schemes/key_pe.h"

#include "attention/spans/max_span_option.h"

#include <cmath>

namespace posgrad {

namespace {

void require_1d(const PositionPair& positions) {
  if (positions.is_tree() || positions.dims() != 1)
    fail("key_pe: needs 1-D sequence positions (distances), got {}", positions.describe());
}

}  // namespace

KeyPositionEmbedding::KeyPositionEmbedding(int64_t heads, int64_t head_width, int64_t max_span, Generator& gen)
    : heads_(heads) {
  if (max_span < 1) fail("key_pe: option max_span must be >= 1, got {}", max_span);
  table_ = register_parameter("weight", normal({head_width, max_span}, 0.0, 1.0, gen));
}

KeyPositionEmbedding::KeyPositionEmbedding(int64_t heads, Variable table) : heads_(heads), table_(std::move(table)) {
  if (!table_.defined() || table_.dim() != 2 || table_.size(1) < 1)
    fail("key_pe: the table must be [Dh, S], got {}", table_.defined() ? table_.value().describe() : "undefined");
}

std::optional<OffsetBox> KeyPositionEmbedding::key_range(const PositionPair& positions) const {
  require_1d(positions);
  return OffsetBox{{-table_.size(1)}, {-1}};
}

AttentionTerms KeyPositionEmbedding::attention_terms(const PositionPair& positions, DType dtype) {
  require_1d(positions);
  if (table_.dtype() != dtype)
    fail("key_pe: the table is {} but the scores are {}", table_.value().describe(), dtype_name(dtype));
  const int64_t Dh = table_.size(0), S = table_.size(1);
  const int64_t lo = positions.relative_lo()[0], hi = positions.relative_hi()[0], R = hi - lo + 1;
  // Entry r has offset lo + r, distance d = -(lo + r): the distances with a column are
  // d_min..d_max, at entries r0 .. r0 + n - 1 (columns S - d_max .. S - d_min, in that order).
  const int64_t d_min = std::max<int64_t>(1, -hi), d_max = std::min(S, -lo), n = d_max - d_min + 1;
  const Device device = table_.value().device();
  Variable rows;  // [R, Dh]
  if (n <= 0) {
    rows = Variable(Tensor::zeros({R, Dh}, dtype, device));
  } else {
    const int64_t r0 = -d_max - lo;
    std::vector<Variable> parts;
    if (r0 > 0) parts.emplace_back(Tensor::zeros({r0, Dh}, dtype, device));
    parts.push_back(transpose(narrow(table_, 1, S - d_max, n), 0, 1));
    if (R - r0 - n > 0) parts.emplace_back(Tensor::zeros({R - r0 - n, Dh}, dtype, device));
    rows = parts.size() > 1 ? cat(parts, 0) : parts[0];
  }
  AttentionTerms terms;
  terms.query_table = expand(unsqueeze(rows * (1.0 / std::sqrt(static_cast<double>(Dh))), 0), {heads_, R, Dh});
  return terms;
}

std::string KeyPositionEmbedding::summary() const { return fmt::format("key_pe (S {})", table_.size(1)); }

std::shared_ptr<AttentionHook> make_key_pe(const HookContext& context, const HookOptions& options, Generator& gen) {
  return std::make_shared<KeyPositionEmbedding>(context.heads, context.head_width(),
                                                max_span_option(context, options, "key_pe"), gen);
}

}  // namespace posgrad
