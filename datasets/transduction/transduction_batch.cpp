// Batching transduction examples (see transduction_batch.h).
#include "datasets/transduction/transduction_batch.h"

#include <algorithm>

#include "tensor/error.h"
#include "tensor/ops.h"

namespace posgrad {

namespace {

void check_example(const TransductionExample& example, int64_t index, bool trees) {
  const bool has_trees = !example.source_heap.empty();
  if (has_trees != trees)
    fail("transduction batch: example {} is a {} example in a batch of {} examples", index,
         has_trees ? "tree" : "sequence", trees ? "tree" : "sequence");
  if (example.source.empty()) fail("transduction batch: example {} has an empty source", index);
  if (example.target.size() < 2)
    fail("transduction batch: example {} has a target of {} token(s); teacher forcing needs at least 2", index,
         example.target.size());
  if (trees && (example.source_heap.size() != example.source.size() ||
                example.target_heap.size() != example.target.size() ||
                example.target_order.size() != example.target.size()))
    fail("transduction batch: example {} has heap or order lists whose lengths differ from its tokens'", index);
  if (!trees && !example.target_order.empty() && example.target_order.size() != example.target.size())
    fail("transduction batch: example {} has {} order numbers for {} target tokens", index,
         example.target_order.size(), example.target.size());
}

}  // namespace

Tensor causal_mask_from_order(const std::vector<int64_t>& order) {
  const auto length = static_cast<int64_t>(order.size());
  std::vector<float> mask(static_cast<size_t>(length * length));
  for (int64_t i = 0; i < length; ++i)
    for (int64_t j = 0; j < length; ++j)
      mask[static_cast<size_t>(i * length + j)] = order[static_cast<size_t>(j)] <= order[static_cast<size_t>(i)];
  return Tensor::from_vector(mask, {length, length});
}

TransductionBatch TransductionBatch::to(Device device) const {
  TransductionBatch b = *this;
  for (Tensor* t : {&b.source, &b.source_mask, &b.decoder_input, &b.decoder_target, &b.target_mask, &b.input_mask,
                    &b.decoder_mask, &b.source_heap, &b.decoder_heap})
    if (t->defined()) *t = t->to(device);
  return b;
}

Tensor TransductionBatch::source_padding() const {
  return eq(source_mask, Tensor::zeros({}, source_mask.dtype(), source_mask.device()));
}

TransductionBatch make_transduction_batch(const std::vector<TransductionExample>& examples,
                                          const std::vector<int64_t>& indices) {
  if (indices.empty()) fail("transduction batch: no examples selected");
  for (int64_t i : indices)
    if (i < 0 || i >= static_cast<int64_t>(examples.size()))
      fail("transduction batch: index {} is outside 0..{}", i, static_cast<int64_t>(examples.size()) - 1);
  const bool trees = !examples[static_cast<size_t>(indices[0])].source_heap.empty();
  int64_t N = 0, T = 0;
  for (int64_t i : indices) {
    const TransductionExample& example = examples[static_cast<size_t>(i)];
    check_example(example, i, trees);
    N = std::max<int64_t>(N, static_cast<int64_t>(example.source.size()));
    T = std::max<int64_t>(T, static_cast<int64_t>(example.target.size()) - 1);
  }
  const auto B = static_cast<int64_t>(indices.size());
  std::vector<int64_t> source(static_cast<size_t>(B * N), kInputPadding), source_heap(static_cast<size_t>(B * N), 0);
  std::vector<float> source_mask(static_cast<size_t>(B * N), 0.0f);
  std::vector<int64_t> decoder_input(static_cast<size_t>(B * T), kInputPadding), decoder_heap(static_cast<size_t>(B * T), 0);
  std::vector<int64_t> decoder_target(static_cast<size_t>(B * T), kIgnoreTarget);
  std::vector<float> target_mask(static_cast<size_t>(B * T), 0.0f), input_mask(static_cast<size_t>(B * T), 0.0f);
  std::vector<float> decoder_mask(static_cast<size_t>(B * T * T), 0.0f);
  for (int64_t b = 0; b < B; ++b) {
    const TransductionExample& example = examples[static_cast<size_t>(indices[static_cast<size_t>(b)])];
    const auto n = static_cast<int64_t>(example.source.size()), steps = static_cast<int64_t>(example.target.size()) - 1;
    for (int64_t t = 0; t < n; ++t) {
      source[static_cast<size_t>(b * N + t)] = example.source[static_cast<size_t>(t)];
      source_mask[static_cast<size_t>(b * N + t)] = 1.0f;
      if (trees) source_heap[static_cast<size_t>(b * N + t)] = example.source_heap[static_cast<size_t>(t)];
    }
    for (int64_t t = 0; t < std::min(steps + 1, T); ++t) {  // inputs: every target token that fits
      decoder_input[static_cast<size_t>(b * T + t)] = example.target[static_cast<size_t>(t)];
      input_mask[static_cast<size_t>(b * T + t)] = 1.0f;
      if (trees) decoder_heap[static_cast<size_t>(b * T + t)] = example.target_heap[static_cast<size_t>(t)];
    }
    for (int64_t t = 0; t < steps; ++t) {  // targets: the next token of each step
      decoder_target[static_cast<size_t>(b * T + t)] = example.target[static_cast<size_t>(t + 1)];
      target_mask[static_cast<size_t>(b * T + t)] = 1.0f;
    }
    const auto order = [&](int64_t t) { return example.target_order.empty() ? t : example.target_order[static_cast<size_t>(t)]; };
    float* mask = decoder_mask.data() + b * T * T;
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j <= (i < steps ? steps - 1 : i); ++j)
        mask[i * T + j] = i < steps ? static_cast<float>(order(j) <= order(i)) : 1.0f;
  }
  TransductionBatch batch;
  batch.source = Tensor::from_vector(source, {B, N});
  batch.source_mask = Tensor::from_vector(source_mask, {B, N});
  batch.decoder_input = Tensor::from_vector(decoder_input, {B, T});
  batch.decoder_target = Tensor::from_vector(decoder_target, {B, T});
  batch.target_mask = Tensor::from_vector(target_mask, {B, T});
  batch.input_mask = Tensor::from_vector(input_mask, {B, T});
  batch.decoder_mask = Tensor::from_vector(decoder_mask, {B, T, T});
  if (trees) {
    batch.source_heap = Tensor::from_vector(source_heap, {B, N});
    batch.decoder_heap = Tensor::from_vector(decoder_heap, {B, T});
  }
  return batch;
}

}  // namespace posgrad
