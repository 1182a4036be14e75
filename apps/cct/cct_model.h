// The Compact Convolutional Transformer of APE's CIFAR-10 experiment (spec ape.md section 7.4;
// Hassani et al. 2021), with the positional schemes of Table 2(c):
//
//   tokenizer  Conv2d(C -> D, k x k, stride, padding, no bias) -> ReLU -> MaxPool2d      [B, D, Ty, Tx]
//              flattened row-major to tokens                                            [B, N, D], N = Ty Tx
//   positions  the grid (Ty, Tx); an absolute scheme (sinusoidal: 1-D over the flat index, as
//              the paper's "Sinusoidal 2D"; sinusoidal_2d: the true 2-D one; learned_absolute
//              with P = N rows, not the released code's 10) is added to the tokens; a relative
//              one (ape_grid, ape: one module, shared by every layer, as the released code) acts
//              in each layer's attention
//   dropout    on the tokens (input dropout)
//   L blocks   post-LN (the released code):  x = LN1(x + dp_l(attn(x)));  x = LN2(x + dp_l(ff(x)))
//              pre-LN (Table 3):             x = x + dp_l(attn(LN1(x)));  x = x + dp_l(ff(LN2(x)))
//              ff = Linear(D, F) -> GELU -> [dropout ff_dropout] -> Linear(F, D); dp_l = DropPath
//              with p_l = drop_path_step * l (0, 0.1, ..., 0.6 for 7 layers), unscaled as the
//              released code unless drop_path_rescale
//   head       [final LN when pre-LN] -> SequencePooling -> Linear(D, classes)              logits [B, classes]
//
// Init as CCT: Linear weights N(0, 0.02) and biases 0 (CCT's trunc_normal(std 0.02) truncates at
// +-2 in absolute units, i.e. never at this std), LayerNorm 1 / 0, the conv kaiming_normal
// (fan_in, ReLU gain); schemes their own.
// Errors: an image size or channel count the tokenizer cannot handle names the tokenizer's
// settings and the input's shape, in one line.
// attention_dropout is the attention-logit dropout of the recipe (on the probabilities, in every
// block's attention; such blocks train on the reference path).
// Deliberately not here: the training
// loop and data (cct_run.h).
// Shapes: letters of shape_legend.h; tensor/conv.h's Y, X; Ty, Tx the token grid; F the FFN width;
// L here is the number of blocks.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "attention/multi_head_attention.h"
#include "attention/transformer_block.h"
#include "nn/conv2d.h"
#include "nn/drop_path.h"
#include "nn/dropout.h"
#include "nn/layer_norm.h"
#include "nn/sequence_pooling.h"

namespace posgrad {

struct CctConfig {
  int64_t image_size = 32;  // Y = X
  int64_t channels = 3;     // C of the images
  int64_t classes = 10;
  int64_t width = 256;      // D
  int64_t heads = 4;        // H
  int64_t layers = 7;       // L
  int64_t ff_width = 512;   // F (mlp_ratio 2)
  int64_t conv_kernel = 3, conv_stride = 1, conv_padding = 0;
  int64_t pool_kernel = 3, pool_stride = 3, pool_padding = 0;
  std::string positional = "ape_grid";                    // a registered hook name
  std::map<std::string, std::string> positional_options;  // e.g. {{"init", "near_identity"}}
  double dropout = 0.1;         // input dropout
  double ff_dropout = 0.0;      // between the FFN's layers
  double attention_dropout = 0.1;  // on the attention probabilities
  double drop_path_step = 0.1;  // p_l = step * l
  bool drop_path_rescale = false;
  bool pre_norm = false;
  AttentionPath path = AttentionPath::Auto;
};

class CctBlock : public Module {
 public:
  CctBlock(const CctConfig& config, double drop_path, Generator& gen, std::vector<std::shared_ptr<AttentionHook>> shared_hooks);
  using Module::forward;
  Variable forward(const Variable& x, const Positions& positions);  // [B, N, D] -> [B, N, D]
  MultiHeadAttention& attention() { return *attn_; }

 private:
  bool pre_norm_;
  std::shared_ptr<LayerNorm> norm1_, norm2_;
  std::shared_ptr<MultiHeadAttention> attn_;
  std::shared_ptr<FeedForward> ff_;
  std::shared_ptr<DropPath> drop_path_;
};

class CctModel : public Module {
 public:
  CctModel(const CctConfig& config, Generator& gen);
  using Module::forward;
  Variable forward(const Variable& images) override;  // [B, C, Y, X] -> logits [B, classes]

  // The token grid (Ty, Tx) of the configured image size.
  const std::vector<int64_t>& token_grid() const { return grid_; }
  const CctConfig& config() const { return config_; }
  // The positional module (absolute or relative; null for "none").
  const std::shared_ptr<AttentionHook>& positional() const { return positional_; }
  const std::vector<std::shared_ptr<CctBlock>>& blocks() const { return blocks_; }
  void set_path(AttentionPath path);

 private:
  CctConfig config_;
  std::vector<int64_t> grid_;
  std::shared_ptr<Conv2d> conv_;
  std::shared_ptr<MaxPool2d> pool_;
  std::shared_ptr<AttentionHook> positional_;
  std::shared_ptr<AbsoluteEncoding> absolute_;
  std::shared_ptr<Dropout> input_dropout_;
  std::vector<std::shared_ptr<CctBlock>> blocks_;
  std::shared_ptr<LayerNorm> final_norm_;
  std::shared_ptr<SequencePooling> pooling_;
  std::shared_ptr<Linear> head_;
};

}  // namespace posgrad
