// FusedTerms: what one attention hook adds to the logits and probabilities of the fused path,
// described as small per-head tables over the relative grid instead of as [B, H, N, K] tensors.
// A hook returns it from AttentionHook::fused_terms(positions, dtype); the fused op
// (fused_attention.h) evaluates every term block by block. For head h, query i, key j and
// r = rel(i, j) (the relative-grid entry of key - query, Positions::relative_index):
//
//   content(i, j)    = q_i . k_j / sqrt(Dh)  +  key_bias[h] . k_j
//   positional(i, j) = q_i . query_table[h, r]  +  bias[h, r]
//   logit(i, j)      = modulation[h, r] * (content + positional_modulation[h, r] * positional)
//   p                = softmax over the keys in the key range (key_range(), causal, padding)
//   p                = p * prob_mask[h, r] / (sum_j p * prob_mask[h, r] + 1e-8)
//
// Every member is optional (undefined = the term is absent, a modulation or mask of 1). Tables
// are [H, R] (or [R], shared by the heads), query_table [H, R, Dh], key_bias [H, Dh]; they are
// ordinary Variables, so their gradients reach the hook's parameters (SIREN weights, sigma, c)
// through the ops that built them. The key range is not here: it is key_range(), which every
// path already uses.
//
// A hook that cannot be written in this form returns FusedTerms::unsupported(reason); the
// fused path then refuses with an error naming the hook and the reason (the reference path is
// always available). Terms of several hooks combine as the reference pipeline does: additive
// terms add, modulations multiply, and at most one hook may have a prob_mask (two sequential
// renormalisations are not one table).
//
// Deliberately not here: the kernels (fused_kernels.h) and the combination of the hooks of one
// layer (fused_attention.h).
// Shapes: letters of shape_legend.h.
#pragma once

#include <string>

#include "autograd/variable.h"

namespace posgrad {

struct FusedTerms {
  Variable key_bias;               // [H, Dh]
  Variable query_table;            // [H, R, Dh]
  Variable bias;                   // [H, R] | [R]
  Variable modulation;             // [H, R] | [R]: multiplies all logits
  Variable positional_modulation;  // [H, R] | [R]: multiplies only the positional logits
  Variable prob_mask;              // [H, R] | [R]: post-softmax mask with renormalisation

  bool supported = true;
  std::string unsupported_reason;  // what the hook lacks, for the fused path's error

  static FusedTerms unsupported(std::string reason) {
    FusedTerms t;
    t.supported = false;
    t.unsupported_reason = std::move(reason);
    return t;
  }
  bool empty() const {
    return !key_bias.defined() && !query_table.defined() && !bias.defined() && !modulation.defined() &&
           !positional_modulation.defined() && !prob_mask.defined();
  }
};

}  // namespace posgrad
