// TransformerEncoderBlock: self-attention and a feed-forward network, each in a residual branch,
// with LayerNorm before the branch (pre-LN) or after the residual sum (post-LN):
//   pre-LN:  x = x + drop(attn(norm1(x)));  x = x + drop(ff(norm2(x)))
//   post-LN: x = norm1(x + drop(attn(x)));  x = norm2(x + drop(ff(x)))
// ff = fc2(act(fc1(x))), act = GELU or ReLU. Parameter names match tools/golden_transformer.py.
// Shapes: letters of shape_legend.h.
#pragma once

#include "attention/multi_head_attention.h"
#include "nn/dropout.h"
#include "nn/layer_norm.h"

namespace posgrad {

struct TransformerBlockConfig {
  int64_t width = 128;   // D
  int64_t heads = 4;     // H
  int64_t ff_width = 512;
  double dropout = 0.0;
  bool pre_norm = true;
  std::string activation = "gelu";  // gelu | relu
  double ff_dropout = 0.0;          // dropout between the FFN's two layers (posattn uses it)
  AttentionPath path = AttentionPath::Auto;
};

class FeedForward : public Module {
 public:
  // inner_dropout > 0 adds Dropout between act and fc2 (child "dropout").
  FeedForward(int64_t width, int64_t ff_width, const std::string& activation, Generator& gen,
              double inner_dropout = 0.0);
  Variable forward(const Variable& x);  // [B, N, D] -> [B, N, D]

 private:
  bool gelu_;
  std::shared_ptr<Linear> fc1_, fc2_;
  std::shared_ptr<Dropout> drop_;
};

class TransformerEncoderBlock : public Module {
 public:
  // hooks / shared_hooks: the attention's positional hooks (see MultiHeadAttention).
  TransformerEncoderBlock(const TransformerBlockConfig& config, Generator& gen,
                          std::vector<std::shared_ptr<AttentionHook>> hooks = {},
                          std::vector<std::shared_ptr<AttentionHook>> shared_hooks = {});
  using Module::forward;
  // x [B, N, D]; positions default to the sequence 0..N-1.
  Variable forward(const Variable& x, const AttentionMasks& masks = {}, const Positions* positions = nullptr);
  MultiHeadAttention& attention() { return *attn_; }

 private:
  TransformerBlockConfig config_;
  std::shared_ptr<LayerNorm> norm1_, norm2_;
  std::shared_ptr<MultiHeadAttention> attn_;
  std::shared_ptr<FeedForward> ff_;
  std::shared_ptr<Dropout> drop_;
};

}  // namespace posgrad
