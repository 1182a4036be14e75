// TransformerEncoderBlock and FeedForward (see transformer_block.h).
#include "attention/transformer_block.h"

namespace posgrad {

FeedForward::FeedForward(int64_t width, int64_t ff_width, const std::string& activation, Generator& gen,
                         double inner_dropout)
    : gelu_(activation == "gelu") {
  if (activation != "gelu" && activation != "relu")
    fail("FeedForward: unknown activation '{}' (valid: gelu, relu)", activation);
  fc1_ = register_module("fc1", std::make_shared<Linear>(width, ff_width, true, gen));
  fc2_ = register_module("fc2", std::make_shared<Linear>(ff_width, width, true, gen));
  if (inner_dropout > 0.0) {
    const auto seed = gen.next_seed();
    drop_ = register_module("dropout", std::make_shared<Dropout>(inner_dropout, seed));
  }
}

Variable FeedForward::forward(const Variable& x) {
  Variable h = fc1_->forward(x);
  h = gelu_ ? gelu(h) : relu(h);
  return fc2_->forward(drop_ ? drop_->forward(h) : h);
}

TransformerEncoderBlock::TransformerEncoderBlock(const TransformerBlockConfig& config, Generator& gen,
                                                 std::vector<std::shared_ptr<AttentionHook>> hooks,
                                                 std::vector<std::shared_ptr<AttentionHook>> shared_hooks)
    : config_(config) {
  norm1_ = register_module("norm1", std::make_shared<LayerNorm>(config.width));
  attn_ = register_module("attn", std::make_shared<MultiHeadAttention>(config.width, config.heads, gen,
                                                                       std::move(hooks), std::move(shared_hooks)));
  attn_->set_path(config.path);
  norm2_ = register_module("norm2", std::make_shared<LayerNorm>(config.width));
  ff_ = register_module("ff", std::make_shared<FeedForward>(config.width, config.ff_width, config.activation, gen,
                                                            config.ff_dropout));
  // Each block draws its own dropout seed from the model's generator: masks are independent
  // across blocks and reproducible from the model seed.
  const auto dropout_seed = gen.next_seed();
  drop_ = register_module("dropout", std::make_shared<Dropout>(config.dropout, dropout_seed));
}

Variable TransformerEncoderBlock::forward(const Variable& x, const AttentionMasks& masks, const Positions* positions) {
  if (config_.pre_norm) {
    Variable h = x + drop_->forward(attn_->forward(norm1_->forward(x), masks, positions));
    return h + drop_->forward(ff_->forward(norm2_->forward(h)));
  }
  Variable h = norm1_->forward(x + drop_->forward(attn_->forward(x, masks, positions)));
  return norm2_->forward(h + drop_->forward(ff_->forward(h)));
}

}  // namespace posgrad
