// The "t5_bias" scheme (see t5_bias.h).
// Shapes: letters of shape_legend.h.
#include "attention/schemes/t5_bias.h"

#include <cmath>

#include "nn/init.h"

namespace posgrad {

T5Bias::T5Bias(int64_t heads, int64_t buckets, int64_t max_distance, bool bidirectional, Generator& gen)
    : heads_(heads), buckets_(buckets), max_distance_(max_distance), bidirectional_(bidirectional) {
  const int64_t per_direction = bidirectional ? buckets / 2 : buckets;
  if (buckets < 2 || per_direction < 2) fail("t5_bias: need at least {} buckets, got {}", bidirectional ? 4 : 2, buckets);
  if (max_distance <= per_direction / 2)
    fail("t5_bias: max_distance {} must exceed the {} exact buckets", max_distance, per_direction / 2);
  // T5 initialises the table like its other weights: N(0, 1) scaled down; 0.1 keeps logits moderate.
  bias_ = register_parameter("bias", normal({buckets, heads}, 0.0, 0.1, gen));
}

std::vector<int64_t> T5Bias::buckets_of(const std::vector<int64_t>& offsets) const {
  std::vector<int64_t> out;
  out.reserve(offsets.size());
  const int64_t per_direction = bidirectional_ ? buckets_ / 2 : buckets_;
  const int64_t exact = per_direction / 2;
  for (int64_t offset : offsets) {
    int64_t n = -offset;  // query - key: positive when the key lies in the past
    int64_t bucket = 0;
    if (bidirectional_) {
      if (n < 0) bucket += per_direction;
      n = std::abs(n);
    } else {
      n = std::max<int64_t>(n, 0);
    }
    if (n < exact) {
      bucket += n;
    } else {
      const double scaled = std::log(static_cast<double>(n) / static_cast<double>(exact)) /
                            std::log(static_cast<double>(max_distance_) / static_cast<double>(exact)) *
                            static_cast<double>(per_direction - exact);
      bucket += std::min<int64_t>(per_direction - 1, exact + static_cast<int64_t>(scaled));
    }
    out.push_back(bucket);
  }
  return out;
}

Variable T5Bias::relative_bias(const PositionPair& pos) const {
  if (pos.is_tree() || pos.dims() != 1) fail("t5_bias: needs 1-D sequence positions, got {}", pos.describe());
  // One bucket per relative entry, then the table [buckets, H] becomes [H, R].
  const Tensor bucket = Tensor::from_vector(buckets_of(pos.relative_offsets().to_vector<int64_t>()), {pos.relative_size()})
                            .to(bias_.value().device());
  return transpose(index_select(bias_, 0, bucket), 0, 1);  // [H, R]
}

AttentionTerms T5Bias::attention_terms(const PositionPair& positions, DType) {
  AttentionTerms terms;
  terms.bias = relative_bias(positions);
  return terms;
}

std::string T5Bias::summary() const {
  return fmt::format("t5_bias {} buckets, max distance {}{}", buckets_, max_distance_, bidirectional_ ? "" : " (causal)");
}

std::shared_ptr<AttentionHook> make_t5_bias(const HookContext& context, const HookOptions& options, Generator& gen) {
  return std::make_shared<T5Bias>(context.heads, options.integer("buckets", 32), options.integer("max_distance", 128),
                                  options.flag("bidirectional", true), gen);
}

}  // namespace posgrad
