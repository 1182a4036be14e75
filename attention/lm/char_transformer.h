// CharTransformer: the decoder-only character (or byte) language model of the adaptive-span paper
// (spec adaptive_span.md section 3.1), segment-recurrent with a cache of previous layer inputs.
//
//   x = embedding[tokens]                         [B, M, D]   (N(0, 1), no scaling, no absolute positions)
//   post-LN layer (the paper):  x = norm1(x + attn(x, cache));  x = norm2(x + ff(x))
//   pre-LN layer (option):      a = norm1(x);  x = x + attn(a, cache);  x = x + ff(norm2(x)); final_norm at the end
//   ff(x) = fc2(dropout(relu(fc1(x))))  (no residual dropout; attention dropout inside attn)
//   logits = out(x)                               [B, M, V]   (untied Linear(D, V) with bias)
//
// The cache (spec 2.3): per layer, the last C_l inputs of that layer's attention (post-LN: the
// layer input, as the paper; pre-LN: norm1 of it), detached. After a forward over a segment the
// cache of layer l is the last C_l rows of [old cache; this segment's inputs], with
//   C_l = min(S, W_l + cache_margin)   (adaptive_cache: the layer's window plus 64, spec), or S,
// computed with the parameters of this forward (before the optimizer step). A fresh cache is
// empty, which the attention reads as zeros: the paper's zero initial cache. So processing a
// text in segments with the cache gives the logits of one long forward over it (with the same
// window). forward_incremental keeps each layer's keys/values instead (DecodeCache): decoding.
//
// The learned key position term (scheme key_pe) is one parameter "key_pe" [Dh, S] ~ N(0, 1)
// shared by every layer and head. Parameter names: embedding.weight, key_pe,
// layers.<l>.attn.{q,k,v,out}_proj.weight, layers.<l>.attn.span.c, layers.<l>.norm{1,2}.*,
// layers.<l>.fc{1,2}.*, final_norm.* (pre-LN), out.*  (tools/golden_charlm.py uses the same).
//
// Deliberately not here: data streams, the training loop, sampling (apps/charlm), tied
// embeddings, adaptive inputs/softmax.
// Shapes: letters of shape_legend.h; V the vocabulary, S the maximum span.
#pragma once

#include <vector>

#include "attention/lm/segment_attention.h"
#include "nn/embedding.h"
#include "nn/layer_norm.h"

namespace posgrad {

struct CharTransformerConfig {
  int64_t vocab = 65;     // V
  int64_t layers = 4;
  int64_t ff_width = 512;
  bool pre_norm = false;
  bool adaptive_cache = true;  // C_l = min(S, W_l + cache_margin), else S
  int64_t cache_margin = 64;
  SegmentAttentionConfig attention;  // width, heads, span, positions, dropout (also the FF's)
};

// The cache of every layer: [B, C_l, D] each (C_l = 0: empty, read as zeros).
struct LayerCache {
  std::vector<Tensor> layers;
  int64_t batch() const { return layers.empty() || !layers[0].defined() ? 0 : layers[0].size(0); }
};

// Incremental decoding: every layer's keys and values of the previous positions (trimmed to the
// layer's W - s), so a new token projects only itself (SegmentAttention::forward_incremental).
struct DecodeCache {
  std::vector<SegmentAttention::KeyValueCache> layers;
  int64_t batch() const { return layers.empty() || !layers[0].keys.defined() ? 0 : layers[0].keys.size(0); }
};

class CharLayer : public Module {
 public:
  CharLayer(const CharTransformerConfig& config, Generator& gen);
  // x [B, M, D] -> [B, M, D]; `attention_input` receives what this layer's cache keeps.
  Variable forward(const Variable& x, const Tensor& cache, const Variable& key_pe, Generator& gen,
                   Tensor& attention_input);
  using Module::forward;
  // The same layer with the attention's K/V cache (decoding).
  Variable forward_incremental(const Variable& x, SegmentAttention::KeyValueCache& kv, const Variable& key_pe,
                               Generator& gen);
  SegmentAttention& attention() { return *attn_; }
  const SegmentAttention& attention() const { return *attn_; }

 private:
  // The layer around an attention call attend(attention input) -> [B, M, D].
  template <typename Attend>
  Variable run(const Variable& x, Attend&& attend, Generator& gen, Tensor* attention_input);

  bool pre_norm_;
  double dropout_;
  std::shared_ptr<SegmentAttention> attn_;
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
  // The span loss: sum over layers of lambda S mean_h(c) (undefined without adaptive span).
  Variable span_loss() const;
  // Clamps every span parameter to [0, 1]; call after every optimizer step.
  void clamp_spans() const;
  // C_l for the next forward.
  int64_t cache_size(int64_t layer) const;

  // Span statistics as the original logger (spec 1.6): mean over layers of ceil(mean_h z) + R
  // and max over layers of ceil(max_h z) + R; the maximum span S without adaptive span.
  double average_span() const;
  double largest_span() const;
  // z_h = c_h S of every head, [layer][head] (empty without adaptive span).
  std::vector<std::vector<double>> head_spans() const;
  // Attention work of a segment of M queries against full attention, the dense product of the
  // segment with [S cache rows; segment] that a PyTorch user writes (M (S + M) pairs per head and
  // layer): the fused path computes M W_l (each query its W_l slots: causal and span-limited keys
  // skipped), the reference path M (W_l + M) (SegmentAttention::computed_pairs).
  double attention_flops_share(int64_t segment) const;

 private:
  CharTransformerConfig config_;
  std::shared_ptr<Embedding> embedding_;
  Variable key_pe_;
  std::vector<std::shared_ptr<CharLayer>> layers_;
  std::shared_ptr<LayerNorm> final_norm_;
  std::shared_ptr<Linear> out_;
};

}  // namespace posgrad
