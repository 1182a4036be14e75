// MultiHeadAttention (see multi_head_attention.h).
// Shapes: letters of shape_legend.h.
#include "attention/multi_head_attention.h"

#include <cmath>
#include <limits>

#include "attention/fused/column_tables.h"
#include "attention/fused/fused_attention.h"
#include "attention/reference_attention.h"

namespace posgrad {

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

void MultiHeadAttention::set_attention_dropout(double rate, uint64_t seed) {
  if (!(rate >= 0.0 && rate < 1.0)) fail("MultiHeadAttention: attention dropout must be in [0, 1), got {}", rate);
  if (attention_dropout_) fail("MultiHeadAttention: attention dropout is already set (rate {})", attention_dropout_->p());
  if (rate > 0.0) attention_dropout_ = register_module("attention_dropout", std::make_shared<Dropout>(rate, seed));
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
  if (!last_forward_fused() || positions.is_tree()) return 1.0;
  const std::optional<OffsetBox> box = key_box(positions, causal);
  if (!box) return 1.0;
  OffsetBox computed = box->intersect(OffsetBox::full(positions));
  // Column tables widen a box at least as wide as the grid's last dim to whole rows there
  // (fused/column_tables.h): the kernels then compute those keys too.
  const std::vector<int64_t>& S = positions.structure();
  if (fused_detail::column_tables_pay(S, computed.lo, computed.hi, heads_, head_width_))
    fused_detail::widen_last_dim(S, computed.lo, computed.hi);
  const double N = static_cast<double>(positions.tokens());
  return computed.pairs(S) / (N * N);
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
  const AttentionTerms terms = combine_attention_terms(hooks_, pos, q.dtype());
  const AttentionSpec spec{pos, key_box(pos, masks.causal), masks.key_padding,
                           1.0 / std::sqrt(static_cast<double>(head_width_))};
  const Device device = x.value().device();
  std::string blocker = terms.fused_blocker();
  if (!device.is_cpu()) blocker = fmt::format("the input is on {} (the fused op is CPU code)", device.str());
  ProbabilityDropout dropout;
  if (attention_dropout_ && is_training()) {
    dropout = {attention_dropout_->p(), true, &attention_dropout_->generator()};
    if (blocker.empty()) blocker = "attention dropout in training (the fused op has no dropout)";
  }
  last_fused_probs_ = nullptr;
  last_probs_ = Tensor();
  Variable o;  // [B, H, N, Dh]
  if (choose_attention_path(path_, blocker, "MultiHeadAttention") == AttentionPath::Fused) {
    o = fused_attention(q, k, v, terms, spec);
    last_fused_probs_ = [qv = q.value(), kv = k.value(), vv = v.value(), values = detached(terms), spec]() {
      return fused_attention_probs(qv, kv, vv, values, spec);
    };
  } else {
    o = reference_attention(q, k, v, terms, spec, &last_probs_, dropout);
  }
  return out_proj_->forward(reshape(permute(o, {0, 2, 1, 3}), {B, N, width_}));
}

const Tensor& MultiHeadAttention::last_probs() const {
  if (!last_probs_.defined() && last_fused_probs_) last_probs_ = last_fused_probs_();
  return last_probs_;
}

}  // namespace posgrad
