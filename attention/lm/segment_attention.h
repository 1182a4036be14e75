// SegmentAttention: the attention of a segment-recurrent language model (Sukhbaatar et al. 2019,
// spec adaptive_span.md sections 1-2; Transformer-XL, section 5). M queries (the current segment)
// attend over [cache; segment], where the cache holds the previous inputs of this layer
// (detached). Slot j of query i (its window, and the distance space of the kept probabilities)
// is the key at distance
//
//   d = W - j        (j = 0..W-1, d = W..1; the current token is excluded, the paper's rule), or
//   d = W - 1 - j    (attend_self: d = W-1..0, the GPT / Transformer-XL rule)
//
// so every query sees exactly W keys (the window; zero cache slots are attended, not masked, as
// in the original code). Keys beyond the segment start come from the cache; a cache shorter than
// the window is left-padded with zeros.
//
// Pipeline for h [B, M, D] and cache [B, C, D]:
//   src = [last W - s rows of cache; h]                 [B, W - s + M, D]   (s = attend_self)
//   q = Wq h, k = Wk src, v = Wv src (no bias)           [B, H, M, Dh], [B, H, N, Dh]  (N = W - s + M)
//   rope (or a registered scheme's rotate): q, k rotated by their positions in src
//   terms over the relative grid of PositionPair::memory(N, M) (attention/attention_terms.h):
//     key_pe:   query_table q . P[:, S - d] / sqrt(Dh) (P = the model's shared key_pe [Dh, S])
//     transformer_xl: key bias u / sqrt(Dh); query table and bias (q + v) . (W_kR R_d) / sqrt(Dh)
//     alibi:    bias -m_h d;   a registered scheme (siren, t5_bias, shaw, ...): its own tables
//     adaptive span: prob_mask m_h(d)
//   key box: distances W - s .. 1 - s (each query its W slots), intersected with a registered
//   scheme's key range
//   out = Wo (reference_attention or fused_attention (q, k, v, terms, box)); dropout on the
//   probabilities (reference path, training)
//
// Adaptive span (child "span", an AdaptiveSpan hook: parameter c [H], regulariser, clamp) gives
// the mask m_h(d) = clamp((R + c_h S - (d - 1)) / R, 0, 1) (1 at d = 0), and the window:
//   max_size = min(S, ceil(max_h c_h S) + R),  trim = floor(min(S - 1, S - max_size) / g) g,
//   W = S - trim    (g = trim_granularity, 64 in the paper; trim = false keeps W = S)
// Every trimmed key has mask 0 for every head, but it was part of the softmax the mask
// renormalises: with q = sum p m (a head's in-span mass), trimming multiplies each kept weight by
// (1 + 1e-8 / q_full) / (1 + 1e-8 / q_trimmed), a relative change below 1e-8 / q_full: invisible
// while the span holds much of the mass, 2.7e-3 at q = 3.6e-6 (tests/attention/
// test_char_transformer.cpp; a trained model showed 7.5e-3 nats on single characters). Without
// adaptive span W = S.
//
// Two paths compute the same numbers from the same terms (config.path, attention_path.h): the
// fused op, where each query visits exactly its W slots (the causal half of the dense product and
// the trimmed keys are never computed), and the reference (a dense M x N product), which runs
// attention dropout in training and tensors off the CPU. A registered scheme's tables are
// evaluated on the grid of the call's N tokens, so a table that depends on the grid's size (siren
// with normalized: true) changes with N.
// forward_incremental is the K/V-cached variant for generation (O(W) attention per token).
//
// Deliberately not here: the cache bookkeeping across segments (char_transformer.h).
// Shapes: letters of shape_legend.h; S is the maximum span, W the window (trimmed span).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attention/attention_hook.h"
#include "attention/attention_path.h"
#include "attention/spans/adaptive_span.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "tensor/random.h"

namespace posgrad {

// The LM's own schemes (distances in the window), or any other registered scheme (registry.h).
enum class SegmentPosition { KeyPE, TransformerXL, Rope, Alibi, None, Registered };
// key_pe | transformer_xl | rope | alibi | none, else a registered scheme's name (Registered)
SegmentPosition segment_position_from_name(const std::string& name);
const std::vector<std::string>& segment_position_names();  // the names above, in that order
std::string segment_position_name(SegmentPosition position);

struct SegmentAttentionConfig {
  int64_t width = 128;      // D
  int64_t heads = 4;        // H
  int64_t max_span = 256;   // S: the longest distance a query may see
  SegmentPosition position = SegmentPosition::KeyPE;
  bool attend_self = false;  // include distance 0 (not with key_pe, whose table starts at d = 1)
  bool adaptive_span = true;
  double span_ramp = 32;         // R
  double span_init = 0.0;        // initial c
  double span_loss = 2e-6;       // lambda
  bool trim = true;              // cut the window to the longest span + ramp
  int64_t trim_granularity = 64;
  double dropout = 0.0;          // on the attention probabilities (after the mask)
  double rope_base = 10000.0;
  std::string registered;                                   // SegmentPosition::Registered: the scheme's name
  std::map<std::string, std::string> registered_options;   // and its options (registry.h)
  // Sets `position` from a name (segment_position_from_name), and for a registered scheme also
  // `registered` and `registered_options`.
  void set_positional(const std::string& name, std::map<std::string, std::string> options = {});
  // auto | reference | fused (attention/attention_path.h). The fused path (attention/fused): each
  // query visits only its W slots (the causal, span-limited band of [cache; segment]); the
  // reference path below computes the dense M x (W + M) product. Same numbers; auto takes the
  // reference for attention dropout in training and for tensors off the CPU.
  AttentionPath path = AttentionPath::Auto;
};

class SegmentAttention : public Module {
 public:
  SegmentAttention(const SegmentAttentionConfig& config, Generator& gen);

  // h [B, M, D], cache [B, C, D] (C >= 0; detached by the caller), key_pe [Dh, S] (key_pe
  // scheme only, else undefined), dropout_gen for the attention dropout. -> [B, M, D].
  Variable forward(const Variable& h, const Tensor& cache, const Variable& key_pe, Generator& dropout_gen);
  using Module::forward;

  // Incremental decoding: the keys and values of the previous positions (RoPE keys rotated by
  // their absolute positions), at most W - s of them, detached. `position` counts the tokens seen.
  struct KeyValueCache {
    Tensor keys, values;  // [B, H, C, Dh] (undefined: empty, read as the zero inputs' keys/values)
    int64_t position = 0;
  };
  // The same attention as forward() with a layer-input cache of the same positions, but only the
  // M new rows are projected: O(M D^2 + M W D) per call instead of O((W + M) D^2). h [B, M, D],
  // `kv` read and replaced -> [B, M, D].
  Variable forward_incremental(const Variable& h, KeyValueCache& kv, const Variable& key_pe, Generator& dropout_gen);

  // The window W the next forward uses (S without trimming; see above).
  int64_t window() const;
  // The (query, key) pairs per head whose logits and weighted values the next forward over M
  // queries computes on the module's device: M W on the fused path (each query its W slots; CPU
  // only), M (W - s + M) on the reference path (the dense product of the segment with [cache
  // rows; segment]).
  int64_t computed_pairs(int64_t M) const;
  // The mask over the window's slots [H, W] (slot j = distance as above); undefined without
  // adaptive span. Differentiable in c.
  Variable span_mask(int64_t window) const;
  AdaptiveSpan* span() const { return span_.get(); }
  const SegmentAttentionConfig& config() const { return config_; }
  // Probabilities of the last forward [B, H, M, W] (for figures), when keep_probs is set.
  void set_keep_probs(bool keep) { keep_probs_ = keep; }
  const Tensor& last_probs() const { return last_probs_; }

 private:
  Variable split_heads(const Variable& x) const;  // [B, N, D] -> [B, H, N, Dh]
  // The fused path runs (choose_attention_path): not refused, on the CPU, no dropout in training.
  bool uses_fused_path(Device device) const;
  // q [B, H, M, Dh], k, v [B, H, W - s + M, Dh] (key row W - s + i is query i's own position) ->
  // the heads' outputs merged [B, M, D] before out_proj, on the fused or the reference path.
  Variable attend(const Variable& q, const Variable& k, const Variable& v, const Variable& key_pe, int64_t W,
                  Generator& dropout_gen);
  // The positional tables and the span mask over the relative grid of N = W - s + M tokens.
  AttentionTerms segment_terms(const Variable& key_pe, int64_t W, int64_t M, int64_t N, DType dtype,
                               Device device) const;
  // A registered scheme's rotate of q [B, H, M, Dh] (the last M of the N tokens) and k [B, H, N, Dh].
  void rotate_registered(Variable& q, Variable& k) const;
  Variable rotate(const Variable& x, int64_t first_position) const;  // RoPE on [B, H, N, Dh]

  SegmentAttentionConfig config_;
  int64_t head_width_;
  std::shared_ptr<Linear> q_proj_, k_proj_, v_proj_, out_proj_;
  std::shared_ptr<Linear> w_kr_;  // transformer_xl
  Variable u_, v_;                // transformer_xl [H, Dh]
  std::shared_ptr<AdaptiveSpan> span_;
  std::shared_ptr<AttentionHook> hook_;  // child "positional" (SegmentPosition::Registered)
  bool keep_probs_ = false;
  Tensor last_probs_;
};

// The distance-space reshape of the reference code (spec 2.1), on the last two axes (the kept
// probabilities):  unskew: X [.., M, W + M] -> U [.., M, W] with U[i, j] = X[i, i + j]
Variable unskew(const Variable& x, int64_t window);

}  // namespace posgrad
