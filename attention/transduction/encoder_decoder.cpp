// EncoderDecoder (see encoder_decoder.h).
#include "attention/transduction/encoder_decoder.h"

#include <cmath>
#include <optional>

#include "autograd/functions.h"
#include "nn/linear.h"

namespace posgrad {

EncoderDecoder::EncoderDecoder(const EncoderDecoderConfig& config, Generator& gen) : config_(config) {
  if (config.vocab < 1 || config.width < 1 || config.heads < 1 || config.width % config.heads != 0)
    fail("EncoderDecoder: vocab {} and width {} must be >= 1 and the width divisible by the heads {}", config.vocab,
         config.width, config.heads);
  embedding_ = register_module("embedding", std::make_shared<Embedding>(config.vocab, config.width, gen));
  embedding_->set_scale_grad_by_freq(config.scale_grad_by_freq);
  const HookContext context{.width = config.width, .heads = config.heads, .structure = {config.max_positions}};
  positional_ = register_module("positional", make_hook(config.positional, context, gen));
  absolute_ = dynamic_cast<AbsoluteEncoding*>(positional_.get());
  if (config.ape_maps_once) {
    if (auto ape = std::dynamic_pointer_cast<ApeSequence>(positional_)) ape_maps_ = std::make_shared<ApeMapsOncePerForward>(ape);
    if (auto ape = std::dynamic_pointer_cast<ApeTree>(positional_)) ape_maps_ = std::make_shared<ApeMapsOncePerForward>(ape);
  }
  std::vector<std::shared_ptr<AttentionHook>> shared;
  if (ape_maps_) {
    shared.push_back(ape_maps_);
  } else if (!absolute_) {
    shared.push_back(positional_);
  }
  input_dropout_ = register_module("input_dropout", std::make_shared<Dropout>(config.dropout, gen.next_seed()));
  const TransformerBlockConfig block{.width = config.width, .heads = config.heads, .ff_width = config.ff_width,
                                     .dropout = config.dropout, .pre_norm = config.pre_norm,
                                     .activation = config.activation, .path = config.path};
  for (int64_t l = 0; l < config.encoder_layers; ++l) {
    encoder_.push_back(register_module(fmt::format("encoder.layers.{}", l),
                                       std::make_shared<TransformerEncoderBlock>(block, gen,
                                                                                 std::vector<std::shared_ptr<AttentionHook>>{},
                                                                                 shared)));
    if (config.attention_dropout > 0) encoder_.back()->attention().set_attention_dropout(config.attention_dropout, gen.next_seed());
  }
  for (int64_t l = 0; l < config.decoder_layers; ++l) {
    decoder_.push_back(register_module(fmt::format("decoder.layers.{}", l),
                                       std::make_shared<TransformerDecoderBlock>(block, gen, shared)));
    if (config.attention_dropout > 0) {
      decoder_.back()->self_attention().set_attention_dropout(config.attention_dropout, gen.next_seed());
      decoder_.back()->cross_attention().set_attention_dropout(config.attention_dropout, gen.next_seed());
    }
  }
  if (config.pre_norm) {
    encoder_final_norm_ = register_module("encoder.final_norm", std::make_shared<LayerNorm>(config.width));
    decoder_final_norm_ = register_module("decoder.final_norm", std::make_shared<LayerNorm>(config.width));
  }
}

Variable EncoderDecoder::embed(const Tensor& ids, const Positions& positions) {
  Variable x = embedding_->forward(ids) * std::sqrt(static_cast<double>(config_.width));
  if (absolute_ && !positions.is_tree() && positions.first() > 0) {
    // A later stretch of a sequence (cached decoding): the absolute schemes number their tokens
    // from 0, so take the rows first..first+n-1 of the encoding of 0..first+n-1.
    const int64_t n = ids.size(1), first = positions.first();
    const Variable zeros(Tensor::zeros({1, first + n, config_.width}, x.dtype(), x.value().device()));
    x = x + narrow(absolute_->embed(zeros, Positions::sequence(first + n)), 1, first, n);
  } else if (absolute_) {
    x = absolute_->embed(x, positions);
  }
  return input_dropout_->forward(x);
}

Variable EncoderDecoder::encode(const Tensor& source, const Tensor& padding, const Positions* positions) {
  const Positions sequence = Positions::sequence(source.size(1));
  const Positions& at = positions ? *positions : sequence;
  std::optional<ApeMapsOncePerForward::MapsScope> maps;
  if (ape_maps_) maps.emplace(*ape_maps_, std::vector<Positions>{at});
  Variable x = embed(source, at);
  const AttentionMasks masks{.key_padding = padding};
  for (auto& layer : encoder_) x = layer->forward(x, masks, &at);
  return encoder_final_norm_ ? encoder_final_norm_->forward(x) : x;
}

Variable EncoderDecoder::decode(const Tensor& tokens, const Variable& memory, const Tensor& memory_padding,
                                const Positions* positions, const Positions* memory_positions,
                                std::vector<KeyValueCache>* caches) {
  if (caches && static_cast<int64_t>(caches->size()) != config_.decoder_layers)
    fail("EncoderDecoder::decode: {} caches for {} decoder layers", caches->size(), config_.decoder_layers);
  if (caches && positions) fail("EncoderDecoder::decode: a cache decodes a sequence (no positions of its own)");
  const int64_t first = caches && !caches->empty() ? caches->front().tokens() : 0;
  const Positions sequence = Positions::sequence(tokens.size(1), first);
  const Positions& at = positions ? *positions : sequence;
  const Positions memory_sequence = Positions::sequence(memory.size(1));
  const PositionPair self_pair(at);
  const PositionPair cross_pair(at, memory_positions ? *memory_positions : memory_sequence);
  std::optional<ApeMapsOncePerForward::MapsScope> maps;
  if (ape_maps_) maps.emplace(*ape_maps_, std::vector<Positions>{at, cross_pair.keys()});
  Variable y = embed(tokens, at);
  for (size_t l = 0; l < decoder_.size(); ++l) {
    const DecoderStep step{.self_positions = caches ? nullptr : &self_pair, .cross_positions = &cross_pair,
                           .memory_padding = memory_padding, .cache = caches ? &(*caches)[l] : nullptr};
    y = decoder_[l]->forward(y, memory, step);
  }
  return decoder_final_norm_ ? decoder_final_norm_->forward(y) : y;
}

Variable EncoderDecoder::logits(const Variable& states) const { return linear(states, embedding_->weight(), Variable()); }

Positions EncoderDecoder::source_positions(const TransductionBatch& batch) const {
  if (!config_.tree_positions) return Positions::sequence(batch.source.size(1));
  if (!batch.source_heap.defined()) fail("EncoderDecoder: tree positions need a tree task's batch (no source_heap)");
  return Positions::tree(batch.source_heap, config_.branching);
}

Positions EncoderDecoder::decoder_positions(const TransductionBatch& batch) const {
  if (!config_.tree_positions) return Positions::sequence(batch.decoder_input.size(1));
  if (!batch.decoder_heap.defined()) fail("EncoderDecoder: tree positions need a tree task's batch (no decoder_heap)");
  return Positions::tree(batch.decoder_heap, config_.branching);
}

Variable EncoderDecoder::forward(const TransductionBatch& batch) {
  const Positions source_at = source_positions(batch), decoder_at = decoder_positions(batch);
  const Tensor padding = batch.source_padding();
  std::optional<ApeMapsOncePerForward::MapsScope> maps;  // one computation for the encoder and the decoder
  if (ape_maps_) maps.emplace(*ape_maps_, std::vector<Positions>{source_at, decoder_at});
  const Variable memory = encode(batch.source, padding, &source_at);
  return logits(decode(batch.decoder_input, memory, padding, &decoder_at, &source_at));
}

}  // namespace posgrad
