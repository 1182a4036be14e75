// RelativeEncodingScheme (see relative_encoding.h).
// Shapes: letters of shape_legend.h.
#include "attention/schemes/relative_encoding.h"

#include <cmath>

#include "nn/init.h"

namespace posgrad {

RelativeEncodingScheme::RelativeEncodingScheme(int64_t width, int64_t heads)
    : width_(width), heads_(heads), head_width_(heads > 0 ? width / heads : 0) {
  if (heads <= 0 || width <= 0 || width % heads != 0)
    fail("relative encoding: width {} must be a positive multiple of heads {}", width, heads);
  u_ = register_parameter("u", Tensor::zeros({heads_, head_width_}));
  v_ = register_parameter("v", Tensor::zeros({heads_, head_width_}));
}

void RelativeEncodingScheme::init_biases_xavier(Generator& gen) {
  const double bound = std::sqrt(6.0 / static_cast<double>(2 * head_width_));
  init::uniform_(u_.mutable_value(), -bound, bound, gen);
  init::uniform_(v_.mutable_value(), -bound, bound, gen);
}

Variable RelativeEncodingScheme::relative_table(const PositionPair& positions, DType dtype) {
  if (positions.is_tree())
    fail("{}: a relative encoding needs grid or sequence positions, got {}", summary(), positions.describe());
  const int64_t R = positions.relative_size();
  Variable E = encode(positions, dtype);
  if (E.dim() != 2 || E.size(0) != R || E.size(1) != width_)
    fail("{}: the encoding must be [R, D] = [{}, {}], got {}", summary(), R, width_, E.value().describe());
  return permute(reshape(E, {R, heads_, head_width_}), {1, 0, 2});  // [H, R, Dh]
}

AttentionTerms RelativeEncodingScheme::attention_terms(const PositionPair& positions, DType dtype) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_width_));
  Variable table = relative_table(positions, dtype) * scale;  // [H, R, Dh]
  AttentionTerms terms;
  terms.key_bias = u_ * scale;                                                      // [H, Dh]
  terms.query_table = table;                                                        // [H, R, Dh]
  terms.bias = sum(table * unsqueeze(v_, 1), {2});                                  // [H, R]
  return terms;
}

}  // namespace posgrad
