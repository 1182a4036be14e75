// Scaled dot-product attention on per-head tensors, with optional key-padding and causal masks.
// The textbook dense computation, materialising the [B, H, N, M] scores: the tests' oracle for
// a MultiHeadAttention without hooks. Also here: the mask helpers the attention paths share.
// Shapes: letters of shape_legend.h.
#pragma once

#include "autograd/functions.h"

namespace posgrad {

struct AttentionMasks {
  Tensor key_padding;  // [B, M], non-zero = padded key (never attended); undefined = none
  bool causal = false; // query i sees keys j <= i (requires N == M)
};

// q [B, H, N, Dh], k [B, H, M, Dh], v [B, H, M, Dv] -> [B, H, N, Dv].
// `probs_out`, when given, receives the attention probabilities [B, H, N, M] (for figures).
// A query whose keys are all masked gets zero output (not NaN).
Variable scaled_dot_product_attention(const Variable& q, const Variable& k, const Variable& v,
                                      const AttentionMasks& masks = {}, Tensor* probs_out = nullptr);

// 1 where `mask` is non-zero and 0 elsewhere, in `dtype`, on the mask's own device.
Tensor mask_indicator(const Tensor& mask, DType dtype);

// The union of two blocked masks (1 = blocked), broadcast; an undefined one blocks nothing.
Tensor blocked_union(const Tensor& a, const Tensor& b);

}  // namespace posgrad
