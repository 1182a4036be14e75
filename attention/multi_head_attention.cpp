// MultiHeadAttention and the attention pipeline (see multi_head_attention.h).
// Shapes: letters of shape_legend.h.
#include "attention/multi_head_attention.h"

#include <cmath>
#include <limits>

#include "attention/fused/column_tables.h"
#include "attention/fused/fused_attention.h"

namespace posgrad {

AttentionPath attention_path_from_name(const std::string& name) {
  if (name == "reference") return AttentionPath::Reference;
  if (name == "fast") return AttentionPath::Fast;
  if (name == "auto") return AttentionPath::Auto;
  if (name == "fused") return AttentionPath::Fused;
  fail("unknown attention path '{}'; valid names are reference, fast, auto, fused", name);
}

MultiHeadAttention::MultiHeadAttention(int64_t width, int64_t heads, Generator& gen,
                                       std::vector<std::shared_ptr<AttentionHook>> hooks,
                                       std::vector<std::shared_ptr<AttentionHook>> shared_hooks)
    : width_(width), heads_(heads), head_width_(heads > 0 ? width / heads : 0), hooks_(std::move(shared_hooks)) {
  if (heads <= 0 || width % heads != 0)
    fail("MultiHeadAttention: width {} must be a positive multiple of heads {}", width, heads);
  q_proj_ = register_module("q_proj", std::make_shared<Linear>(width, width, true, gen));
  k_proj_ = register_module("k_proj", std::make_shared<Linear>(width, width, true, gen));
  v_proj_ = register_module("v_proj", std::make_shared<Linear>(width, width, true, gen));
  out_proj_ = register_module("out_proj", std::make_shared<Linear>(width, width, true, gen));
  // Absolute schemes add to the token embeddings once, before the first layer; inside attention
  // they would have no place to act, so they are refused rather than ignored.
  auto check = [](const std::shared_ptr<AttentionHook>& hook, const std::string& which) {
    if (!hook) fail("MultiHeadAttention: {} is null", which);
    if (dynamic_cast<const AbsoluteEncoding*>(hook.get()))
      fail("MultiHeadAttention: {} ('{}') is an absolute positional scheme; absolute schemes are applied by the "
           "model to the token embeddings (PosattnClassifier does that for its `positional`), not inside attention",
           which, hook->summary());
  };
  for (size_t i = 0; i < hooks_.size(); ++i) check(hooks_[i], fmt::format("shared hook {}", i));
  for (size_t i = 0; i < hooks.size(); ++i) {
    check(hooks[i], fmt::format("hook {}", i));
    hooks_.push_back(register_module(fmt::format("hooks.{}", i), hooks[i]));
  }
}

Variable MultiHeadAttention::split_heads(const Variable& x) const {
  const int64_t B = x.size(0), N = x.size(1);
  return permute(reshape(x, {B, N, heads_, head_width_}), {0, 2, 1, 3});
}

std::optional<OffsetBox> MultiHeadAttention::key_box(const Positions& positions, bool causal) const {
  std::optional<OffsetBox> box;
  auto narrow_to = [&](const OffsetBox& b) { box = box ? box->intersect(b) : b; };
  for (const auto& hook : hooks_)
    if (auto range = hook->key_range(positions)) narrow_to(*range);
  if (causal) {
    if (positions.is_tree() || positions.dims() != 1)
      fail("attention: a causal mask needs 1-D sequence positions, got {}", positions.describe());
    narrow_to(OffsetBox{{-(positions.tokens() - 1)}, {0}});
  }
  return box;
}

double MultiHeadAttention::last_computed_share(const Positions& positions, bool causal) const {
  const double N = static_cast<double>(positions.tokens());
  if (last_forward_fused() && !positions.is_tree()) {
    const std::optional<OffsetBox> box = key_box(positions, causal);
    if (!box) return 1.0;
    OffsetBox computed = box->intersect(OffsetBox::full(positions));
    // Column tables widen a box at least as wide as the grid's last dim to whole rows there
    // (fused/column_tables.h): the kernels then compute those keys too.
    const std::vector<int64_t>& S = positions.structure();
    if (fused_detail::column_tables_pay(S, computed.lo, computed.hi, heads_, head_width_))
      fused_detail::widen_last_dim(S, computed.lo, computed.hi);
    return computed.pairs(S) / (N * N);
  }
  return static_cast<double>(layout_for(positions, causal, last_device_).slots()) / N;
}

ScoreLayout MultiHeadAttention::layout_for(const Positions& positions, bool causal, Device device) const {
  const std::optional<OffsetBox> box = key_box(positions, causal);
  if (box && !positions.is_tree()) {
    const OffsetBox clipped = box->intersect(OffsetBox::full(positions));
    // An empty box (a lone token whose span reaches no key) has no window to build: the dense
    // layout gives such queries zero attention, on every path.
    const bool use_window = device.is_cpu() && clipped.volume() > 0 && (path_ == AttentionPath::Fast ||
                                                (path_ == AttentionPath::Auto && 2 * clipped.volume() <= positions.tokens()));
    if (use_window) return ScoreLayout::window(positions, clipped);
  }
  return ScoreLayout::dense(positions, box);
}

Variable MultiHeadAttention::forward(const Variable& x, const AttentionMasks& masks, const Positions* positions) {
  if (x.dim() != 3 || x.size(2) != width_)
    fail("MultiHeadAttention: input must be [B, N, {}], got {}", width_, x.value().describe());
  const int64_t B = x.size(0), N = x.size(1);
  const Positions sequence = positions ? Positions() : Positions::sequence(N);
  const Positions& pos = positions ? *positions : sequence;
  if (pos.tokens() != N)
    fail("MultiHeadAttention: {} tokens but positions describe {} ({})", N, pos.tokens(), pos.describe());
  Variable q = split_heads(q_proj_->forward(x));
  Variable k = split_heads(k_proj_->forward(x));
  Variable v = split_heads(v_proj_->forward(x));
  for (const auto& hook : hooks_) hook->rotate(q, k, pos);
  last_fused_probs_ = nullptr;
  last_device_ = x.value().device();

  // The fused path: one op over the hooks' tables (Auto takes it whenever every hook can be
  // described; otherwise the layout rule below).
  if (path_ == AttentionPath::Fused || (path_ == AttentionPath::Auto && x.value().device().is_cpu())) {
    if (!x.value().device().is_cpu())
      fail("MultiHeadAttention: the fused path is CPU code, the input is {}; use the reference path", x.value().describe());
    FusedTerms terms = combine_fused_terms(hooks_, pos, q.dtype());
    if (terms.supported) {
      const FusedAttentionSpec spec{pos, key_box(pos, masks.causal), masks.key_padding,
                                    1.0 / std::sqrt(static_cast<double>(head_width_))};
      Variable o = fused_attention(q, k, v, terms, spec);  // [B, H, N, Dh]
      last_probs_ = Tensor();
      last_layout_.reset();
      // For last_probs(): the values only (no autograd history kept alive).
      FusedTerms values = terms;
      for (Variable* t : {&values.key_bias, &values.query_table, &values.bias, &values.modulation,
                          &values.positional_modulation, &values.prob_mask})
        if (t->defined()) *t = t->detach();
      last_fused_probs_ = [qv = q.value(), kv = k.value(), vv = v.value(), values, spec]() {
        return fused_attention_probs(qv, kv, vv, values, spec);
      };
      return out_proj_->forward(reshape(permute(o, {0, 2, 1, 3}), {B, N, width_}));
    }
    if (path_ == AttentionPath::Fused) fail("MultiHeadAttention: {}", terms.unsupported_reason);
  }

  const ScoreLayout layout = layout_for(pos, masks.causal, x.value().device());
  Logits logits{layout.key_dot(q, k) * (1.0 / std::sqrt(static_cast<double>(head_width_))), Variable()};
  for (const auto& hook : hooks_) {
    Logits terms = hook->score_terms(q, k, layout);
    if (terms.content.defined()) logits.content = logits.content + terms.content;
    if (terms.positional.defined())
      logits.positional = logits.positional.defined() ? logits.positional + terms.positional : terms.positional;
  }
  for (const auto& hook : hooks_) logits = hook->modulate(std::move(logits), layout);
  Variable scores = logits.total();  // [B, H, N, K]

  // Blocked slots: the layout's (outside the grid, or outside the key-range and causal box) and
  // the padded keys, moved onto the slots. The causal mask is left out of attention_block_mask:
  // it is already the layout's box, which is what lets the window path skip the future keys.
  const Tensor padded = attention_block_mask({.key_padding = masks.key_padding}, B, N, N, scores.dtype(),
                                             scores.value().device());  // [B, 1, 1, N]
  const Tensor blocked = blocked_union(layout.blocked(scores.dtype(), scores.value().device()),
                                       padded.defined() ? layout.keys_to_slots(padded) : Tensor());
  if (blocked.defined()) scores = masked_fill(scores, blocked, -std::numeric_limits<double>::infinity());
  Variable probs = softmax(scores, -1);
  for (const auto& hook : hooks_) {
    Variable m = hook->prob_mask(layout);
    if (!m.defined()) continue;
    Variable masked = probs * m;
    probs = masked / (sum(masked, {-1}, true) + 1e-8);
  }
  last_probs_ = probs.value();
  last_layout_ = layout;
  Variable o = layout.weighted_sum(probs, v);  // [B, H, N, Dh]
  return out_proj_->forward(reshape(permute(o, {0, 2, 1, 3}), {B, N, width_}));
}

const Tensor& MultiHeadAttention::last_probs() const {
  if (!last_probs_.defined() && last_fused_probs_) last_probs_ = last_fused_probs_();
  return last_probs_;
}

Tensor MultiHeadAttention::last_dense_probs() const {
  if (!last_layout_ || !last_layout_->is_window()) return last_probs();
  const Tensor& p = last_probs_;  // [B, H, N, W]
  const int64_t B = p.size(0), H = p.size(1), N = p.size(2), W = p.size(3);
  Tensor keys = last_layout_->key_window().key_index();  // [N, W], -1 outside
  // Scatter each slot to column key (slots outside the grid carry probability 0: send them to key 0).
  Tensor cols = maximum(keys, Tensor::zeros({}, DType::Int64)).reshape({1, 1, N, W}).expand({B, H, N, W}).contiguous();
  Tensor valid = ge(keys, Tensor::zeros({}, DType::Int64)).to(p.dtype()).reshape({1, 1, N, W});
  return scatter_add(Shape{B, H, N, N}, 3, cols, mul(p, valid));
}

}  // namespace posgrad
