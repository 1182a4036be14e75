// Scaled dot-product attention (see scaled_dot_product.h).
// Shapes: letters of shape_legend.h.
#include "attention/scaled_dot_product.h"

#include <cmath>
#include <limits>

namespace posgrad {

Tensor mask_indicator(const Tensor& mask, DType dtype) {
  return ne(mask.to(dtype), Tensor::zeros({}, dtype, mask.device()));
}

namespace {

// The boolean mask (1 = blocked) that `masks` describes, broadcastable to [B, 1, N, M]
// ([B, 1, 1, M] with key padding only), on `device`; undefined when nothing is masked.
Tensor attention_block_mask(const AttentionMasks& masks, int64_t B, int64_t N, int64_t M, DType dtype,
                            Device device) {
  Tensor blocked;
  if (masks.key_padding.defined()) {
    if (masks.key_padding.shape() != Shape{B, M})
      fail("attention: key_padding mask must be [B, M] = [{}, {}], got {}", B, M, masks.key_padding.describe());
    blocked = mask_indicator(masks.key_padding, dtype).reshape({B, 1, 1, M});
  }
  if (masks.causal) {
    if (N != M) fail("attention: a causal mask needs as many queries as keys ({} vs {})", N, M);
    Tensor i = Tensor::arange(N, kInt64, device).to(dtype).reshape({N, 1});
    Tensor j = Tensor::arange(M, kInt64, device).to(dtype).reshape({1, M});
    Tensor future = gt(j, i).reshape({1, 1, N, M});
    blocked = blocked_union(blocked, future);
  }
  return blocked;
}

}  // namespace

Tensor blocked_union(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return maximum(a, b);
}

Variable scaled_dot_product_attention(const Variable& q, const Variable& k, const Variable& v,
                                      const AttentionMasks& masks, Tensor* probs_out) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4)
    fail("attention: q, k, v must be [B, H, N, Dh]; got {}, {}, {}", q.value().describe(),
         k.value().describe(), v.value().describe());
  const int64_t B = q.size(0), H = q.size(1), N = q.size(2), Dh = q.size(3), M = k.size(2);
  if (k.size(0) != B || k.size(1) != H || k.size(3) != Dh || v.size(0) != B || v.size(1) != H || v.size(2) != M)
    fail("attention: shapes disagree: q {}, k {}, v {}", q.value().describe(), k.value().describe(), v.value().describe());
  Variable scores = matmul(q, transpose(k, -1, -2)) * (1.0 / std::sqrt(static_cast<double>(Dh)));  // [B, H, N, M]
  const Tensor blocked = attention_block_mask(masks, B, N, M, q.dtype(), q.value().device());
  if (blocked.defined()) scores = masked_fill(scores, blocked, -std::numeric_limits<double>::infinity());
  Variable probs = softmax(scores, -1);
  if (probs_out) *probs_out = probs.value();
  return matmul(probs, v);  // [B, H, N, Dv]
}

}  // namespace posgrad
