// TransformerDecoderBlock: the decoder layer of an encoder-decoder transformer: causal
// self-attention, cross-attention over the encoder's output (the memory) and a feed-forward
// network, each in a residual branch, with LayerNorm after the residual sum (post-LN, the APE
// paper's released code) or before the branch (pre-LN, the paper's Table 3):
//
//   post-LN:  y = norm1(y + drop(self(y)));  y = norm2(y + drop(cross(y, memory)));  y = norm3(y + drop(ff(y)))
//   pre-LN:   y = y + drop(self(norm1(y)));  y = y + drop(cross(norm2(y), memory));  y = y + drop(ff(norm3(y)))
//
// Parameter names (tools/golden_encoder_decoder.py): self_attention.*, norm1.*, cross_attention.*,
// norm2.*, ff.fc1.*, ff.fc2.*, norm3.*.
// The positional hooks of both attentions are the model's (shared_hooks): one positional module
// for every layer and for self and cross attention, as the APE paper shares it.
// Incremental decoding: with a KeyValueCache the self-attention projects only the new tokens and
// attends over every cached one (multi_head_attention.h); the cross-attention's queries are then
// the new tokens at their own positions.
// Deliberately not here: embeddings, positions, the stack and the output head (encoder_decoder.h).
// Shapes: letters of shape_legend.h (T decoder tokens, N memory tokens).
#pragma once

#include "attention/transformer_block.h"

namespace posgrad {

// What one decoder forward needs besides its inputs.
struct DecoderStep {
  const PositionPair* self_positions = nullptr;   // decoder tokens (none: the sequence 0..T-1; none with a cache)
  const PositionPair* cross_positions = nullptr;  // decoder queries x memory keys (none: two sequences from 0)
  Tensor memory_padding;                          // [B, N], non-zero = padded memory token; undefined = none
  KeyValueCache* cache = nullptr;                 // this layer's self-attention cache (incremental decoding)
};

class TransformerDecoderBlock : public Module {
 public:
  TransformerDecoderBlock(const TransformerBlockConfig& config, Generator& gen,
                          std::vector<std::shared_ptr<AttentionHook>> shared_hooks = {});
  using Module::forward;
  // y [B, T, D] (with a cache: the new tokens), memory [B, N, D] -> [B, T, D].
  Variable forward(const Variable& y, const Variable& memory, const DecoderStep& step);

  MultiHeadAttention& self_attention() { return *self_attention_; }
  MultiHeadAttention& cross_attention() { return *cross_attention_; }

 private:
  TransformerBlockConfig config_;
  std::shared_ptr<MultiHeadAttention> self_attention_, cross_attention_;
  std::shared_ptr<LayerNorm> norm1_, norm2_, norm3_;
  std::shared_ptr<FeedForward> ff_;
  std::shared_ptr<Dropout> drop_;
};

}  // namespace posgrad
