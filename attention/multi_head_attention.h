// MultiHeadAttention: q/k/v projections (Linear(D, D) each), split into H heads of Dh = D / H,
// scaled dot-product attention with masks, and the output projection. Parameter names
// (q_proj, k_proj, v_proj, out_proj) match tools/golden_transformer.py. Positional schemes are
// not applied here (they come with the attention pipeline of the positional issue).
#pragma once

#include "attention/scaled_dot_product.h"
#include "nn/linear.h"
#include "nn/module.h"

namespace posgrad {

class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(int64_t width, int64_t heads, Generator& gen);

  // x [B, N, D] (queries and keys from the same sequence) -> [B, N, D].
  using Module::forward;
  Variable forward(const Variable& x, const AttentionMasks& masks = {});
  // Attention probabilities [B, H, N, N] of the last forward (for figures).
  const Tensor& last_probs() const { return last_probs_; }

  int64_t heads() const { return heads_; }

 private:
  Variable split_heads(const Variable& x) const;  // [B, N, D] -> [B, H, N, Dh]

  int64_t width_, heads_, head_width_;
  std::shared_ptr<Linear> q_proj_, k_proj_, v_proj_, out_proj_;
  Tensor last_probs_;
};

}  // namespace posgrad
