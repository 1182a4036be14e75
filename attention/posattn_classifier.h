// PosattnClassifier: the image/sequence classifier of posattn (posattn spec section 8.1).
//
//   x [B, S0, S1, C] (or [B, N, C])  -> tokens [B, N, C], row-major, N = S0 * S1
//   input   Dropout(p) on the raw channels -> Linear(C, D)                       (no CLS token)
//           + pe[p] when `positional` is an absolute scheme (sinusoidal | learned_absolute):
//           one module ("absolute") for the model, added to the tokens, unscaled, before the
//           first block (posattn itself has no absolute PE)
//   L post-LN blocks (TransformerEncoderBlock, pre_norm = false, ReLU, FFN inner dropout p):
//           x <- LN1(x + drop(MHA(x)));  x <- LN2(x + drop(fc2(drop(relu(fc1(x))))))
//           each block's attention has its own hooks: the positional scheme `positional` (any
//           other registered name: txl_baseline | siren | transformer_xl | none | ...) and,
//           with `span`, a gaussian_span (sigma, threshold, multiply)
//   pooling last (token N - 1) | mean | max                              [B, D]
//   output  Linear(D, 64) -> LayerNorm -> ReLU -> Dropout(p) -> Linear(64, classes)   logits
//
// Positions: dims = 1 gives the sequence of N tokens (posattn's "1-D": the same tokens with
// StructureSize (N)); dims = 2 gives the grid (S0, S1) taken from the input's spatial axes.
// Init as posattn: q/k/v projection weights Xavier-uniform over the fused [3D, D] matrix
// (U(+-sqrt(6 / (D + 3D))), 0.1531 for D = 64), out_proj Xavier-uniform (0.2165), their biases 0;
// every other Linear PyTorch's default; LayerNorm 1/0; schemes and spans their own.
// Parameter counts for the thesis model (D 64, H 8, L 6, FFN 128, C 3): txl_baseline 231,754;
// siren 1-D 257,482 (+6 with the span); siren 2-D 257,866 (+12).
//
// Deliberately not here: resolution reduction (disabled in every posattn experiment), causal
// masks, training loops and data (apps/).
// Shapes: letters of shape_legend.h; L here is the number of blocks (layers), not a stream length.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "attention/transformer_block.h"
#include "nn/dropout.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"

namespace posgrad {

struct PosattnClassifierConfig {
  int64_t input_dim = 3;      // C
  int64_t width = 64;         // D
  int64_t heads = 8;          // H
  int64_t layers = 6;         // L
  int64_t ff_width = 128;
  int64_t output_hidden = 64;
  int64_t classes = 10;
  double dropout = 0.1;
  std::string positional = "siren";                        // a registered hook name
  std::map<std::string, std::string> positional_options;   // e.g. {{"omega", "10"}}
  bool span = false;                                       // add a gaussian_span per layer
  double sigma = 0.3;
  double threshold = 0.1;                                  // <= 0: no box
  std::string multiply = "all_logits";                     // all_logits | positional_logits
  std::map<std::string, std::string> span_options;         // further gaussian_span options (learn_sigma, min_sigma)
  int64_t dims = 1;                                        // positional dims: 1 (sequence) or structure.size()
  std::vector<int64_t> structure = {32, 32};               // spatial size the hooks are built for
  std::string pooling = "last";                            // last | mean | max
  AttentionPath path = AttentionPath::Auto;
};

class PosattnClassifier : public Module {
 public:
  PosattnClassifier(const PosattnClassifierConfig& config, Generator& gen);

  using Module::forward;
  // x [B, S0, ..., C] or [B, N, C] -> logits [B, classes].
  Variable forward(const Variable& x) override;

  // The positions a forward uses for an input of these spatial sizes.
  Positions positions_for(const std::vector<int64_t>& spatial) const;
  void set_path(AttentionPath path);
  const PosattnClassifierConfig& config() const { return config_; }
  const std::vector<std::shared_ptr<TransformerEncoderBlock>>& blocks() const { return blocks_; }
  // One line per layer: every hook's summary (sigma, spans, ...), for logs; with an absolute
  // scheme, a first line "token embeddings: <its summary>".
  std::vector<std::string> hook_summaries() const;
  // The absolute scheme added to the tokens, or null when `positional` is not one.
  const std::shared_ptr<AbsoluteEncoding>& absolute() const { return absolute_; }

 private:
  PosattnClassifierConfig config_;
  std::shared_ptr<Dropout> input_dropout_, output_dropout_;
  std::shared_ptr<Linear> input_proj_, output_fc1_, output_fc2_;
  std::shared_ptr<LayerNorm> output_norm_;
  std::shared_ptr<AbsoluteEncoding> absolute_;
  std::vector<std::shared_ptr<TransformerEncoderBlock>> blocks_;
};

}  // namespace posgrad
