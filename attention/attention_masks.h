// AttentionMasks: the masks a caller gives a self-attention layer (key padding, causal), and the
// mask helpers both attention implementations share.
// Deliberately not here: what a mask does to the scores (reference_attention.h, fused/).
// Shapes: letters of shape_legend.h.
#pragma once

#include "autograd/functions.h"

namespace posgrad {

struct AttentionMasks {
  Tensor key_padding;  // [B, N], non-zero = padded key (never attended); undefined = none
  bool causal = false; // query i sees keys j <= i
};

// 1 where `mask` is non-zero and 0 elsewhere, in `dtype`, on the mask's own device.
inline Tensor mask_indicator(const Tensor& mask, DType dtype) {
  return ne(mask.to(dtype), Tensor::zeros({}, dtype, mask.device()));
}

// The union of two blocked masks (1 = blocked), broadcast; an undefined one blocks nothing.
inline Tensor blocked_union(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return maximum(a, b);
}

}  // namespace posgrad
