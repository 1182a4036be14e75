// SegmentAttention (see segment_attention.h).
// Shapes: letters of shape_legend.h; S is the maximum span, W the window.
#include "attention/lm/segment_attention.h"

#include <algorithm>
#include <cmath>

#include <fmt/ranges.h>

#include "attention/fused/fused_attention.h"
#include "attention/reference_attention.h"
#include "attention/registry.h"
#include "attention/schemes/alibi.h"
#include "nn/init.h"

namespace posgrad {

SegmentPosition segment_position_from_name(const std::string& name) {
  if (name == "key_pe") return SegmentPosition::KeyPE;
  if (name == "transformer_xl") return SegmentPosition::TransformerXL;
  if (name == "rope") return SegmentPosition::Rope;
  if (name == "alibi") return SegmentPosition::Alibi;
  if (name == "none") return SegmentPosition::None;
  const std::vector<std::string> registered = hook_names();
  if (std::find(registered.begin(), registered.end(), name) != registered.end()) return SegmentPosition::Registered;
  fail("unknown positional scheme '{}' for the char LM; valid: key_pe, transformer_xl, rope, alibi, none, or a "
       "registered scheme ({})",
       name, fmt::join(registered, ", "));
}

void SegmentAttentionConfig::set_positional(const std::string& name, std::map<std::string, std::string> options) {
  position = segment_position_from_name(name);
  registered = position == SegmentPosition::Registered ? name : "";
  registered_options = std::move(options);
}

const std::vector<std::string>& segment_position_names() {
  static const std::vector<std::string> names{"key_pe", "transformer_xl", "rope", "alibi", "none"};
  return names;
}

std::string segment_position_name(SegmentPosition position) {
  switch (position) {
    case SegmentPosition::Registered: return "registered";
    case SegmentPosition::KeyPE: return "key_pe";
    case SegmentPosition::TransformerXL: return "transformer_xl";
    case SegmentPosition::Rope: return "rope";
    case SegmentPosition::Alibi: return "alibi";
    case SegmentPosition::None: return "none";
  }
  return "?";
}

Variable unskew(const Variable& x, int64_t window) {
  const Shape shape = x.value().shape();
  const int64_t n = static_cast<int64_t>(shape.size());
  const int64_t M = shape[n - 2], width = shape[n - 1];
  if (width != window + M) fail("unskew: last axis {} must be window {} + M {}", width, window, M);
  Shape flat(shape.begin(), shape.end() - 2), pad = flat, rows = flat;
  flat.push_back(M * width);
  pad.push_back(M);
  rows.push_back(M);
  rows.push_back(width + 1);
  // Row i of the padded [M, W + M + 1] view starts i elements later in X: column j is X[i, i + j].
  Variable padded = cat({reshape(x, flat), Variable(Tensor::zeros(pad, x.dtype(), x.value().device()))}, -1);
  return slice(reshape(padded, rows), -1, 0, window);
}

SegmentAttention::SegmentAttention(const SegmentAttentionConfig& config, Generator& gen)
    : config_(config), head_width_(config.heads > 0 ? config.width / config.heads : 0) {
  const auto& c = config_;
  if (c.heads <= 0 || c.width % c.heads != 0)
    fail("SegmentAttention: width {} must be a positive multiple of heads {}", c.width, c.heads);
  if (c.max_span < 1) fail("SegmentAttention: max_span must be >= 1, got {}", c.max_span);
  if (c.position == SegmentPosition::KeyPE && c.attend_self)
    fail("SegmentAttention: key_pe covers distances 1..max_span; attend_self needs another positional scheme");
  if (c.position == SegmentPosition::Rope && head_width_ % 2 != 0)
    fail("SegmentAttention: rope needs an even head width, got {}", head_width_);
  if (c.position == SegmentPosition::TransformerXL && c.width % 2 != 0)
    fail("SegmentAttention: transformer_xl needs an even width, got {}", c.width);
  if (c.trim_granularity < 1) fail("SegmentAttention: trim_granularity must be >= 1, got {}", c.trim_granularity);
  if (!(c.dropout >= 0.0 && c.dropout < 1.0)) fail("SegmentAttention: dropout must be in [0, 1), got {}", c.dropout);
  // Q/K/V/O without bias (spec 3.1), PyTorch's default Linear init U(+-1/sqrt(D)).
  q_proj_ = register_module("q_proj", std::make_shared<Linear>(c.width, c.width, false, gen));
  k_proj_ = register_module("k_proj", std::make_shared<Linear>(c.width, c.width, false, gen));
  v_proj_ = register_module("v_proj", std::make_shared<Linear>(c.width, c.width, false, gen));
  out_proj_ = register_module("out_proj", std::make_shared<Linear>(c.width, c.width, false, gen));
  if (c.position == SegmentPosition::TransformerXL) {
    // Spec 5.6: u, v ~ N(0, 0.02); W_kR a bias-free Linear(D, D). Here u, v are per layer.
    u_ = register_parameter("u", normal({c.heads, head_width_}, 0.0, 0.02, gen));
    v_ = register_parameter("v", normal({c.heads, head_width_}, 0.0, 0.02, gen));
    w_kr_ = register_module("w_kr", std::make_shared<Linear>(c.width, c.width, false, gen));
  }
  if (c.position == SegmentPosition::Registered) {
    hook_ = register_module("positional", make_hook(HookSpec{c.registered, HookOptions(c.registered_options)},
                                                     HookContext{.width = c.width, .heads = c.heads, .structure = {c.max_span + 1}},
                                                     gen));
    if (dynamic_cast<const AbsoluteEncoding*>(hook_.get()))
      fail("SegmentAttention: '{}' is an absolute positional scheme; the char LM takes relative schemes only", c.registered);
  }
  if (c.adaptive_span)
    span_ = register_module("span", std::make_shared<AdaptiveSpan>(c.heads, c.max_span, c.span_ramp, c.span_init,
                                                                   c.span_loss));
}

int64_t SegmentAttention::window() const {
  const int64_t S = config_.max_span;
  if (!span_ || !config_.trim) return S;
  const std::vector<double> c = span_->c().value().to_vector<double>();
  const double zmax = std::max(0.0, *std::max_element(c.begin(), c.end())) * static_cast<double>(S);
  const int64_t max_size = std::min<int64_t>(S, static_cast<int64_t>(std::ceil(zmax) + std::ceil(config_.span_ramp)));
  const int64_t g = config_.trim_granularity;
  const int64_t trim = std::min(S - 1, S - max_size) / g * g;
  return S - trim;
}

Variable SegmentAttention::span_mask(int64_t window) const {
  if (!span_) return {};
  const int64_t s = config_.attend_self ? 1 : 0;
  const double R = config_.span_ramp, S = static_cast<double>(config_.max_span);
  std::vector<double> ramp(static_cast<size_t>(window));
  for (int64_t j = 0; j < window; ++j) {
    const double d = static_cast<double>(window - s - j);
    ramp[static_cast<size_t>(j)] = (R - (d - 1.0)) / R;
  }
  const Variable& c = span_->c();
  const Tensor ramp_row = Tensor::from_vector(ramp, {1, window}).to(c.dtype()).to(c.value().device());
  // m = clamp(c S / R + (R - (d - 1)) / R, 0, 1)      [H, W]
  return clamp(reshape(c, {config_.heads, 1}) * (S / R) + Variable(ramp_row), 0.0, 1.0);
}

Variable SegmentAttention::split_heads(const Variable& x) const {
  const int64_t B = x.size(0), N = x.size(1);
  return permute(reshape(x, {B, N, config_.heads, head_width_}), {0, 2, 1, 3});
}

Variable SegmentAttention::rotate(const Variable& x, int64_t first_position) const {
  const int64_t B = x.size(0), H = x.size(1), N = x.size(2), P = head_width_ / 2;
  std::vector<double> cosines(static_cast<size_t>(N * P)), sines(cosines.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < P; ++t) {
      const double angle = static_cast<double>(first_position + n) *
                           std::pow(config_.rope_base, -2.0 * static_cast<double>(t) / static_cast<double>(head_width_));
      cosines[static_cast<size_t>(n * P + t)] = std::cos(angle);
      sines[static_cast<size_t>(n * P + t)] = std::sin(angle);
    }
  const Device device = x.value().device();
  const Variable cosine(Tensor::from_vector(cosines, {N, P}).to(x.dtype()).to(device));
  const Variable sine(Tensor::from_vector(sines, {N, P}).to(x.dtype()).to(device));
  Variable pairs = reshape(x, {B, H, N, P, 2});
  Variable even = select(pairs, 4, 0), odd = select(pairs, 4, 1);  // [B, H, N, P]
  // Interleaved pairs (2t, 2t + 1) as rope.h: (e cos - o sin, o cos + e sin).
  return reshape(stack({even * cosine - odd * sine, odd * cosine + even * sine}, 4), {B, H, N, head_width_});
}

bool SegmentAttention::uses_fused_path(Device device) const {
  std::string blocker;
  if (!device.is_cpu()) blocker = fmt::format("the input is on {} (the fused op is CPU code)", device.str());
  else if (config_.dropout > 0.0 && is_training()) blocker = "attention dropout in training (reference path only)";
  return choose_attention_path(config_.path, blocker, "SegmentAttention") == AttentionPath::Fused;
}

int64_t SegmentAttention::computed_pairs(int64_t M) const {
  const int64_t W = window(), s = config_.attend_self ? 1 : 0;
  return uses_fused_path(q_proj_->weight().value().device()) ? M * W : M * (W - s + M);
}

namespace {

// The last `keep` rows of `rows` along `axis`, left-padded with zeros when it holds fewer (or is
// undefined); `shape` gives the other dims of the result.
Tensor last_rows_zero_padded(const Tensor& rows, std::vector<int64_t> shape, int64_t axis, int64_t keep, DType dtype,
                             Device device) {
  const int64_t C = rows.defined() ? rows.size(axis) : 0;
  if (C >= keep) return rows.narrow(axis, C - keep, keep);
  shape[static_cast<size_t>(axis)] = keep - C;
  const Tensor zeros = Tensor::zeros(shape, dtype, device);
  return C > 0 ? cat(std::vector<Tensor>{zeros, rows}, axis) : zeros;
}

// Transformer-XL's R_d for the distance d = W - s - j of each window slot j, halves [sin | cos]
// concatenated (spec 5.3): [W, D].
Variable transformer_xl_slot_encodings(int64_t W, int64_t s, int64_t D, DType dtype, Device device) {
  const int64_t half = D / 2;
  std::vector<double> table(static_cast<size_t>(W * D));
  for (int64_t j = 0; j < W; ++j) {
    const double d = static_cast<double>(W - s - j);
    for (int64_t t = 0; t < half; ++t) {
      const double f = std::pow(10000.0, -2.0 * static_cast<double>(t) / static_cast<double>(D));
      table[static_cast<size_t>(j * D + t)] = std::sin(d * f);
      table[static_cast<size_t>(j * D + half + t)] = std::cos(d * f);
    }
  }
  return Variable(Tensor::from_vector(table, {W, D}).to(dtype).to(device));
}

// Slot tables [.., W] (slot j = distance W - s - j) placed on the relative grid of M queries over
// N = W - s + M keys (PositionPair::memory, offsets -(N - 1) .. M - 1) along `axis`: the entry of
// offset -(W - s - j) is r = N - 1 - (W - s - j) = M - 1 + j, so the slots are preceded by M - 1
// and followed by M - s zero entries.
Variable on_relative_grid(const Variable& slots, int64_t axis, int64_t M, int64_t s) {
  Shape before = slots.value().shape(), after = before;
  const int64_t W = before[static_cast<size_t>(axis)];
  before[static_cast<size_t>(axis)] = M - 1;
  after[static_cast<size_t>(axis)] = M - s;
  std::vector<Variable> parts;
  if (M > 1) parts.emplace_back(Tensor::zeros(before, slots.dtype(), slots.value().device()));
  parts.push_back(slots);
  if (M - s > 0) parts.emplace_back(Tensor::zeros(after, slots.dtype(), slots.value().device()));
  return cat(parts, axis);
}

}  // namespace

AttentionTerms SegmentAttention::segment_terms(const Variable& key_pe, int64_t W, int64_t M, int64_t N, DType dtype,
                                               Device device) const {
  const auto& c = config_;
  const int64_t s = c.attend_self ? 1 : 0, H = c.heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_width_));
  const PositionPair pos = PositionPair::memory(N, M);
  AttentionTerms terms;
  if (c.position == SegmentPosition::KeyPE) {
    if (!key_pe.defined() || key_pe.dim() != 2 || key_pe.size(0) != head_width_ || key_pe.size(1) != c.max_span)
      fail("SegmentAttention: key_pe must be [{}, {}]", head_width_, c.max_span);
    Variable slots = transpose(narrow(key_pe, 1, c.max_span - W, W), 0, 1) * scale;  // [W, Dh]
    terms.query_table = expand(unsqueeze(on_relative_grid(slots, 0, M, s), 0), {H, N + M - 1, head_width_});
  } else if (c.position == SegmentPosition::TransformerXL) {
    const Variable r = transformer_xl_slot_encodings(W, s, c.width, dtype, device);  // [W, D]
    Variable e = permute(reshape(w_kr_->forward(r), {W, H, head_width_}), {1, 0, 2}) * scale;  // [H, W, Dh]
    // (q + v) . e = q . e + v . e: a query table and a per-slot bias; (q + u) . k: u a key bias.
    terms.query_table = on_relative_grid(e, 1, M, s);
    terms.bias = on_relative_grid(reshape(matmul(e, reshape(v_, {H, head_width_, 1})), {H, W}), 1, M, s);
    terms.key_bias = u_ * scale;
  } else if (c.position == SegmentPosition::Alibi) {
    terms.bias = Variable(Alibi(H).relative_table(pos).to(dtype).to(device));  // -m_h |offset|
  } else if (c.position == SegmentPosition::Registered) {
    merge_terms(terms, hook_->attention_terms(pos, dtype), hook_->summary());
  }
  if (span_) merge_terms(terms, AttentionTerms{.prob_mask = on_relative_grid(span_mask(W), 1, M, s)}, span_->summary());
  return terms;
}

void SegmentAttention::rotate_registered(Variable& q, Variable& k) const {
  if (!hook_) return;
  // The hook rotates queries and keys of the same N tokens: the M queries are the last rows, so
  // they are rotated as the last rows of an N-row tensor (its first rows are zeros, dropped).
  const int64_t B = q.size(0), H = q.size(1), M = q.size(2), N = k.size(2);
  Variable rows = N > M ? cat({Variable(Tensor::zeros({B, H, N - M, head_width_}, q.dtype(), q.value().device())), q}, 2) : q;
  hook_->rotate(rows, k, Positions::sequence(N));
  q = N > M ? narrow(rows, 2, N - M, M) : rows;
}

Variable SegmentAttention::forward(const Variable& h, const Tensor& cache, const Variable& key_pe, Generator& dropout_gen) {
  const auto& c = config_;
  if (h.dim() != 3 || h.size(2) != c.width)
    fail("SegmentAttention: input must be [B, M, {}], got {}", c.width, h.value().describe());
  const int64_t B = h.size(0);  // M = h.size(1) tokens in the segment
  if (cache.defined() && (cache.dim() != 3 || cache.size(0) != B || cache.size(2) != c.width))
    fail("SegmentAttention: cache must be [{}, C, {}], got {}", B, c.width, cache.describe());
  const int64_t W = window(), s = c.attend_self ? 1 : 0, keep = W - s;
  const DType dtype = h.dtype();
  const Device device = h.value().device();

  // The cache rows the window reaches, left-padded with zeros when the cache is shorter.
  const Tensor memory = last_rows_zero_padded(cache, {B, 0, c.width}, 1, keep, dtype, device);
  const Variable src = keep > 0 ? cat({Variable(memory), h}, 1) : h;  // [B, W - s + M, D]

  Variable q = split_heads(q_proj_->forward(h));    // [B, H, M, Dh]
  Variable k = split_heads(k_proj_->forward(src));  // [B, H, W - s + M, Dh]
  Variable v = split_heads(v_proj_->forward(src));
  if (c.position == SegmentPosition::Rope) {
    q = rotate(q, keep);
    k = rotate(k, 0);
  }
  rotate_registered(q, k);
  return out_proj_->forward(attend(q, k, v, key_pe, W, dropout_gen));
}

Variable SegmentAttention::forward_incremental(const Variable& h, KeyValueCache& kv, const Variable& key_pe,
                                               Generator& dropout_gen) {
  const auto& c = config_;
  if (h.dim() != 3 || h.size(2) != c.width)
    fail("SegmentAttention: input must be [B, M, {}], got {}", c.width, h.value().describe());
  const int64_t B = h.size(0), M = h.size(1), H = c.heads;
  const int64_t W = window(), s = c.attend_self ? 1 : 0, keep = W - s;
  if (kv.keys.defined() && (kv.keys.size(0) != B || kv.keys.size(1) != H || kv.keys.size(3) != head_width_))
    fail("SegmentAttention: the key/value cache is {} but the input {} needs [{}, {}, C, {}]", kv.keys.describe(),
         h.value().describe(), B, H, head_width_);
  const DType dtype = h.dtype();
  const Device device = h.value().device();
  Variable q = split_heads(q_proj_->forward(h));  // [B, H, M, Dh]
  Variable k = split_heads(k_proj_->forward(h));
  Variable v = split_heads(v_proj_->forward(h));
  if (c.position == SegmentPosition::Rope) {  // absolute positions: q . k depends on their difference only
    q = rotate(q, kv.position);
    k = rotate(k, kv.position);
  }
  // The cached keys/values the window reaches, left-padded with zeros (the keys and values of the
  // zero inputs that the layer-input cache path attends: no bias, so exactly 0, rotated or not).
  const Tensor past_k = last_rows_zero_padded(kv.keys, {B, H, 0, head_width_}, 2, keep, dtype, device);
  const Tensor past_v = last_rows_zero_padded(kv.values, {B, H, 0, head_width_}, 2, keep, dtype, device);
  const Variable all_k = keep > 0 ? cat({Variable(past_k), k}, 2) : k;  // [B, H, W - s + M, Dh]
  const Variable all_v = keep > 0 ? cat({Variable(past_v), v}, 2) : v;
  // The next cache: the last W - s keys/values (all a later query's window reaches), detached.
  const int64_t rows = all_k.size(2), next = std::min(rows, keep);
  kv.keys = next > 0 ? all_k.value().narrow(2, rows - next, next).contiguous() : Tensor();
  kv.values = next > 0 ? all_v.value().narrow(2, rows - next, next).contiguous() : Tensor();
  kv.position += M;
  if (hook_) {
    // The cached keys were rotated in the frames of earlier calls: only a hook that rotates nothing
    // can run incrementally (its terms depend on offsets alone).
    Variable probe_q(Tensor::ones({1, H, 2, head_width_}, dtype, device)), probe_k = probe_q;
    hook_->rotate(probe_q, probe_k, Positions::sequence(2));
    if (max_abs_diff(probe_q.value(), Tensor::ones({1, H, 2, head_width_}, dtype, device)) != 0.0)
      fail("SegmentAttention: incremental decoding with '{}' is not supported: it rotates queries and keys by their "
           "positions, and the cached keys were rotated in earlier calls' frames",
           hook_->summary());
  }
  return out_proj_->forward(attend(q, all_k, all_v, key_pe, W, dropout_gen));
}

Variable SegmentAttention::attend(const Variable& q, const Variable& k, const Variable& v, const Variable& key_pe,
                                  int64_t W, Generator& dropout_gen) {
  const auto& c = config_;
  const int64_t B = q.size(0), H = c.heads, M = q.size(2), N = k.size(2), s = c.attend_self ? 1 : 0;
  const DType dtype = q.dtype();
  const Device device = q.value().device();
  const AttentionTerms terms = segment_terms(key_pe, W, M, N, dtype, device);
  AttentionSpec spec{PositionPair::memory(N, M), OffsetBox{{-(W - s)}, {s - 1}}, Tensor(),
                     1.0 / std::sqrt(static_cast<double>(head_width_))};  // distances W - s .. 1 - s: the W slots
  if (hook_)
    if (auto range = hook_->key_range(spec.positions)) spec.box = spec.box->intersect(*range);
  Variable out;  // [B, H, M, Dh]
  Tensor probs;  // [B, H, M, N] when kept
  if (uses_fused_path(device)) {
    out = fused_attention(q, k, v, terms, spec);
    if (keep_probs_) probs = fused_attention_probs(q.value(), k.value(), v.value(), detached(terms), spec);
  } else {
    out = reference_attention(q, k, v, terms, spec, keep_probs_ ? &probs : nullptr,
                              ProbabilityDropout{c.dropout, is_training(), &dropout_gen});
  }
  if (keep_probs_) {  // distance space [B, H, M, W]: slot j of query i is key i + j (unskew)
    if (s == 1) probs = cat(std::vector<Tensor>{probs, Tensor::zeros({B, H, M, 1}, dtype, device)}, 3);
    last_probs_ = unskew(Variable(probs), W).value().contiguous();
  }
  return reshape(permute(out, {0, 2, 1, 3}), {B, M, c.width});
}

}  // namespace posgrad
