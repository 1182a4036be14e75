// MultiHeadAttention: q/k/v projections (Linear(D, D) each), split into H heads of Dh = D / H,
// positional attention, and the output projection. Parameter names (q_proj, k_proj, v_proj,
// out_proj) match tools/golden_transformer.py; hooks are children "hooks.<i>".
//
// One forward, for x [B, N, D] at `positions`:
//   q, k, v = split(proj(x))                                   [B, H, N, Dh]
//   hooks: rotate(q, k)
//   box   = the intersection of the hooks' key ranges and the causal box (offset_box.h)
//   terms = the hooks' tables, combined (attention_terms.h)
//   o     = reference_attention or fused_attention (q, k, v, terms, box, padding)   [B, H, N, Dh]
//   out   = out_proj(merge heads(o))
//
// The two implementations compute the same numbers; choose_attention_path (attention_path.h)
// picks one from the requested path (set_path; Auto by default): the fused op on the CPU when
// the hooks' terms allow it, else the dense reference (any device; the oracle in the tests).
// Absolute schemes (AbsoluteEncoding) are refused with an error: the model applies them to its
// token embeddings (attention_hook.h).
// Attention dropout (set_attention_dropout): dropout on the probabilities in training, as the
// reference implements it; a layer with a positive rate runs the reference while training (the
// fused op has no dropout) and either path in evaluation. Its generator is a child Dropout module
// ("attention_dropout"), so checkpoints that save every Dropout's generator resume it exactly.
// Deliberately not here (yet): cross-attention (keys from another sequence with their own
// positions) and attention over a memory (the char LM's SegmentAttention does that on the same
// AttentionTerms and implementations).
// Shapes: letters of shape_legend.h.
#pragma once

#include <functional>

#include "attention/attention_hook.h"
#include "attention/attention_path.h"
#include "attention/scaled_dot_product.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/module.h"

namespace posgrad {

class MultiHeadAttention : public Module {
 public:
  // `hooks` become children ("hooks.<i>"); `shared_hooks` (e.g. one APE module shared by every
  // layer) are used in the same way but owned and registered by the model. An absolute scheme
  // among either is an error.
  MultiHeadAttention(int64_t width, int64_t heads, Generator& gen,
                     std::vector<std::shared_ptr<AttentionHook>> hooks = {},
                     std::vector<std::shared_ptr<AttentionHook>> shared_hooks = {});

  // x [B, N, D] (queries and keys from the same tokens) -> [B, N, D]. Without `positions` the
  // tokens are a sequence 0..N-1.
  using Module::forward;
  Variable forward(const Variable& x, const AttentionMasks& masks = {}, const Positions* positions = nullptr);

  // The requested path (attention_path.h); the one that runs is chosen per forward.
  void set_path(AttentionPath path) { path_ = path; }
  AttentionPath path() const { return path_; }
  // Dropout with `rate` on the attention probabilities in training, masks from a generator seeded
  // with `seed`; rate 0 leaves it off. Once per layer (before training).
  void set_attention_dropout(double rate, uint64_t seed);
  double attention_dropout() const { return attention_dropout_ ? attention_dropout_->p() : 0.0; }
  // Every hook in pipeline order: the shared ones first, then the layer's own.
  const std::vector<std::shared_ptr<AttentionHook>>& hooks() const { return hooks_; }
  // The intersection of the hooks' key ranges and the causal box at `positions`; none = every key.
  std::optional<OffsetBox> key_box(const Positions& positions, bool causal) const;
  // Probabilities of the last forward [B, H, N, N] (for figures). After a fused forward they are
  // computed on first request from the forward's saved q, k, v and tables.
  const Tensor& last_probs() const;
  // Whether the last forward ran on the fused path.
  bool last_forward_fused() const { return static_cast<bool>(last_fused_probs_); }
  // The share of the N^2 query-key scores the last forward computed at `positions`: the pairs
  // inside the key box on the fused path (it skips the rest; a box widened to whole rows of the
  // last dim by its column tables counts those rows), 1 on the reference path and before any
  // forward.
  double last_computed_share(const Positions& positions, bool causal = false) const;

  int64_t heads() const { return heads_; }
  int64_t width() const { return width_; }

 private:
  Variable split_heads(const Variable& x) const;  // [B, N, D] -> [B, H, N, Dh]

  int64_t width_, heads_, head_width_;
  std::shared_ptr<Linear> q_proj_, k_proj_, v_proj_, out_proj_;
  std::vector<std::shared_ptr<AttentionHook>> hooks_;
  AttentionPath path_ = AttentionPath::Auto;
  std::shared_ptr<Dropout> attention_dropout_;  // null = none
  mutable Tensor last_probs_;
  std::function<Tensor()> last_fused_probs_;  // set by a fused forward; computes last_probs_ on request
};

}  // namespace posgrad
