// Batching TransductionExamples for an encoder-decoder: padding, padding masks for both sides,
// the teacher-forcing shift, and the decoder's causal mask (APE spec sections 3.3, 3.5, 7.3).
//
// For B examples with N_b source and L_b target tokens, N = max N_b and T = max L_b - 1:
//
//   source          int64   [B, N]     the source tokens, padded with kInputPadding (0)
//   source_mask     float32 [B, N]     1 for a token, 0 for padding (keys a query may attend)
//   decoder_input   int64   [B, T]     target[0 .. L_b - 1] cut to T (the released target[:, :-1]:
//                                      a shorter example's last token is fed too, unscored),
//                                      padded with kInputPadding
//   decoder_target  int64   [B, T]     target[1 .. L_b - 1], padded with kIgnoreTarget (-1)
//   target_mask     float32 [B, T]     1 where decoder_target is a token (the scored positions,
//                                      t < L_b - 1)
//   input_mask      float32 [B, T]     1 where decoder_input is a token (t < L_b): the released
//                                      code's test-perplexity mask, one longer than target_mask
//                                      for every example shorter than the longest (spec 10.13)
//   decoder_mask    float32 [B, T, T]  1 where decoder query i may attend key j: for real i and j,
//                                      order[j] <= order[i] (target_order, or the index order for
//                                      sequence tasks: j <= i), where "real" means a scored step
//                                      (t < L_b - 1); any other query row attends j <= i, so no
//                                      row is empty (its outputs are never scored)
//   source_heap     int64   [B, N]     tree tasks: heap positions, 0 for SOS and padding
//   decoder_heap    int64   [B, T]     tree tasks: heap positions of decoder_input, 0 for padding
//                                      (undefined for sequence tasks, as is source_heap)
//
// Padded inputs hold token 0 so an embedding lookup needs no clamping; the masks say what is
// real. An example whose target has fewer than 2 tokens (no decoder step), a batch that mixes
// sequence and tree examples, or heap and order lists whose lengths differ from the tokens', is an
// Error naming the example.
// This file deliberately does no shuffling (any order of indices can be batched) and no bucketing.
// Shapes: letters of shape_legend.h (N source tokens, T decoder steps).
#pragma once

#include <cstdint>
#include <vector>

#include "datasets/transduction/transduction_example.h"
#include "tensor/tensor.h"

namespace posgrad {

inline constexpr int64_t kInputPadding = 0;
inline constexpr int64_t kIgnoreTarget = -1;

struct TransductionBatch {
  Tensor source, source_mask;                       // [B, N]
  Tensor decoder_input, decoder_target;             // [B, T]
  Tensor target_mask, input_mask;                   // [B, T]
  Tensor decoder_mask;                              // [B, T, T]
  Tensor source_heap, decoder_heap;                 // [B, N], [B, T]; tree tasks only
  int64_t size() const { return source.size(0); }   // B
  TransductionBatch to(Device device) const;        // every tensor copied to `device`
  Tensor source_padding() const;                    // [B, N] on source_mask's device: 1 where it is 0
};

// The batch of examples[indices[0]], examples[indices[1]], ... in that order.
TransductionBatch make_transduction_batch(const std::vector<TransductionExample>& examples,
                                          const std::vector<int64_t>& indices);

// The causal mask a traversal order defines: [L, L], 1 where order[j] <= order[i].
Tensor causal_mask_from_order(const std::vector<int64_t>& order);

}  // namespace posgrad
