// EncoderDecoder: the encoder-decoder transformer of the APE paper's transduction experiments
// (spec ape.md sections 3.5 and 7.1), on the transduction batches of
// datasets/transduction/transduction_batch.h:
//
//   embed(ids)  = E[ids] * sqrt(D)                    E [V, D], tied: both sides' input embedding
//                                                     and the output head (logits = y E^T, no bias)
//   absolute schemes (sinusoidal, learned_absolute): x = embed(ids) + pe(positions), on both sides
//   x = input_dropout(x)
//   memory = encoder(x)              TransformerEncoderBlock x encoder_layers, keys masked by the
//                                    source padding
//   y = decoder(embed(decoder_input), memory)
//                                    TransformerDecoderBlock x decoder_layers: causal
//                                    self-attention, cross-attention over the memory
//   pre-LN only: a final LayerNorm on each stack's output
//   logits = y E^T                   [B, T, V]
//
// One positional module ("positional", any registered scheme, registry.h) serves every layer and
// encoder-self, decoder-self and cross attention, as the paper shares it: its parameters (APE's
// generators, tuned RoPE frequencies, Shaw's table) exist once. APE ("ape" and "ape_tree") goes
// through ApeMapsOncePerForward (ape_maps_once.h): its maps are computed once per forward (once
// per encode or decode call outside forward) for all of the model's attentions, as the paper's
// code (config.ape_maps_once = false: each attention computes its own, the same numbers).
// Positions: sequences 0..N-1 and 0..T-1 on the two sides (SOS at 0), or, for tree positions
// (config.tree_positions), the batch's heap positions (source_heap, decoder_heap).
// The decoder's causal mask is the index order: the tree tasks' traversal-derived mask equals it
// on every scored step (their targets are listed in traversal order, transduction_batch.h).
//
// Parameter names (tools/golden_encoder_decoder.py, up to the encoder layer's "attn" for the
// golden "self_attention" and APE's "positional.orthogonal.generators" for
// "positional.generators"): embedding.weight, encoder.layers.<l>.*, decoder.layers.<l>.*,
// encoder.final_norm.*, decoder.final_norm.* (pre-LN).
//
// Deliberately not here: the loss (nn/losses.h's cross_entropy with ignore_index -1 and label
// smoothing), greedy decoding (greedy_decoding.h), data and training loops (apps/seqtasks).
// Shapes: letters of shape_legend.h (N source tokens, T decoder tokens, V vocabulary).
#pragma once

#include "attention/registry.h"
#include "attention/transduction/ape_maps_once.h"
#include "attention/transduction/transformer_decoder_block.h"
#include "datasets/transduction/transduction_batch.h"
#include "nn/embedding.h"

namespace posgrad {

struct EncoderDecoderConfig {
  int64_t vocab = 22;            // V
  int64_t width = 512;           // D
  int64_t heads = 8;             // H
  int64_t ff_width = 2048;
  int64_t encoder_layers = 2, decoder_layers = 2;
  std::string activation = "relu";
  double dropout = 0.1;            // on the embeddings and on every residual branch
  double attention_dropout = 0.1;  // on the attention probabilities (training only)
  bool pre_norm = false;           // false: post-LN, the released code
  bool scale_grad_by_freq = true;  // the released embedding's (nn/embedding.h)
  HookSpec positional{"ape", {}};  // any registered scheme
  int64_t max_positions = 512;     // the hook context's structure {this} (learned_absolute's default size)
  bool tree_positions = false;     // heap positions of the batch (tree schemes) instead of indices
  int64_t branching = 2;           // kappa of the tree positions
  bool ape_maps_once = true;       // APE's maps once per forward (false: per attention call)
  AttentionPath path = AttentionPath::Auto;
};

class EncoderDecoder : public Module {
 public:
  EncoderDecoder(const EncoderDecoderConfig& config, Generator& gen);

  using Module::forward;
  // Teacher forcing: the batch's decoder_input -> logits [B, T, V].
  Variable forward(const TransductionBatch& batch);

  // source int64 [B, N], padding [B, N] (non-zero = padded), positions of the source tokens
  // (none: 0..N-1) -> memory [B, N, D].
  Variable encode(const Tensor& source, const Tensor& padding, const Positions* positions = nullptr);
  // The decoder's output states for decoder tokens int64 [B, T] -> [B, T, D]. Without `positions`
  // the tokens sit at first, first+1, ... (a sequence); with caches (one per decoder layer) the
  // tokens are the next ones after the cached ones (first = the cached count).
  Variable decode(const Tensor& tokens, const Variable& memory, const Tensor& memory_padding,
                  const Positions* positions = nullptr, const Positions* memory_positions = nullptr,
                  std::vector<KeyValueCache>* caches = nullptr);
  Variable logits(const Variable& states) const;  // [B, T, D] -> [B, T, V]

  // The Positions of a batch's source and decoder tokens (tree heaps or sequence indices).
  Positions source_positions(const TransductionBatch& batch) const;
  Positions decoder_positions(const TransductionBatch& batch) const;

  const EncoderDecoderConfig& config() const { return config_; }
  AttentionHook& positional() { return *positional_; }
  // The once-per-forward APE maps; null unless the scheme is "ape" or "ape_tree" (and
  // config.ape_maps_once).
  const ApeMapsOncePerForward* ape_maps() const { return ape_maps_.get(); }
  bool absolute_positions() const { return absolute_ != nullptr; }
  TransformerEncoderBlock& encoder_layer(int64_t l) { return *encoder_[static_cast<size_t>(l)]; }
  TransformerDecoderBlock& decoder_layer(int64_t l) { return *decoder_[static_cast<size_t>(l)]; }

 private:
  Variable embed(const Tensor& ids, const Positions& positions);  // [B, n] -> [B, n, D]

  EncoderDecoderConfig config_;
  std::shared_ptr<Embedding> embedding_;
  std::shared_ptr<AttentionHook> positional_;
  AbsoluteEncoding* absolute_ = nullptr;  // positional_ when it is an absolute scheme
  std::shared_ptr<ApeMapsOncePerForward> ape_maps_;  // wraps positional_ when it is APE
  std::shared_ptr<Dropout> input_dropout_;
  std::vector<std::shared_ptr<TransformerEncoderBlock>> encoder_;
  std::vector<std::shared_ptr<TransformerDecoderBlock>> decoder_;
  std::shared_ptr<LayerNorm> encoder_final_norm_, decoder_final_norm_;
};

}  // namespace posgrad
