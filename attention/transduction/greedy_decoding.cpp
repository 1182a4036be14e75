// Greedy decoding (see greedy_decoding.h).
#include "attention/transduction/greedy_decoding.h"

#include <deque>

#include "datasets/transduction/transduction_batch.h"

namespace posgrad {

namespace {

// The argmax over the vocabulary of the last decoded position: [B, t, D] -> int64 [B, 1].
Tensor next_tokens(EncoderDecoder& model, const Variable& states) {
  const Variable last = narrow(states, 1, states.size(1) - 1, 1);  // [B, 1, D]
  return argmax(model.logits(last).value(), 2);                     // [B, 1]
}

}  // namespace

Tensor greedy_decode(EncoderDecoder& model, const Tensor& source, const Tensor& source_padding, const Tensor& first,
                     const GreedyDecoding& options) {
  if (model.config().tree_positions)
    fail("greedy_decode: the model reads tree positions; greedy decoding runs on sequence positions only");
  if (source.dim() != 2 || first.dim() != 1 || first.size(0) != source.size(0) || first.dtype() != kInt64)
    fail("greedy_decode: source must be [B, N] and first int64 [B], got {} and {}", source.describe(), first.describe());
  if (options.steps < 0) fail("greedy_decode: steps must be >= 0, got {}", options.steps);
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const Variable memory = model.encode(source, source_padding);
  std::vector<Tensor> columns{first.reshape({first.size(0), 1})};  // each [B, 1]
  std::vector<KeyValueCache> caches(static_cast<size_t>(model.config().decoder_layers));
  for (int64_t t = 0; t < options.steps; ++t) {
    const Variable states = options.use_cache ? model.decode(columns.back(), memory, source_padding, nullptr, nullptr, &caches)
                                              : model.decode(cat(columns, 1), memory, source_padding);
    columns.push_back(next_tokens(model, states));
  }
  model.train(was_training);
  return cat(columns, 1);
}

}  // namespace posgrad

namespace posgrad {

std::vector<DecodedTree> greedy_decode_tree(EncoderDecoder& model, const Tensor& source, const Tensor& source_padding,
                                            const Tensor& source_heap, const TreeGreedyDecoding& options) {
  if (!model.config().tree_positions) fail("greedy_decode_tree: the model reads sequence positions, not heap positions");
  if (!options.is_operator) fail("greedy_decode_tree: no is_operator given");
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const int64_t B = source.size(0);
  const Positions source_at = Positions::tree(source_heap, model.config().branching);
  const Variable memory = model.encode(source, source_padding, &source_at);
  std::vector<DecodedTree> out(static_cast<size_t>(B), DecodedTree{{kSosToken}, {0}});
  std::vector<std::deque<int64_t>> pending(static_cast<size_t>(B), std::deque<int64_t>{1});  // the root comes first
  for (int64_t step = 0; step < options.max_nodes; ++step) {
    bool any = false;
    for (const auto& p : pending) any = any || !p.empty();
    if (!any) break;
    // Every row decodes its prefix; a finished row is padded with token 0 at heap 0 (after its
    // own tokens, so the causal mask keeps them out of its real steps).
    const size_t t = out[0].labels.size();
    std::vector<int64_t> tokens(static_cast<size_t>(B) * t), heaps(static_cast<size_t>(B) * t);
    for (size_t b = 0; b < out.size(); ++b)
      for (size_t i = 0; i < t; ++i) {
        tokens[b * t + i] = out[b].labels[i];
        heaps[b * t + i] = out[b].heap[i];
      }
    const Tensor heap_tensor = Tensor::from_vector<int64_t>(heaps, {B, static_cast<int64_t>(t)});
    const Positions at = Positions::tree(heap_tensor, model.config().branching);
    const Tensor prefix = Tensor::from_vector<int64_t>(tokens, {B, static_cast<int64_t>(t)}).to(source.device());
    const Variable states = model.decode(prefix, memory,
                                         source_padding, &at, &source_at);
    const auto next = argmax(model.logits(narrow(states, 1, static_cast<int64_t>(t) - 1, 1)).value(), 2).to_vector<int64_t>();
    for (size_t b = 0; b < out.size(); ++b) {
      auto& queue = pending[b];
      if (queue.empty()) {  // done: padding
        out[b].labels.push_back(kInputPadding);
        out[b].heap.push_back(0);
        continue;
      }
      const int64_t heap = options.depth_first ? queue.back() : queue.front();
      if (options.depth_first) queue.pop_back(); else queue.pop_front();
      out[b].labels.push_back(next[b]);
      out[b].heap.push_back(heap);
      if (options.is_operator(next[b])) {
        if (static_cast<int64_t>(Positions::tree_word(2 * heap + 1, 2).size()) > options.max_depth) {
          queue.clear();  // the next level is beyond the encoding: stop this row
        } else if (options.depth_first) {
          queue.push_back(2 * heap + 1);
          queue.push_back(2 * heap);
        } else {
          queue.push_back(2 * heap);
          queue.push_back(2 * heap + 1);
        }
      }
    }
  }
  model.train(was_training);
  for (auto& tree : out) {  // drop the padding of rows that finished early
    while (tree.labels.size() > 1 && tree.heap.back() == 0) {
      tree.labels.pop_back();
      tree.heap.pop_back();
    }
  }
  return out;
}

}  // namespace posgrad
