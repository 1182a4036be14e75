// MultiHeadAttention: q/k/v projections (Linear(D, D) each, with bias unless the layer is built
// without: the char LM's), split into H heads of Dh = D / H, positional attention, and the output
// projection. Parameter names (q_proj, k_proj, v_proj, out_proj) match tools/golden_transformer.py;
// hooks are children "hooks.<i>".
//
// One forward, queries from xq [B, Nq, D] and keys and values from xk [B, Nk, D] at `positions`
// (a PositionPair, positions.h):
//   q = split(q_proj(xq)), k, v = split(proj(xk))              [B, H, Nq | Nk, Dh]
//   hooks: rotate(q, k)                  (q at the query positions, k at the key positions)
//   box   = the intersection of the hooks' key ranges, the causal box and the caller's window
//           (offset_box.h)
//   terms = the hooks' tables over the pair's relative grid, combined (attention_terms.h)
//   o     = reference_attention or fused_attention (q, k, v, terms, box, padding)   [B, H, Nq, Dh]
//   out   = out_proj(merge heads(o))                                                 [B, Nq, D]
// Three uses, one code path:
//   * self-attention: forward(x, masks, positions), xq = xk = x, one Positions for both sides;
//   * attention over a memory (the char LM's cache of previous segments): xk = [memory; segment],
//     xq = the segment, positions = PositionPair::memory(Nk, Nq): queries are the last Nq key
//     tokens; a window (AttentionContext::window) bounds the distances a query sees;
//   * cross-attention (decoder queries over encoder keys): each side its own Positions and the
//     keys their own padding.
// With a KeyValueCache (incremental decoding) the layer projects and rotates only the new tokens'
// k and v, appends them to the cache and attends from the new queries (the last Nq tokens, 1-D)
// over every cached key: token by token it computes what one causal forward over the whole
// sequence computes. A cache with a limit keeps only its last `limit` tokens (a window-limited
// cache: the char LM's W - s), counting positions on.
//
// The two implementations compute the same numbers; choose_attention_path (attention_path.h)
// picks one from the requested path (set_path; Auto by default): the fused op on the CPU when
// the hooks' terms allow it, else the dense reference (any device; the oracle in the tests). On a
// GPU, Fused runs the GPU fused kernels (fused/gpu/), which Auto does not take yet.
// Absolute schemes (AbsoluteEncoding) are refused with an error: the model applies them to its
// token embeddings (attention_hook.h).
// Attention dropout (set_attention_dropout): dropout on the probabilities in training, as the
// reference implements it; a layer with a positive rate runs the reference while training (the
// fused op has no dropout) and either path in evaluation. Its generator is a child Dropout module
// ("attention_dropout"), so checkpoints that save every Dropout's generator resume it exactly.
// Deliberately not here: the choice of the positional scheme (registry.h) and the masks' meaning
// beyond the key box and padding.
// Shapes: letters of shape_legend.h; Nc the tokens in a KeyValueCache.
#pragma once

#include <functional>

#include "attention/attention_hook.h"
#include "attention/attention_path.h"
#include "attention/attention_masks.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/module.h"

namespace posgrad {

// The keys and values of the tokens decoded so far (rotated as their positions say), for
// incremental decoding; one per layer, empty at the start of a sequence.
struct KeyValueCache {
  Variable k, v;  // [B, H, Nc, Dh]; undefined while empty
  int64_t position = 0;  // of the next new token: every token appended so far, kept or dropped
  int64_t limit = 0;     // keep at most the last `limit` tokens after a forward; 0 = all
  int64_t tokens() const { return k.defined() ? k.size(2) : 0; }  // Nc
  void clear() { k = v = Variable(), position = 0; }
};

// What one forward needs besides its inputs.
struct AttentionContext {
  // Where the queries and keys sit. None: sequences 0..Nq-1 and 0..Nk-1 (one sequence when the
  // inputs are the same tokens, Nq = Nk); with a cache it must be none (the new tokens follow the
  // cached ones on one sequence).
  const PositionPair* positions = nullptr;
  Tensor key_padding;   // [B, Nk] (with a cache: [B, Nc + Nq]), non-zero = padded key; undefined = none
  // A query sees keys at offset <= 0 (1-D positions), or, on tree positions, the keys up to its
  // own token index (the decoder's traversal order; the reference path only).
  bool causal = false;
  KeyValueCache* cache = nullptr;
  std::optional<OffsetBox> window = std::nullopt;  // the caller's key range (offsets key - query); none = every key
  Generator* dropout_generator = nullptr;  // attention dropout's masks (none: the layer's own generator)
};

class MultiHeadAttention : public Module {
 public:
  // `hooks` become children ("hooks.<i>"); `shared_hooks` (e.g. one APE module shared by every
  // layer) are used in the same way but owned and registered by the model. An absolute scheme
  // among either is an error.
  // `projection_bias` false: q/k/v/out projections without bias.
  MultiHeadAttention(int64_t width, int64_t heads, Generator& gen,
                     std::vector<std::shared_ptr<AttentionHook>> hooks = {},
                     std::vector<std::shared_ptr<AttentionHook>> shared_hooks = {}, bool projection_bias = true);

  // Self-attention: x [B, N, D] (queries and keys from the same tokens) -> [B, N, D]. Without
  // `positions` the tokens are a sequence 0..N-1.
  using Module::forward;
  Variable forward(const Variable& x, const AttentionMasks& masks = {}, const Positions* positions = nullptr);
  // Queries from `queries_from` [B, Nq, D] over keys and values from `keys_from` [B, Nk, D] (with a
  // cache: the new tokens, Nk = Nq, appended to it) -> [B, Nq, D].
  Variable forward(const Variable& queries_from, const Variable& keys_from, const AttentionContext& context);

  // The requested path (attention_path.h); the one that runs is chosen per forward.
  void set_path(AttentionPath path) { path_ = path; }
  AttentionPath path() const { return path_; }
  // Dropout with `rate` on the attention probabilities in training, masks from a generator seeded
  // with `seed`; rate 0 leaves it off. Once per layer (before training).
  void set_attention_dropout(double rate, uint64_t seed);
  double attention_dropout() const { return attention_dropout_ ? attention_dropout_->p() : 0.0; }
  // Every hook in pipeline order: the shared ones first, then the layer's own.
  const std::vector<std::shared_ptr<AttentionHook>>& hooks() const { return hooks_; }
  // The intersection of the hooks' key ranges, the causal box and `window` at `positions`; none =
  // every key.
  std::optional<OffsetBox> key_box(const PositionPair& positions, bool causal,
                                   const std::optional<OffsetBox>& window = std::nullopt) const;
  // Probabilities of the last forward [B, H, Nq, Nk] (for figures). After a fused forward the
  // reference computes them on first request from the forward's saved q, k, v and tables.
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
  // q [B, H, Nq, Dh], k, v [B, H, Nk, Dh] (rotated) -> [B, H, Nq, Dh] on the chosen path.
  Variable attend(const Variable& q, const Variable& k, const Variable& v, const PositionPair& positions,
                  const AttentionContext& context);

  int64_t width_, heads_, head_width_;
  std::shared_ptr<Linear> q_proj_, k_proj_, v_proj_, out_proj_;
  std::vector<std::shared_ptr<AttentionHook>> hooks_;
  AttentionPath path_ = AttentionPath::Auto;
  std::shared_ptr<Dropout> attention_dropout_;  // null = none
  mutable Tensor last_probs_;
  std::function<Tensor()> last_fused_probs_;  // set by a fused forward; computes last_probs_ on request
  bool last_fused_on_cpu_ = true;             // the CPU kernels (column tables) rather than the GPU's
};

}  // namespace posgrad
