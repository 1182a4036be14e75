// SequencePooling (Hassani et al. 2021, "Escaping the Big Data Paradigm with Compact
// Transformers"): the tokens of each example are summed with weights = softmax over tokens of a
// learned score Linear(D, 1), replacing a class token:
//
//   a = softmax_N(x w + b)   [B, N]      out = sum_n a[b, n] x[b, n, :]   [B, D]
//
// Parameter names "attention_pool.weight" / ".bias" are the CCT code's. attention_weights() of
// the last forward are kept for figures.
// Deliberately not here: masks for padded tokens (CCT's images have none), multi-query pooling.
// Shapes: letters of shape_legend.h.
#pragma once

#include "nn/linear.h"

namespace posgrad {

class SequencePooling : public Module {
 public:
  SequencePooling(int64_t width, Generator& gen);
  Variable forward(const Variable& x) override;  // [B, N, D] -> [B, D]
  const Tensor& last_weights() const { return last_weights_; }  // [B, N] of the last forward

 private:
  int64_t width_;
  std::shared_ptr<Linear> score_;
  Tensor last_weights_;
};

}  // namespace posgrad
