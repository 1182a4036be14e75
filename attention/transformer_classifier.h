// TransformerClassifier: token embedding + learned absolute position embedding, L encoder
// blocks, a final LayerNorm (pre-LN only), a masked mean over non-padded tokens, and a linear
// head. This is the model of the golden PyTorch test (tools/golden_transformer.py) and of the
// transformer benchmark. It takes no positional scheme by name: its own learned position table
// (an Embedding, named as in PyTorch) is its absolute encoding, added to the token embeddings.
// Models that take a scheme name are PosattnClassifier and, through hooks, the blocks.
// Shapes: letters of shape_legend.h; L here is the number of encoder blocks, not a stream length.
#pragma once

#include <vector>

#include "attention/transformer_block.h"
#include "nn/embedding.h"

namespace posgrad {

struct TransformerClassifierConfig {
  int64_t vocab = 256;
  int64_t max_tokens = 256;  // P: rows of the position table
  int64_t classes = 10;      // C
  int64_t layers = 2;        // L
  TransformerBlockConfig block;
};

class TransformerClassifier : public Module {
 public:
  TransformerClassifier(const TransformerClassifierConfig& config, Generator& gen);
  // tokens int64 [B, N]; pad_mask [B, N] (non-zero = padding) or undefined -> logits [B, C].
  Variable forward(const Tensor& tokens, const Tensor& pad_mask = Tensor());
  const TransformerClassifierConfig& config() const { return config_; }

 private:
  TransformerClassifierConfig config_;
  std::shared_ptr<Embedding> token_embedding_, position_embedding_;
  std::vector<std::shared_ptr<TransformerEncoderBlock>> blocks_;
  std::shared_ptr<LayerNorm> final_norm_;
  std::shared_ptr<Linear> head_;
};

}  // namespace posgrad
