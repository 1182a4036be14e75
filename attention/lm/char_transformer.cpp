// CharTransformer (see char_transformer.h).
// Shapes: letters of shape_legend.h; V the vocabulary, S the maximum span.
#include "attention/lm/char_transformer.h"

#include <algorithm>
#include <cmath>

#include "attention/attention_hook.h"
#include "nn/dropout.h"

namespace posgrad {

CharLayer::CharLayer(const CharTransformerConfig& config, Generator& gen)
    : pre_norm_(config.pre_norm), dropout_(config.attention.dropout) {
  const int64_t D = config.attention.width;
  attn_ = register_module("attn", std::make_shared<SegmentAttention>(config.attention, gen));
  norm1_ = register_module("norm1", std::make_shared<LayerNorm>(D));
  fc1_ = register_module("fc1", std::make_shared<Linear>(D, config.ff_width, true, gen));
  fc2_ = register_module("fc2", std::make_shared<Linear>(config.ff_width, D, true, gen));
  norm2_ = register_module("norm2", std::make_shared<LayerNorm>(D));
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

Variable CharLayer::forward(const Variable& x, const Tensor& cache, const Variable& key_pe, Generator& gen,
                            Tensor& attention_input) {
  return run(x, [&](const Variable& a) { return attn_->forward(a, cache, key_pe, gen); }, gen, &attention_input);
}

Variable CharLayer::forward_incremental(const Variable& x, SegmentAttention::KeyValueCache& kv, const Variable& key_pe,
                                        Generator& gen) {
  return run(x, [&](const Variable& a) { return attn_->forward_incremental(a, kv, key_pe, gen); }, gen, nullptr);
}

CharTransformer::CharTransformer(const CharTransformerConfig& config, Generator& gen) : config_(config) {
  const auto& a = config_.attention;
  if (config_.vocab < 1) fail("CharTransformer: vocab must be >= 1, got {}", config_.vocab);
  if (config_.layers < 1) fail("CharTransformer: layers must be >= 1, got {}", config_.layers);
  if (config_.ff_width < 1) fail("CharTransformer: ff_width must be >= 1, got {}", config_.ff_width);
  if (config_.cache_margin < 0) fail("CharTransformer: cache_margin must be >= 0, got {}", config_.cache_margin);
  embedding_ = register_module("embedding", std::make_shared<Embedding>(config_.vocab, a.width, gen));
  if (a.position == SegmentPosition::KeyPE) {
    if (a.heads < 1 || a.width % a.heads != 0)
      fail("CharTransformer: width {} must be a positive multiple of heads {}", a.width, a.heads);
    key_pe_ = register_parameter("key_pe", normal({a.width / a.heads, a.max_span}, 0.0, 1.0, gen));
  }
  for (int64_t l = 0; l < config_.layers; ++l)
    layers_.push_back(register_module(fmt::format("layers.{}", l), std::make_shared<CharLayer>(config_, gen)));
  if (config_.pre_norm) final_norm_ = register_module("final_norm", std::make_shared<LayerNorm>(a.width));
  out_ = register_module("out", std::make_shared<Linear>(a.width, config_.vocab, true, gen));
}

int64_t CharTransformer::cache_size(int64_t layer) const {
  const int64_t S = config_.attention.max_span;
  if (!config_.adaptive_cache) return S;
  return std::min(S, layers_.at(static_cast<size_t>(layer))->attention().window() + config_.cache_margin);
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
    x = layers_[static_cast<size_t>(l)]->forward(x, old, key_pe_, gen, input);
    // The next cache: the last `keep` rows of [old; input], detached (values only).
    const int64_t old_rows = old.defined() ? old.size(1) : 0;
    if (keep == 0) {
      next[static_cast<size_t>(l)] = Tensor();
    } else if (M >= keep) {
      next[static_cast<size_t>(l)] = input.narrow(1, M - keep, keep).contiguous();
    } else {
      const int64_t from_old = std::min(old_rows, keep - M);
      next[static_cast<size_t>(l)] =
          from_old > 0 ? cat(std::vector<Tensor>{old.narrow(1, old_rows - from_old, from_old), input}, 1) : input.contiguous();
    }
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
    cache.layers.assign(static_cast<size_t>(num_layers()), SegmentAttention::KeyValueCache{});
  Variable x = embedding_->forward(tokens);  // [B, M, D]
  for (int64_t l = 0; l < num_layers(); ++l)
    x = layers_[static_cast<size_t>(l)]->forward_incremental(x, cache.layers[static_cast<size_t>(l)], key_pe_, gen);
  if (final_norm_) x = final_norm_->forward(x);
  return out_->forward(x);
}

Variable CharTransformer::span_loss() const { return attention_regulariser(*this); }

void CharTransformer::clamp_spans() const { after_optimizer_step(*this); }

double CharTransformer::average_span() const {
  double total = 0;
  for (const auto& layer : layers_) {
    const AdaptiveSpan* span = layer->attention().span();
    total += span ? span->average_span() : static_cast<double>(config_.attention.max_span);
  }
  return total / static_cast<double>(layers_.size());
}

double CharTransformer::largest_span() const {
  double best = 0;
  for (const auto& layer : layers_) {
    const AdaptiveSpan* span = layer->attention().span();
    best = std::max(best, span ? span->largest_span() : static_cast<double>(config_.attention.max_span));
  }
  return best;
}

std::vector<std::vector<double>> CharTransformer::head_spans() const {
  std::vector<std::vector<double>> out;
  for (const auto& layer : layers_)
    if (const AdaptiveSpan* span = layer->attention().span()) out.push_back(span->current_spans());
  return out;
}

double CharTransformer::attention_flops_share(int64_t segment) const {
  const double S = static_cast<double>(config_.attention.max_span), M = static_cast<double>(segment);
  double computed = 0;
  for (const auto& layer : layers_) computed += static_cast<double>(layer->attention().computed_pairs(segment));
  return computed / (static_cast<double>(layers_.size()) * M * (S + M));
}

}  // namespace posgrad
