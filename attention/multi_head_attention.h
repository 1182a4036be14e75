// MultiHeadAttention: q/k/v projections (Linear(D, D) each), split into H heads of Dh = D / H,
// the positional attention pipeline, and the output projection. Parameter names (q_proj,
// k_proj, v_proj, out_proj) match tools/golden_transformer.py; hooks are children "hooks.<i>".
//
// The pipeline, for x [B, N, D] at `positions`:
//   q, k, v = split(proj(x))                     [B, H, N, Dh]
//   hooks: rotate(q, k)
//   layout = dense (reference) or window (fast) over the intersection of the hooks' key
//            ranges and the causal box                                    (score_layout.h)
//   logits.content = q . k / sqrt(Dh); logits += hooks' score_terms         [B, H, N, K]
//   hooks: modulate(logits)
//   blocked slots, padded keys -> -inf; softmax over slots (a fully blocked row gives zeros)
//   hooks: prob_mask -> p = p * m / (sum p * m + 1e-8)
//   out = sum over slots p * v[key]; merge heads; out_proj
//
// The fused path (attention/fused/fused_attention.h) runs the same pipeline as one op on the
// hooks' fused_terms() tables: no [B, H, N, K] tensor, and keys outside the key range skipped.
//
// The reference path is the oracle; the fast path computes only the keys inside the window
// and must agree with it forward and backward (tests/attention/test_attention_pipeline.cpp, and
// every scheme's own test through tests/attention_paths.h).
// Absolute schemes (AbsoluteEncoding) are refused with an error: the model applies them to its
// token embeddings (attention_hook.h).
// Deliberately not here: cross-attention (keys from another sequence) and attention dropout.
// Shapes: letters of shape_legend.h.
#pragma once

#include <functional>

#include "attention/attention_hook.h"
#include "attention/scaled_dot_product.h"
#include "nn/linear.h"
#include "nn/module.h"

namespace posgrad {

enum class AttentionPath {
  Reference,  // dense [B, H, N, N] scores from autograd primitives
  Fast,       // window layout when any key range is set (else dense)
  Auto,       // fused when every hook describes itself (CPU), else window layout when the window
              // has at most half the keys, else dense
  Fused,      // the fused op (CPU; an Error naming the hook when a hook cannot describe itself)
};
AttentionPath attention_path_from_name(const std::string& name);  // reference | fast | auto | fused

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

  void set_path(AttentionPath path) { path_ = path; }
  AttentionPath path() const { return path_; }
  // Every hook in pipeline order: the shared ones first, then the layer's own.
  const std::vector<std::shared_ptr<AttentionHook>>& hooks() const { return hooks_; }
  // The layout a forward at `positions` on `device` uses (with or without the causal box). The
  // window kernels are CPU code, so off the CPU it is always the dense reference layout (run by
  // that device's backend, with the key range as a mask).
  ScoreLayout layout_for(const Positions& positions, bool causal, Device device = kCPU) const;
  // Probabilities of the last forward, on its layout's slots [B, H, N, K], and as dense
  // [B, H, N, N] (window slots scattered back to their keys) for figures. After a fused forward
  // they are computed on first request (dense [B, H, N, N]) from the forward's saved q, k, v.
  const Tensor& last_probs() const;
  Tensor last_dense_probs() const;
  // Whether the last forward ran on the fused path.
  bool last_forward_fused() const { return static_cast<bool>(last_fused_probs_); }
  // The share of the N^2 query-key scores the last forward's path computed at `positions`: the
  // pairs inside the key box on the fused path (it skips the rest; a box widened to whole rows of
  // the last dim by its column tables counts those rows), N K / N^2 on a layout (K = N dense, the
  // window's slots on the window layout; the layout of the device the last forward ran on, so 1
  // on a GPU, which has only the dense layout). Before any forward: the CPU layout's share.
  double last_computed_share(const Positions& positions, bool causal = false) const;

  int64_t heads() const { return heads_; }
  int64_t width() const { return width_; }

 private:
  Variable split_heads(const Variable& x) const;  // [B, N, D] -> [B, H, N, Dh]
  // The intersection of the hooks' key ranges and the causal box; none = every key.
  std::optional<OffsetBox> key_box(const Positions& positions, bool causal) const;

  int64_t width_, heads_, head_width_;
  std::shared_ptr<Linear> q_proj_, k_proj_, v_proj_, out_proj_;
  std::vector<std::shared_ptr<AttentionHook>> hooks_;
  AttentionPath path_ = AttentionPath::Auto;
  mutable Tensor last_probs_;
  std::optional<ScoreLayout> last_layout_;
  std::function<Tensor()> last_fused_probs_;  // set by a fused forward; computes last_probs_ on request
  Device last_device_ = kCPU;                  // where the last forward ran
};

}  // namespace posgrad
