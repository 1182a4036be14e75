// AttentionTerms: everything a layer's hooks add to one attention call, described once, as small
// per-head tables over the relative grid instead of as [B, H, Nq, N] tensors. Both
// implementations read the same tables: the reference (reference_attention.h) gathers them onto
// the dense scores with autograd primitives, the fused op (fused/fused_attention.h) evaluates
// them block by block. For head h, query i, key j and r = rel(i, j) (the relative-grid entry of
// key - query, Positions::relative_index):
//
//   content(i, j)    = q_i . k_j / sqrt(Dh)  +  key_bias[h] . k_j
//   positional(i, j) = q_i . query_table[h, r]  +  bias[h, r]
//   logit(i, j)      = modulation[h, r] * (content + positional_modulation[h, r] * positional)
//   p                = softmax over the keys in the key box (key_range(), causal) and not padded
//   p                = p * prob_mask[h, r] / (sum_j p * prob_mask[h, r] + 1e-8)
//
// Every member is optional (undefined = the term is absent, a modulation or mask of 1). Tables
// are [H, R] (or [R], shared by the heads), query_table [H, R, Dh], key_bias [H, Dh]; they are
// ordinary Variables, so their gradients reach the hook's parameters (SIREN weights, sigma, c)
// through the ops that built them. Terms of several hooks combine in the order of the formula:
// additive terms add, modulations multiply, and at most one hook may mask probabilities (two
// renormalisations in a row are not one table).
//
// The one escape hatch: `dense_modulation`, a factor on all logits that is not a table over the
// relative grid (the ape_tree decay: per example, from heap positions). Only the reference can
// apply it; fused_blocker() names it, so the fused path refuses such a layer (Auto takes the
// reference).
//
// Deliberately not here: the hooks' formulas (schemes/, spans/) and the two implementations.
// Shapes: letters of shape_legend.h.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention/offset_box.h"
#include "attention/positions.h"
#include "autograd/functions.h"

namespace posgrad {

class AttentionHook;

struct AttentionTerms {
  Variable key_bias;               // [H, Dh]
  Variable query_table;            // [H, R, Dh]
  Variable bias;                   // [H, R] | [R]
  Variable modulation;             // [H, R] | [R]: multiplies all logits
  Variable positional_modulation;  // [H, R] | [R]: multiplies only the positional logits
  Variable prob_mask;              // [H, R] | [R]: post-softmax mask with renormalisation
  // The escape hatch (reference only): multiplies all logits, broadcastable to [B, H, Nq, N].
  Tensor dense_modulation;
  std::string dense_modulation_owner;  // the hook that set it, for the fused path's error
  std::string prob_mask_owner;         // the hook that set prob_mask, for merge_terms' error

  bool empty() const;
  // Whether any member is a table over the relative grid (these need grid or sequence positions).
  bool uses_relative_tables() const;
  // Why the fused op cannot take these terms ("" when it can).
  std::string fused_blocker() const;
};

// What one attention call needs besides q, k, v and the terms; none of it is differentiable.
struct AttentionSpec {
  PositionPair positions{Positions()};  // of the Nq queries and the N keys
  std::optional<OffsetBox> box;  // key range (offsets key - query); none = every key
  Tensor key_padding;            // [B, N], non-zero = padded key; undefined = none
  double scale = 1.0;            // of q . k (1 / sqrt(Dh))
};

// Adds `part` (the terms of `owner`) to `all` as above; an Error naming both owners when both mask
// probabilities.
void merge_terms(AttentionTerms& all, const AttentionTerms& part, const std::string& owner);

// Every hook's terms for `positions` in `dtype`, merged as above.
AttentionTerms combine_attention_terms(const std::vector<std::shared_ptr<AttentionHook>>& hooks,
                                       const PositionPair& positions, DType dtype);

// The same terms with every table detached (values only, no autograd history kept alive).
AttentionTerms detached(const AttentionTerms& terms);

}  // namespace posgrad
