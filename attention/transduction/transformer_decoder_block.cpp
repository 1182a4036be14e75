// TransformerDecoderBlock (see transformer_decoder_block.h).
#include "attention/transduction/transformer_decoder_block.h"

namespace posgrad {

TransformerDecoderBlock::TransformerDecoderBlock(const TransformerBlockConfig& config, Generator& gen,
                                                 std::vector<std::shared_ptr<AttentionHook>> shared_hooks)
    : config_(config) {
  self_attention_ = register_module(
      "self_attention", std::make_shared<MultiHeadAttention>(config.width, config.heads, gen,
                                                             std::vector<std::shared_ptr<AttentionHook>>{}, shared_hooks));
  self_attention_->set_path(config.path);
  norm1_ = register_module("norm1", std::make_shared<LayerNorm>(config.width));
  cross_attention_ = register_module(
      "cross_attention", std::make_shared<MultiHeadAttention>(config.width, config.heads, gen,
                                                              std::vector<std::shared_ptr<AttentionHook>>{}, shared_hooks));
  cross_attention_->set_path(config.path);
  norm2_ = register_module("norm2", std::make_shared<LayerNorm>(config.width));
  ff_ = register_module("ff", std::make_shared<FeedForward>(config.width, config.ff_width, config.activation, gen,
                                                            config.ff_dropout));
  norm3_ = register_module("norm3", std::make_shared<LayerNorm>(config.width));
  // Its own dropout seed from the model's generator, as TransformerEncoderBlock draws one.
  const auto dropout_seed = gen.next_seed();
  drop_ = register_module("dropout", std::make_shared<Dropout>(config.dropout, dropout_seed));
}

Variable TransformerDecoderBlock::forward(const Variable& y, const Variable& memory, const DecoderStep& step) {
  const AttentionContext self{.positions = step.self_positions, .key_padding = {}, .causal = true, .cache = step.cache};
  const AttentionContext cross{.positions = step.cross_positions, .key_padding = step.memory_padding};
  const auto self_branch = [&](const Variable& x) { return drop_->forward(self_attention_->forward(x, x, self)); };
  const auto cross_branch = [&](const Variable& x) { return drop_->forward(cross_attention_->forward(x, memory, cross)); };
  const auto ff_branch = [&](const Variable& x) { return drop_->forward(ff_->forward(x)); };
  if (config_.pre_norm) {
    Variable h = y + self_branch(norm1_->forward(y));
    h = h + cross_branch(norm2_->forward(h));
    return h + ff_branch(norm3_->forward(h));
  }
  Variable h = norm1_->forward(y + self_branch(y));
  h = norm2_->forward(h + cross_branch(h));
  return norm3_->forward(h + ff_branch(h));
}

}  // namespace posgrad
