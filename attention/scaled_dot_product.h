// Scaled dot-product attention on per-head tensors, with optional key-padding and causal masks.
// This is the dense reference computation: it materialises the [B, H, N, M] scores. The
// positional attention pipeline (multi_head_attention.h) is built around the same steps and
// takes its padding mask from attention_block_mask here.
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

// The boolean mask (1 = blocked) that `masks` describes, broadcastable to [B, 1, N, M]
// ([B, 1, 1, M] with key padding only); undefined when nothing is masked. The one place that
// turns AttentionMasks into a mask (MultiHeadAttention uses it for the padding too).
// Built on `device` (the scores' device); the key_padding mask must already be there.
Tensor attention_block_mask(const AttentionMasks& masks, int64_t B, int64_t N, int64_t M, DType dtype,
                            Device device = kCPU);

// The union of two blocked masks (1 = blocked), broadcast; an undefined one blocks nothing.
Tensor blocked_union(const Tensor& a, const Tensor& b);

}  // namespace posgrad
