// CharTransformer (see char_transformer.h).
// Shapes: letters of shape_legend.h; V the vocabulary, S the maximum span, W the window.
#include "attention/lm/char_transformer.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "attention/registry.h"
#include "attention/schemes/key_pe.h"
#include "attention/schemes/rope.h"
#include "nn/dropout.h"

namespace posgrad {

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

// The layer's own positional hook (none for key_pe, which the model shares).
std::shared_ptr<AttentionHook> make_positional(const CharAttentionConfig& a, Generator& gen) {
  if (a.positional == "key_pe") return nullptr;
  HookOptions options(a.positional_options);
  // The LM's Transformer-XL initialises u, v and W_kR as the spec (5.6) unless told otherwise.
  if (a.positional == "transformer_xl" && !options.has("init")) options = HookOptions({{"init", "txl"}});
  auto hook = make_hook(HookSpec{a.positional, options}, HookContext{.width = a.width, .heads = a.heads, .structure = {a.max_span + 1}},
                        gen);
  if (dynamic_cast<const AbsoluteEncoding*>(hook.get()))
    fail("CharTransformer: '{}' is an absolute positional scheme; the char LM takes relative schemes only (a token's "
         "absolute index has no meaning across segments)",
         a.positional);
  return hook;
}

// The layer's span hook (null for none). S, the ramp and the span loss come from the config (and
// adaptive_span's init, attend_self and granularity); span_options may give only the others.
std::shared_ptr<AttentionHook> make_span(const CharAttentionConfig& a, Generator& gen) {
  if (a.span == "none") {
    if (!a.span_options.empty()) fail("CharTransformer: span none takes no span_options");
    return nullptr;
  }
  std::map<std::string, std::string> from_config{{"max_span", "max_span"}, {"ramp", "span_ramp"}, {"loss_coef", "span_loss"}};
  std::map<std::string, std::string> options{{"max_span", std::to_string(a.max_span)},
                                             {"ramp", fmt::format("{}", a.span_ramp)},
                                             {"loss_coef", fmt::format("{}", a.span_loss)}};
  if (a.span == "adaptive_span") {
    from_config.insert({{"init", "span_init"}, {"attend_self", "attend_self"}, {"granularity", "trim_granularity"}});
    options["init"] = fmt::format("{}", a.span_init);
    options["attend_self"] = a.attend_self ? "true" : "false";
    // Without trimming the window stays S: a granularity of S never trims.
    options["granularity"] = std::to_string(a.trim ? a.trim_granularity : a.max_span);
  } else if (a.span == "dynamic_span") {
    if (a.attend_self)
      fail("CharTransformer: dynamic_span masks the current token (distance 0); attend_self needs span none or "
           "adaptive_span");
  } else {
    fail("CharTransformer: span must be none, adaptive_span or dynamic_span, got '{}'", a.span);
  }
  for (const auto& [key, value] : a.span_options) {
    if (auto it = from_config.find(key); it != from_config.end())
      fail("CharTransformer: span option '{}' comes from the model's {}; set that instead of span_options", key,
           it->second);
    options[key] = value;
  }
  return make_hook(HookSpec{a.span, HookOptions(options)},
                   HookContext{.width = a.width, .heads = a.heads, .structure = {a.max_span + 1}}, gen);
}

}  // namespace

CharLayer::CharLayer(const CharTransformerConfig& config, const std::shared_ptr<AttentionHook>& key_pe, Generator& gen)
    : pre_norm_(config.pre_norm),
      attend_self_(config.attention.attend_self),
      dropout_(config.attention.dropout),
      max_span_(config.attention.max_span) {
  const auto& a = config.attention;
  const int64_t D = a.width;
  std::vector<std::shared_ptr<AttentionHook>> own, shared;
  if (key_pe) shared.push_back(key_pe);
  if ((positional_ = make_positional(a, gen))) own.push_back(positional_);
  if ((span_ = make_span(a, gen))) own.push_back(span_);
  // Q/K/V/O without bias (spec 3.1), PyTorch's default Linear init U(+-1/sqrt(D)).
  attn_ = register_module("attn", std::make_shared<MultiHeadAttention>(D, a.heads, gen, own, shared, false));
  attn_->set_path(a.path);
  if (a.dropout > 0.0) attn_->set_attention_dropout(a.dropout, 0);  // masks from the forward's generator
  norm1_ = register_module("norm1", std::make_shared<LayerNorm>(D));
  fc1_ = register_module("fc1", std::make_shared<Linear>(D, config.ff_width, true, gen));
  fc2_ = register_module("fc2", std::make_shared<Linear>(config.ff_width, D, true, gen));
  norm2_ = register_module("norm2", std::make_shared<LayerNorm>(D));
}

AdaptiveSpan* CharLayer::span() const { return dynamic_cast<AdaptiveSpan*>(span_.get()); }

DynamicSpan* CharLayer::dynamic_span() const { return dynamic_cast<DynamicSpan*>(span_.get()); }

Tensor CharLayer::dynamic_spans() const {
  const DynamicSpan* dynamic = dynamic_span();
  return dynamic && attended_ ? dynamic->spans().value() : Tensor();
}

int64_t CharLayer::window() const {
  const AdaptiveSpan* adaptive = span();
  return adaptive ? adaptive->kept_distance() : max_span_;
}

OffsetBox CharLayer::window_box() const {
  const int64_t s = attend_self_ ? 1 : 0;
  return OffsetBox{{-(window() - s)}, {s - 1}};
}

int64_t CharLayer::computed_pairs(int64_t M) const {
  const int64_t W = window(), s = attend_self_ ? 1 : 0;
  const bool dropout = attn_->attention_dropout() > 0.0 && is_training();
  const bool fused = attn_->path() != AttentionPath::Reference && !dropout &&
                     attn_->named_parameters().front().second.value().device().is_cpu();
  return fused ? M * W : M * (W - s + M);
}

Tensor CharLayer::window_probs() const {
  const Tensor& probs = attn_->last_probs();  // [B, H, M, W - s + M]
  const int64_t W = window();
  if (!attend_self_) return unskew(Variable(probs), W).value().contiguous();
  const Tensor zeros = Tensor::zeros({probs.size(0), probs.size(1), probs.size(2), 1}, probs.dtype(), probs.device());
  return unskew(Variable(cat(std::vector<Tensor>{probs, zeros}, 3)), W).value().contiguous();
}

template <typename Attend>
Variable CharLayer::run(const Variable& x, Attend&& attend, Generator& gen, Tensor* attention_input) {
  auto ff = [&](const Variable& h) {
    Variable a = relu(fc1_->forward(h));
    if (dropout_ > 0.0) a = dropout(a, dropout_, is_training(), gen);
    return fc2_->forward(a);
  };
  if (pre_norm_) {
    Variable a = norm1_->forward(x);
    if (attention_input) *attention_input = a.value();
    Variable h = x + attend(a);
    return h + ff(norm2_->forward(h));
  }
  if (attention_input) *attention_input = x.value();
  Variable h = norm1_->forward(x + attend(x));
  return norm2_->forward(h + ff(h));
}

Variable CharLayer::forward(const Variable& x, const Tensor& cache, Generator& gen, Tensor& attention_input) {
  return run(
      x,
      [&](const Variable& a) {
        const int64_t B = a.size(0), M = a.size(1), D = a.size(2), keep = window() - (attend_self_ ? 1 : 0);
        if (cache.defined() && (cache.dim() != 3 || cache.size(0) != B || cache.size(2) != D))
          fail("CharLayer: cache must be [{}, C, {}], got {}", B, D, cache.describe());
        // The cache rows the window reaches, left-padded with zeros when the cache is shorter.
        const Tensor memory = last_rows_zero_padded(cache, {B, 0, D}, 1, keep, a.dtype(), a.value().device());
        const Variable keys_from = keep > 0 ? cat({Variable(memory), a}, 1) : a;  // [B, W - s + M, D]
        const PositionPair positions = PositionPair::memory(keep + M, M);
        AttentionContext context;
        context.positions = &positions;
        context.window = window_box();
        context.dropout_generator = &gen;
        attended_ = true;
        return attn_->forward(a, keys_from, context);
      },
      gen, &attention_input);
}

Variable CharLayer::forward_incremental(const Variable& x, KeyValueCache& kv, Generator& gen) {
  return run(
      x,
      [&](const Variable& a) {
        const int64_t keep = window() - (attend_self_ ? 1 : 0), H = attn_->heads(), Dh = attn_->width() / H;
        if (kv.tokens() == 0 && kv.position == 0 && keep > 0) {
          // A fresh cache: the keys and values of the zero inputs forward() reads (no bias: exactly 0).
          kv.k = kv.v = Variable(Tensor::zeros({a.size(0), H, keep, Dh}, a.dtype(), a.value().device()));
          kv.position = keep;
        }
        kv.limit = std::max<int64_t>(keep, 1);
        AttentionContext context;
        context.cache = &kv;
        context.window = window_box();
        context.dropout_generator = &gen;
        attended_ = true;
        Variable out = attn_->forward(a, a, context);
        kv.k = Variable(kv.k.value()), kv.v = Variable(kv.v.value());  // detached, as the layer-input cache
        return out;
      },
      gen, nullptr);
}

CharTransformer::CharTransformer(const CharTransformerConfig& config, Generator& gen) : config_(config) {
  const auto& a = config_.attention;
  if (config_.vocab < 1) fail("CharTransformer: vocab must be >= 1, got {}", config_.vocab);
  if (config_.layers < 1) fail("CharTransformer: layers must be >= 1, got {}", config_.layers);
  if (config_.ff_width < 1) fail("CharTransformer: ff_width must be >= 1, got {}", config_.ff_width);
  if (config_.cache_margin < 0) fail("CharTransformer: cache_margin must be >= 0, got {}", config_.cache_margin);
  if (a.heads < 1 || a.width % a.heads != 0)
    fail("CharTransformer: width {} must be a positive multiple of heads {}", a.width, a.heads);
  if (a.max_span < 1) fail("CharTransformer: max_span must be >= 1, got {}", a.max_span);
  if (a.trim_granularity < 1) fail("CharTransformer: trim_granularity must be >= 1, got {}", a.trim_granularity);
  if (!(a.dropout >= 0.0 && a.dropout < 1.0)) fail("CharTransformer: dropout must be in [0, 1), got {}", a.dropout);
  embedding_ = register_module("embedding", std::make_shared<Embedding>(config_.vocab, a.width, gen));
  std::shared_ptr<AttentionHook> key_pe;
  if (a.positional == "key_pe") {
    if (a.attend_self)
      fail("CharTransformer: key_pe covers distances 1..max_span; attend_self needs another positional scheme");
    if (!a.positional_options.empty()) fail("CharTransformer: key_pe takes no positional_options (its span is max_span)");
    key_pe_ = register_parameter("key_pe", normal({a.width / a.heads, a.max_span}, 0.0, 1.0, gen));
    key_pe = std::make_shared<KeyPositionEmbedding>(a.heads, key_pe_);
  }
  for (int64_t l = 0; l < config_.layers; ++l)
    layers_.push_back(register_module(fmt::format("layers.{}", l), std::make_shared<CharLayer>(config_, key_pe, gen)));
  if (config_.pre_norm) final_norm_ = register_module("final_norm", std::make_shared<LayerNorm>(a.width));
  out_ = register_module("out", std::make_shared<Linear>(a.width, config_.vocab, true, gen));
}

int64_t CharTransformer::cache_size(int64_t layer) const {
  const int64_t S = config_.attention.max_span;
  if (!config_.adaptive_cache) return S;
  return std::min(S, layers_.at(static_cast<size_t>(layer))->window() + config_.cache_margin);
}

Variable CharTransformer::forward(const Tensor& tokens, LayerCache& cache, Generator& gen) {
  if (tokens.dim() != 2 || tokens.dtype() != DType::Int64)
    fail("CharTransformer: tokens must be int64 [B, M], got {}", tokens.describe());
  const int64_t B = tokens.size(0), M = tokens.size(1);
  if (M < 1) fail("CharTransformer: a segment needs at least one token, got {}", tokens.describe());
  if (static_cast<int64_t>(cache.layers.size()) != num_layers() || cache.batch() != B) {
    cache.layers.assign(static_cast<size_t>(num_layers()), Tensor());
  }
  Variable x = embedding_->forward(tokens);  // [B, M, D]
  std::vector<Tensor> next(static_cast<size_t>(num_layers()));
  for (int64_t l = 0; l < num_layers(); ++l) {
    const Tensor& old = cache.layers[static_cast<size_t>(l)];
    const int64_t keep = cache_size(l);  // with the parameters of this forward (spec 2.3)
    Tensor input;
    x = layers_[static_cast<size_t>(l)]->forward(x, old, gen, input);
    // The next cache: the last `keep` rows of [old; input], detached (values only).
    const int64_t old_rows = old.defined() ? old.size(1) : 0, from_old = std::clamp<int64_t>(keep - M, 0, old_rows);
    const Tensor rows =
        from_old > 0 ? cat(std::vector<Tensor>{old.narrow(1, old_rows - from_old, from_old), input}, 1) : input;
    const int64_t kept = std::min(keep, rows.size(1));
    if (kept > 0) next[static_cast<size_t>(l)] = rows.narrow(1, rows.size(1) - kept, kept).contiguous();
  }
  cache.layers = std::move(next);
  if (final_norm_) x = final_norm_->forward(x);
  return out_->forward(x);
}

Variable CharTransformer::forward_incremental(const Tensor& tokens, DecodeCache& cache, Generator& gen) {
  if (tokens.dim() != 2 || tokens.dtype() != DType::Int64)
    fail("CharTransformer: tokens must be int64 [B, M], got {}", tokens.describe());
  if (tokens.size(1) < 1) fail("CharTransformer: a segment needs at least one token, got {}", tokens.describe());
  if (static_cast<int64_t>(cache.layers.size()) != num_layers() || (cache.batch() != 0 && cache.batch() != tokens.size(0)))
    cache.layers.assign(static_cast<size_t>(num_layers()), KeyValueCache{});
  Variable x = embedding_->forward(tokens);  // [B, M, D]
  for (int64_t l = 0; l < num_layers(); ++l)
    x = layers_[static_cast<size_t>(l)]->forward_incremental(x, cache.layers[static_cast<size_t>(l)], gen);
  if (final_norm_) x = final_norm_->forward(x);
  return out_->forward(x);
}

Variable CharTransformer::span_loss() const { return attention_regulariser(*this); }

void CharTransformer::clamp_spans() const { after_optimizer_step(*this); }

namespace {

// The logger's form of a span statistic z (mean or max): ceil(z) + R, at most S.
double logged_span(double z, const CharAttentionConfig& a) {
  return std::min(static_cast<double>(a.max_span), std::ceil(z) + a.span_ramp);
}

}  // namespace

double CharTransformer::average_span() const {
  double total = 0;
  for (const auto& layer : layers_) {
    const Tensor z = layer->dynamic_spans();  // [B, H, M]
    if (const AdaptiveSpan* span = layer->span()) total += span->average_span();
    else if (z.defined()) total += logged_span(mean(z).item(), config_.attention);
    else total += static_cast<double>(config_.attention.max_span);
  }
  return total / static_cast<double>(layers_.size());
}

double CharTransformer::largest_span() const {
  double best = 0;
  for (const auto& layer : layers_) {
    const Tensor z = layer->dynamic_spans();  // [B, H, M]
    if (const AdaptiveSpan* span = layer->span()) best = std::max(best, span->largest_span());
    else if (z.defined()) best = std::max(best, logged_span(amax(z).item(), config_.attention));
    else best = std::max(best, static_cast<double>(config_.attention.max_span));
  }
  return best;
}

std::vector<std::vector<double>> CharTransformer::head_spans() const {
  std::vector<std::vector<double>> out;
  for (const auto& layer : layers_) {
    if (const AdaptiveSpan* span = layer->span()) {
      out.push_back(span->current_spans());
    } else if (layer->dynamic_span()) {
      const Tensor z = layer->dynamic_spans();  // [B, H, M] -> per head, averaged over B and M
      out.push_back(z.defined() ? mean(z, {0, 2}).to_vector<double>()
                                : std::vector<double>(static_cast<size_t>(config_.attention.heads), 0.0));
    }
  }
  return out;
}

double CharTransformer::attention_flops_share(int64_t segment) const {
  const double S = static_cast<double>(config_.attention.max_span), M = static_cast<double>(segment);
  double computed = 0;
  for (const auto& layer : layers_) computed += static_cast<double>(layer->computed_pairs(segment));
  return computed / (static_cast<double>(layers_.size()) * M * (S + M));
}

double CharTransformer::flops_per_token() const {
  const double D = static_cast<double>(config_.attention.width), ff = static_cast<double>(config_.ff_width);
  return static_cast<double>(layers_.size()) * (4 * D * D + 2 * D * ff + 2 * D * average_span());
}

std::vector<std::pair<std::string, std::string>> CharTransformer::renamed_state() const {
  // The older layer kept its scheme's state under attn.<name> (its own transformer_xl: u, v,
  // w_kr.weight) or attn.positional.<name> (a registered scheme), and the span as attn.span.
  std::vector<std::pair<std::string, std::string>> names;
  for (int64_t l = 0; l < num_layers(); ++l) {
    const CharLayer& layer = *layers_[static_cast<size_t>(l)];
    int64_t index = 0;
    auto add = [&](const Module* hook, const std::string& old_prefix) {
      if (!hook) return;
      const std::string now = fmt::format("layers.{}.attn.hooks.{}.", l, index++);
      for (const auto& [name, value] : hook->named_parameters()) names.emplace_back(old_prefix + name, now + name);
      for (const auto& [name, value] : hook->named_buffers()) names.emplace_back(old_prefix + name, now + name);
    };
    const bool own_txl = config_.attention.positional == "transformer_xl";
    add(layer.positional(), fmt::format("layers.{}.attn.{}", l, own_txl ? "" : "positional."));
    add(layer.span(), fmt::format("layers.{}.attn.span.", l));
  }
  return names;
}

void CharTransformer::upgrade_state(StateDict& dict) const {
  std::map<std::string, std::string> renamed;
  for (const auto& [old_name, name] : renamed_state()) renamed[old_name] = name;
  std::set<std::string> given;
  for (auto& [name, tensor] : dict) {
    if (auto it = renamed.find(name); it != renamed.end()) name = it->second;
    given.insert(name);
  }
  // The older model's own rope saved no frequencies: a frozen rope's theta follows from its base.
  for (const auto& layer : layers_)
    if (const auto* rope = dynamic_cast<const Rope*>(layer->positional()); rope && !rope->trainable())
      for (const auto& [name, buffer] : named_buffers())
        if (!given.count(name) && buffer.impl() == rope->theta().impl()) dict.emplace_back(name, buffer.value());
}

}  // namespace posgrad
