// The transduction tasks' test metrics (APE spec sections 7.1 and 10.13), as plain functions over
// a batch's logits, targets and masks; per-batch results add up over a test set.
//
//   perplexity          exp(mean token cross-entropy over the scored targets), the paper's metric:
//                       TokenLoss over target_mask, summed over batches, then .perplexity()
//   released perplexity the released code's evaluate(): every position where the decoder *input*
//                       is a token counts (input_mask), scoring 0 where the target is padding, so
//                       each example shorter than its batch's longest adds one zero loss to the
//                       mean; slightly low, by a few percent at perplexity 20..65
//   exact match         the fraction of examples whose greedy prediction (argmax over the
//                       vocabulary, the first index on ties) equals the target at every scored
//                       position (teacher-forced, not a free-running decode)
//
// logits [B, T, V] (any float dtype, any device; read as double on the CPU), targets int64 [B, T],
// masks [B, T] (non-zero = true, any dtype). Cross-entropy is computed in double with a stable
// log-sum-exp. Shape mismatches, a target outside 0..V-1 at a scored position, and a batch row with
// no scored position (exact match) are Errors naming them.
// This file deliberately computes no gradients (the training loss is nn/losses.h's cross_entropy).
// Shapes: letters of shape_legend.h (T decoder steps, V vocabulary).
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace posgrad {

struct TokenLoss {
  double loss_sum = 0.0;  // summed cross-entropy (nats)
  int64_t tokens = 0;     // positions counted
  void add(const TokenLoss& other) {
    loss_sum += other.loss_sum;
    tokens += other.tokens;
  }
  double mean() const;        // Error when no token was counted
  double perplexity() const;  // exp(mean())
};

// The paper's: cross-entropy at every position where target_mask is set.
TokenLoss token_cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& target_mask);

// The released code's (spec 10.13): positions where input_mask is set count; their loss is the
// cross-entropy where target_mask is also set, else 0.
TokenLoss released_token_cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& target_mask,
                                       const Tensor& input_mask);

struct ExactMatch {
  int64_t matched = 0, examples = 0;
  void add(const ExactMatch& other) {
    matched += other.matched;
    examples += other.examples;
  }
  double accuracy() const;  // matched / examples; Error when no example was counted
};

ExactMatch exact_match(const Tensor& logits, const Tensor& targets, const Tensor& target_mask);

}  // namespace posgrad
