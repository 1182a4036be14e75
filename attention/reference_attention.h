// reference_attention: the dense reference implementation of one attention call. It builds the
// [B, H, Nq, N] scores from the layer's AttentionTerms (attention_terms.h) with autograd
// primitives (matmul, index_select, masked_fill, softmax), so it runs on any device, can keep the
// probabilities for figures, and is the oracle the fused op (fused/fused_attention.h) is tested
// against, as a fused kernel is tested against its materialised mask:
//
//   content    = q k^T * scale + (key_bias . k)                              [B, H, Nq, N]
//   positional = (q . query_table)[.., rel(i, j)] + bias[.., rel(i, j)]     (tables gathered by offset)
//   logits     = modulation * (content + positional_modulation * positional) * dense_modulation
//   blocked    = outside the key box, after the query (spec.causal_by_index: tree positions), or a
//                padded key  -> -inf; softmax (a row with no key gives 0)
//   p          = p * prob_mask / (sum p * prob_mask + 1e-8)
//                (or per query row: p * row_prob_mask / (sum p * row_prob_mask + 1e-8 sum_support p))
//   p          = dropout(p)                     (training only, when asked: the fused op has none)
//   out        = p v                                                         [B, H, Nq, Dh]
//
// spec.positions places the Nq queries and the N keys: self-attention, a segment over a memory or
// cross-attention (positions.h).
//
// Deliberately not here: the projections and heads (multi_head_attention.h) and the choice of
// implementation (attention_path.h).
// Shapes: letters of shape_legend.h.
#pragma once

#include "attention/attention_terms.h"
#include "tensor/random.h"

namespace posgrad {

// Dropout on the attention probabilities (inverted: kept ones scaled by 1 / (1 - rate)).
struct ProbabilityDropout {
  double rate = 0.0;
  bool training = false;       // off outside training
  Generator* gen = nullptr;    // required when rate > 0 and training
};

// q [B, H, Nq, Dh], k, v [B, H, N, Dh] -> [B, H, Nq, Dh]. `probs_out`, when given, receives the
// probabilities [B, H, Nq, N] (before dropout).
Variable reference_attention(const Variable& q, const Variable& k, const Variable& v, const AttentionTerms& terms,
                             const AttentionSpec& spec, Tensor* probs_out = nullptr,
                             const ProbabilityDropout& dropout = {});

}  // namespace posgrad
