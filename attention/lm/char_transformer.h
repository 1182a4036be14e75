// CharTransformer: the decoder-only character (or byte) language model of the adaptive-span paper
// (spec adaptive_span.md section 3.1), segment-recurrent with a cache of previous layer inputs.
//
//   x = embedding[tokens]                         [B, M, D]   (N(0, 1), no scaling, no absolute positions)
//   post-LN layer (the paper):  x = norm1(x + attn(x, cache));  x = norm2(x + ff(x))
//   pre-LN layer (option):      a = norm1(x);  x = x + attn(a, cache);  x = x + ff(norm2(x)); final_norm at the end
//   ff(x) = fc2(dropout(relu(fc1(x))))  (no residual dropout; attention dropout inside attn)
//   logits = out(x)                               [B, M, V]   (untied Linear(D, V) with bias)
//
// attn is a MultiHeadAttention without projection biases (spec 3.1) over a memory: the M queries
// of the segment attend over [last W - s cache rows; segment] (PositionPair::memory), each query
// exactly its W slots, the keys at distances
//
//   d = W .. 1        (s = 0: the current token is excluded, the paper's rule), or
//   d = W - 1 .. 0    (attend_self, s = 1: the GPT / Transformer-XL rule)
//
// (the window box of AttentionContext). A cache shorter than W - s rows is left-padded with zeros,
// which are attended, not masked, as in the original code. W is S, or with adaptive span the span
// hook's trimmed window (adaptive_span.h, granularity trim_granularity; trim = false keeps S). With
// the dynamic span W stays S (its spans are known only inside the forward); its row mask limits each
// query to its own d <= ceil(z_t + R), which the fused path alone skips (computed_pairs counts M W).
// The hooks, each a registered one (registry.h), written once for every model:
//   positional  key_pe: one KeyPositionEmbedding over the model's parameter "key_pe" [Dh, S]
//               ~ N(0, 1), shared by every layer and head (key_pe.h); any other registered
//               relative scheme by name, per layer: rope, transformer_xl (init: txl, spec 5.6),
//               alibi, t5_bias, shaw, siren, ape, ... ("none": no positions). Its tables are
//               evaluated on the grid of the call's W - s + M tokens (HookContext structure S + 1).
//   span        a registered span by name (config span), beside the positional hook:
//                 adaptive_span  per head (parameter c [H], the span loss, the clamp, the trim);
//                 dynamic_span   per token, z_t = S sigmoid(v . x_t + b) (parameters v [H, D], b [H],
//                                the span loss on mean z_t; not with attend_self: it masks d = 0);
//                 none           every query sees its S keys.
//               Options S (max_span), ramp (span_ramp) and loss_coef (span_loss) come from the
//               config, adaptive_span's init, attend_self and granularity too; span_options
//               gives the others (dynamic_span: bias_init).
// Absolute schemes (sinusoidal, learned_absolute) are refused: a token's absolute index has no
// meaning across segments.
//
// The cache (spec 2.3): per layer, the last C_l inputs of that layer's attention (post-LN: the
// layer input, as the paper; pre-LN: norm1 of it), detached. After a forward over a segment the
// cache of layer l is the last C_l rows of [old cache; this segment's inputs], with
//   C_l = min(S, W_l + cache_margin)   (adaptive_cache: the layer's window plus 64, spec), or S,
// computed with the parameters of this forward (before the optimizer step). A fresh cache is
// empty, which the attention reads as zeros: the paper's zero initial cache. So processing a
// text in segments with the cache gives the logits of one long forward over it (with the same
// window). forward_incremental keeps each layer's keys/values instead (a KeyValueCache limited
// to W - s tokens, starting as the zero inputs' keys and values): decoding.
//
// Trimming changes numbers only through the renormaliser's 1e-8 (adaptive_span.cpp): with q the
// head's in-span mass, each kept weight by a relative amount below 1e-8 / q; 2.7e-3 at
// q = 3.6e-6 (tests/attention/test_char_transformer.cpp).
//
// Parameter names: embedding.weight, key_pe, layers.<l>.attn.{q,k,v,out}_proj.weight,
// layers.<l>.attn.hooks.<i>.* (the positional hook, then the span's c), layers.<l>.norm{1,2}.*,
// layers.<l>.fc{1,2}.*, final_norm.* (pre-LN), out.*. Checkpoints of the older model (its own
// SegmentAttention: attn.span.c, attn.u/v/w_kr.weight, attn.positional.*) load through
// upgrade_state; tools/golden_charlm.py writes those older names.
//
// Deliberately not here: data streams, the training loop, sampling (apps/charlm), tied
// embeddings, adaptive inputs/softmax.
// Shapes: letters of shape_legend.h; V the vocabulary, S the maximum span, W the window.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "attention/attention_path.h"
#include "attention/multi_head_attention.h"
#include "attention/spans/adaptive_span.h"
#include "attention/spans/dynamic_span.h"
#include "nn/embedding.h"
#include "nn/layer_norm.h"

namespace posgrad {

struct CharAttentionConfig {
  int64_t width = 128;     // D
  int64_t heads = 4;       // H
  int64_t max_span = 256;  // S: the longest distance a query may see
  std::string positional = "key_pe";                     // a registered scheme (key_pe shared by the layers)
  std::map<std::string, std::string> positional_options;  // its options (registry.h)
  bool attend_self = false;  // include distance 0 (not with key_pe, whose table starts at d = 1)
  std::string span = "adaptive_span";                // none | adaptive_span | dynamic_span
  std::map<std::string, std::string> span_options;   // the span's options not set below (registry.h)
  double span_ramp = 32;   // R (both spans)
  double span_init = 0.0;  // initial c (adaptive_span)
  double span_loss = 2e-6; // lambda (both spans)
  bool trim = true;        // cut the window to the longest span + ramp
  int64_t trim_granularity = 64;
  double dropout = 0.0;    // on the attention probabilities (after the mask), and the FF's
  // auto | reference | fused (attention_path.h): the fused path visits each query's W slots only.
  AttentionPath path = AttentionPath::Auto;
};

struct CharTransformerConfig {
  int64_t vocab = 65;  // V
  int64_t layers = 4;
  int64_t ff_width = 512;
  bool pre_norm = false;
  bool adaptive_cache = true;  // C_l = min(S, W_l + cache_margin), else S
  int64_t cache_margin = 64;
  CharAttentionConfig attention;
};

// The cache of every layer: [B, C_l, D] each (C_l = 0: empty, read as zeros).
struct LayerCache {
  std::vector<Tensor> layers;
  int64_t batch() const { return layers.empty() || !layers[0].defined() ? 0 : layers[0].size(0); }
};

// Incremental decoding: every layer's keys and values of the previous positions (the last W - s),
// so a new token projects only itself.
struct DecodeCache {
  std::vector<KeyValueCache> layers;
  int64_t batch() const { return layers.empty() || !layers[0].k.defined() ? 0 : layers[0].k.size(0); }
};

class CharLayer : public Module {
 public:
  // `key_pe`: the model's shared key_pe hook (null for another scheme).
  CharLayer(const CharTransformerConfig& config, const std::shared_ptr<AttentionHook>& key_pe, Generator& gen);
  // x [B, M, D], cache [B, C, D] (C >= 0) -> [B, M, D]; `attention_input` receives what this
  // layer's cache keeps. `gen` drives the dropouts.
  Variable forward(const Variable& x, const Tensor& cache, Generator& gen, Tensor& attention_input);
  using Module::forward;
  // The same layer with the attention's K/V cache (decoding).
  Variable forward_incremental(const Variable& x, KeyValueCache& kv, Generator& gen);

  MultiHeadAttention& attention() { return *attn_; }
  const MultiHeadAttention& attention() const { return *attn_; }
  AdaptiveSpan* span() const;          // null without adaptive span
  DynamicSpan* dynamic_span() const;    // null without the dynamic span
  AttentionHook* positional() const { return positional_.get(); }  // the layer's own scheme; null for key_pe
  // z_t of the dynamic span's last forward [B, H, M]; undefined without the dynamic span or before a forward.
  Tensor dynamic_spans() const;
  // The window W the next forward uses (S without adaptive span or trimming).
  int64_t window() const;
  // The (query, key) pairs per head the next forward over M queries computes: M W on the fused
  // path (each query its W slots; CPU only), M (W - s + M) on the reference path (the dense
  // product of the segment with [cache rows; segment]).
  int64_t computed_pairs(int64_t M) const;
  // The probabilities of the last forward in distance space [B, H, M, W] (slot j of query i is the
  // key at distance W - s - j), for figures.
  Tensor window_probs() const;

 private:
  // The layer around an attention call attend(attention input) -> [B, M, D].
  template <typename Attend>
  Variable run(const Variable& x, Attend&& attend, Generator& gen, Tensor* attention_input);
  OffsetBox window_box() const;  // distances W - s .. 1 - s

  bool pre_norm_, attend_self_;
  double dropout_;
  int64_t max_span_;
  bool attended_ = false;  // a forward has run (the dynamic span's z exist)
  std::shared_ptr<AttentionHook> positional_;
  std::shared_ptr<AttentionHook> span_;  // the span hook (null: none)
  std::shared_ptr<MultiHeadAttention> attn_;
  std::shared_ptr<LayerNorm> norm1_, norm2_;
  std::shared_ptr<Linear> fc1_, fc2_;
};

class CharTransformer : public Module {
 public:
  CharTransformer(const CharTransformerConfig& config, Generator& gen);

  // tokens int64 [B, M] -> logits [B, M, V]; `cache` is read and replaced by the next cache (an
  // empty LayerCache, or one of another batch size, starts from zeros). `gen` drives dropout.
  Variable forward(const Tensor& tokens, LayerCache& cache, Generator& gen);
  using Module::forward;
  // Incremental decoding: the logits of forward() over the same text, but each call projects
  // only its M new tokens and attends over every layer's cached keys/values (W_l - s of them): a
  // new token costs O(L (D^2 + W D + D F) + D V), independent of the context length. An empty
  // DecodeCache, or one of another batch size, starts from the zero cache as forward() does.
  Variable forward_incremental(const Tensor& tokens, DecodeCache& cache, Generator& gen);

  const CharTransformerConfig& config() const { return config_; }
  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  CharLayer& layer(int64_t l) { return *layers_.at(static_cast<size_t>(l)); }
  const CharLayer& layer(int64_t l) const { return *layers_.at(static_cast<size_t>(l)); }
  // The span loss: sum over layers of lambda S mean_h(c) (adaptive span), or of lambda mean(z_t)
  // over the last forward (dynamic span); undefined without a span.
  Variable span_loss() const;
  // Clamps every span parameter to [0, 1]; call after every optimizer step.
  void clamp_spans() const;
  // C_l for the next forward.
  int64_t cache_size(int64_t layer) const;

  // Span statistics as the original logger (spec 1.6): mean over layers of ceil(mean_h z) + R
  // and max over layers of ceil(max_h z) + R, each at most S; the maximum span S for a layer
  // without a span. The dynamic span's z are the z_t of the layer's last forward (mean and max
  // over batch, heads and tokens); S before its first forward.
  double average_span() const;
  double largest_span() const;
  // z_h = c_h S of every head, [layer][head]; with the dynamic span each head's z_t averaged over
  // the last forward's batch and tokens (0 before the first); empty without a span.
  std::vector<std::vector<double>> head_spans() const;
  // Attention work of a segment of M queries against full attention, the dense product of the
  // segment with [S cache rows; segment] that a PyTorch user writes (M (S + M) pairs per head and
  // layer): CharLayer::computed_pairs summed over the layers.
  double attention_flops_share(int64_t segment) const;
  // The adaptive-span paper's estimate of the work of one predicted token (its Tables 1 and 2,
  // "#FLOPS", multiply-accumulates; spec section 4): layers (4 D^2 + 2 D d_ff + 2 D avg), avg the
  // average_span() above (S without a span).
  double flops_per_token() const;

  // (old name, current name) of every parameter and buffer the older SegmentAttention model
  // saved under another name; upgrade_state renames them (and adds the frozen rope's theta,
  // which that model did not save).
  std::vector<std::pair<std::string, std::string>> renamed_state() const;
  void upgrade_state(StateDict& dict) const override;

 private:
  CharTransformerConfig config_;
  std::shared_ptr<Embedding> embedding_;
  Variable key_pe_;
  std::vector<std::shared_ptr<CharLayer>> layers_;
  std::shared_ptr<LayerNorm> final_norm_;
  std::shared_ptr<Linear> out_;
};

// The distance-space reshape of the reference code (spec 2.1), on the last two axes (the kept
// probabilities):  unskew: X [.., M, W + M] -> U [.., M, W] with U[i, j] = X[i, i + j]
Variable unskew(const Variable& x, int64_t window);

}  // namespace posgrad
