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
                                       std::vector<std::shared_ptr<AttentionHook>> shared_hooks, bool projection_bias)
    : width_(width), heads_(heads), head_width_(heads > 0 ? width / heads : 0), hooks_(std::move(shared_hooks)) {
  if (heads <= 0 || width % heads != 0)
    fail("MultiHeadAttention: width {} must be a positive multiple of heads {}", width, heads);
  q_proj_ = register_module("q_proj", std::make_shared<Linear>(width, width, projection_bias, gen));
  k_proj_ = register_module("k_proj", std::make_shared<Linear>(width, width, projection_bias, gen));
  v_proj_ = register_module("v_proj", std::make_shared<Linear>(width, width, projection_bias, gen));
  out_proj_ = register_module("out_proj", std::make_shared<Linear>(width, width, projection_bias, gen));
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

std::optional<OffsetBox> MultiHeadAttention::key_box(const PositionPair& positions, bool causal,
                                                     const std::optional<OffsetBox>& window) const {
  std::optional<OffsetBox> box = window;
  auto narrow_to = [&](const OffsetBox& b) { box = box ? box->intersect(b) : b; };
  for (const auto& hook : hooks_)
    if (auto range = hook->key_range(positions)) narrow_to(*range);
  if (causal && !positions.is_tree()) {  // trees: by token index (AttentionSpec::causal_by_index)
    if (positions.dims() != 1)
      fail("attention: a causal mask needs 1-D sequence positions or tree positions, got {}", positions.describe());
    narrow_to(OffsetBox{{std::min<int64_t>(positions.relative_lo()[0], 0)}, {0}});
  }
  return box;
}

double MultiHeadAttention::last_computed_share(const Positions& positions, bool causal) const {
  if (!last_forward_fused() || positions.is_tree()) return 1.0;
  const std::optional<OffsetBox> box = key_box(positions, causal);
  if (!box) return 1.0;
  OffsetBox computed = box->intersect(OffsetBox::full(positions));
  // On the CPU column tables widen a box at least as wide as the grid's last dim to whole rows
  // there (fused/column_tables.h): the kernels then compute those keys too (the GPU's do not).
  const std::vector<int64_t>& S = positions.structure();
  if (last_fused_on_cpu_ && fused_detail::column_tables_pay(S, computed.lo, computed.hi, heads_, head_width_))
    fused_detail::widen_last_dim(S, computed.lo, computed.hi);
  const double N = static_cast<double>(positions.tokens());
  return computed.pairs(S) / (N * N);
}

Variable MultiHeadAttention::forward(const Variable& x, const AttentionMasks& masks, const Positions* positions) {
  if (!positions) return forward(x, x, AttentionContext{nullptr, masks.key_padding, masks.causal, nullptr});
  const PositionPair self(*positions);
  return forward(x, x, AttentionContext{&self, masks.key_padding, masks.causal, nullptr});
}

Variable MultiHeadAttention::forward(const Variable& queries_from, const Variable& keys_from,
                                     const AttentionContext& context) {
  for (const Variable* x : {&queries_from, &keys_from})
    if (x->dim() != 3 || x->size(2) != width_ || x->size(0) != queries_from.size(0))
      fail("MultiHeadAttention: queries and keys must come from [B, N, {}] inputs of one batch, got {} and {}", width_,
           queries_from.value().describe(), keys_from.value().describe());
  const int64_t B = queries_from.size(0), Nq = queries_from.size(1), Nk = keys_from.size(1);
  for (const auto& hook : hooks_) hook->set_query_inputs(queries_from);
  Variable q = split_heads(q_proj_->forward(queries_from));
  Variable k = split_heads(k_proj_->forward(keys_from));
  Variable v = split_heads(v_proj_->forward(keys_from));
  Variable o;  // [B, H, Nq, Dh]
  if (KeyValueCache* cache = context.cache) {
    if (context.positions)
      fail("MultiHeadAttention: with a key/value cache the positions follow from it (the new tokens come after "
           "the {} cached ones); pass none", cache->tokens());
    if (Nk != Nq)
      fail("MultiHeadAttention: with a key/value cache the queries are the new tokens, {} of them, but the keys "
           "come from {}", Nq, Nk);
    const int64_t Nc = cache->tokens();
    const PositionPair new_tokens(Positions::sequence(Nq, cache->position));
    for (const auto& hook : hooks_) hook->rotate(q, k, new_tokens);
    cache->k = Nc > 0 ? cat({cache->k, k}, 2) : k;  // [B, H, Nc + Nq, Dh]
    cache->v = Nc > 0 ? cat({cache->v, v}, 2) : v;
    cache->position += Nq;
    o = attend(q, cache->k, cache->v, PositionPair::memory(Nc + Nq, Nq), context);
    if (cache->limit > 0 && Nc + Nq > cache->limit) {
      cache->k = narrow(cache->k, 2, Nc + Nq - cache->limit, cache->limit);
      cache->v = narrow(cache->v, 2, Nc + Nq - cache->limit, cache->limit);
    }
  } else {
    const bool self = queries_from.impl() == keys_from.impl() && Nq == Nk;
    const PositionPair sequences = self ? PositionPair(Positions::sequence(Nq))
                                        : PositionPair(Positions::sequence(Nq), Positions::sequence(Nk));
    const PositionPair& pos = context.positions ? *context.positions : sequences;
    if (pos.queries().tokens() != Nq || pos.keys().tokens() != Nk)
      fail("MultiHeadAttention: {} queries and {} keys, but the positions describe {}", Nq, Nk, pos.describe());
    for (const auto& hook : hooks_) hook->rotate(q, k, pos);
    o = attend(q, k, v, pos, context);
  }
  return out_proj_->forward(reshape(permute(o, {0, 2, 1, 3}), {B, Nq, width_}));
}

Variable MultiHeadAttention::attend(const Variable& q, const Variable& k, const Variable& v,
                                    const PositionPair& positions, const AttentionContext& context) {
  const AttentionTerms terms = combine_attention_terms(hooks_, positions, q.dtype());
  const AttentionSpec spec{positions, key_box(positions, context.causal, context.window), context.key_padding,
                           1.0 / std::sqrt(static_cast<double>(head_width_)), context.causal && positions.is_tree()};
  const Device device = q.value().device();
  std::string blocker = terms.fused_blocker();
  if (blocker.empty() && spec.causal_by_index)
    blocker = "a causal mask over tree positions (by token index; the fused op masks by offsets, which trees lack)";
  // On a GPU the fused op runs the GPU kernels (fused/gpu/), which auto does not take until they
  // have run on a GPU; the fused path takes them.
  if (!device.is_cpu() && path_ == AttentionPath::Auto)
    blocker = fmt::format("the input is on {}, where auto takes the reference path until the GPU fused kernels have "
                          "run on a GPU (attention path 'fused' takes them)", device.str());
  ProbabilityDropout dropout;
  if (attention_dropout_ && is_training()) {
    dropout = {attention_dropout_->p(), true,
               context.dropout_generator ? context.dropout_generator : &attention_dropout_->generator()};
    if (blocker.empty()) blocker = "attention dropout in training (the fused op has no dropout)";
  }
  last_fused_probs_ = nullptr;
  last_probs_ = Tensor();
  if (choose_attention_path(path_, blocker, "MultiHeadAttention") == AttentionPath::Fused) {
    last_fused_on_cpu_ = device.is_cpu();
    // The probabilities for figures, on request: the reference's, of the same values.
    last_fused_probs_ = [qv = q.value(), kv = k.value(), vv = v.value(), values = detached(terms), spec]() {
      NoGradGuard no_grad;
      Tensor probs;
      reference_attention(Variable(qv), Variable(kv), Variable(vv), values, spec, &probs);
      return probs;
    };
    return fused_attention(q, k, v, terms, spec);
  }
  return reference_attention(q, k, v, terms, spec, &last_probs_, dropout);
}

const Tensor& MultiHeadAttention::last_probs() const {
  if (!last_probs_.defined() && last_fused_probs_) last_probs_ = last_fused_probs_();
  return last_probs_;
}

}  // namespace posgrad
