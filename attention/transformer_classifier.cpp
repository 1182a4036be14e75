// TransformerClassifier (see transformer_classifier.h).
// Shapes: letters of shape_legend.h.
#include "attention/transformer_classifier.h"

#include "attention/attention_masks.h"

namespace posgrad {

TransformerClassifier::TransformerClassifier(const TransformerClassifierConfig& config, Generator& gen)
    : config_(config) {
  const int64_t D = config.block.width;
  token_embedding_ = register_module("token_embedding", std::make_shared<Embedding>(config.vocab, D, gen));
  position_embedding_ = register_module("position_embedding", std::make_shared<Embedding>(config.max_tokens, D, gen));
  for (int64_t i = 0; i < config.layers; ++i)
    blocks_.push_back(register_module("blocks." + std::to_string(i),
                                      std::make_shared<TransformerEncoderBlock>(config.block, gen)));
  if (config.block.pre_norm) final_norm_ = register_module("final_norm", std::make_shared<LayerNorm>(D));
  head_ = register_module("head", std::make_shared<Linear>(D, config.classes, true, gen));
}

Variable TransformerClassifier::forward(const Tensor& tokens, const Tensor& pad_mask) {
  if (tokens.dim() != 2) fail("TransformerClassifier: tokens must be int64 [B, N], got {}", tokens.describe());
  const int64_t B = tokens.size(0), N = tokens.size(1);
  if (N > config_.max_tokens)
    fail("TransformerClassifier: {} tokens exceed the position table ({} positions)", N, config_.max_tokens);
  Variable x = token_embedding_->forward(tokens) + position_embedding_->forward(Tensor::arange(N, kInt64, tokens.device()).reshape({1, N}));
  AttentionMasks masks;
  masks.key_padding = pad_mask;
  for (auto& block : blocks_) x = block->forward(x, masks);
  if (final_norm_) x = final_norm_->forward(x);
  Variable pooled;
  if (pad_mask.defined()) {
    Tensor keep = add_scalar(neg(mask_indicator(pad_mask, x.dtype())), 1.0).reshape({B, N, 1});
    // Mean over the kept tokens; a sequence that is all padding pools to zeros (count clamped
    // to 1), so its logits are the head's bias instead of 0/0 = NaN.
    const Tensor kept = clamp(sum(keep, {1}), 1.0, static_cast<double>(N));  // [B, 1]
    pooled = sum(x * keep, {1}) / Variable(kept);                          // [B, D]
  } else {
    pooled = mean(x, {1});
  }
  return head_->forward(pooled);
}

}  // namespace posgrad
