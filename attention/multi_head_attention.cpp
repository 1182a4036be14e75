// MultiHeadAttention (see multi_head_attention.h).
#include "attention/multi_head_attention.h"

namespace posgrad {

MultiHeadAttention::MultiHeadAttention(int64_t width, int64_t heads, Generator& gen)
    : width_(width), heads_(heads), head_width_(heads > 0 ? width / heads : 0) {
  if (heads <= 0 || width % heads != 0)
    fail("MultiHeadAttention: width {} must be a positive multiple of heads {}", width, heads);
  q_proj_ = register_module("q_proj", std::make_shared<Linear>(width, width, true, gen));
  k_proj_ = register_module("k_proj", std::make_shared<Linear>(width, width, true, gen));
  v_proj_ = register_module("v_proj", std::make_shared<Linear>(width, width, true, gen));
  out_proj_ = register_module("out_proj", std::make_shared<Linear>(width, width, true, gen));
}

Variable MultiHeadAttention::split_heads(const Variable& x) const {
  const int64_t B = x.size(0), N = x.size(1);
  return permute(reshape(x, {B, N, heads_, head_width_}), {0, 2, 1, 3});
}

Variable MultiHeadAttention::forward(const Variable& x, const AttentionMasks& masks) {
  if (x.dim() != 3 || x.size(2) != width_)
    fail("MultiHeadAttention: input must be [B, N, {}], got {}", width_, x.value().describe());
  const int64_t B = x.size(0), N = x.size(1);
  Variable q = split_heads(q_proj_->forward(x));
  Variable k = split_heads(k_proj_->forward(x));
  Variable v = split_heads(v_proj_->forward(x));
  Variable o = scaled_dot_product_attention(q, k, v, masks, &last_probs_);  // [B, H, N, Dh]
  return out_proj_->forward(reshape(permute(o, {0, 2, 1, 3}), {B, N, width_}));
}

}  // namespace posgrad
