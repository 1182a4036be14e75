// "tree_sq": the tree positional encoding of Shiv & Quirk (2019), the APE paper's Tree-SQ
// baseline (spec ape.md section 6). An absolute encoding of heap positions, added to the token
// embeddings. A node's root-to-node word (Positions::tree_word: heap p is the 0-indexed node
// p - 1, so the root, SOS and padding have the empty word) becomes a stack of one-hot branch
// choices, most recent step first, kept to the last max_depth steps:
//
//   onehot[z] = 1 for z = l * kappa + b_{t-l}, l = 0 .. min(t, max_depth) - 1     [Z], Z = kappa * max_depth
//   p         = tanh(w),  w [F] learnable, initialised U(0.7, 0.999)               F = D / Z
//   weight    [z, f] = p_f^e(z) * sqrt((1 - p_f^2) * F / 2)                          [Z, F]
//   pe        = (onehot[z] * weight[z, f]) flattened over (z, f)                      [D]
//   x         = x + pe
//
// The exponent e(z) of word slot z: Shiv & Quirk's level of the slot, floor(z / kappa)
// (tiling=levels, the default); or, as the released code tiles its max_depth rows to cover the Z
// slots, z mod max_depth (tiling=released, spec section 6's quirk: for a binary tree of max_depth
// 8 the slots get 0, 1, ..., 7, 0, 1, ..., 7 instead of 0, 0, 1, 1, ..., 7, 7).
//
// Options: branching (kappa, default 2, must equal the positions'), max_depth (default 8, the
// released model's), tiling (levels | released). The width D must be a multiple of Z.
// A word longer than max_depth keeps its last max_depth steps (the stack drops the oldest).
// Parameter: w [F].
// Deliberately not here: sequence or grid positions (an error) and attention: like every
// AbsoluteEncoding (attention_hook.h) the model adds it before the first layer.
// Shapes: letters of shape_legend.h, plus Z word slots and F features per slot.
#pragma once

#include "attention/registry.h"

namespace posgrad {

enum class TreeSqTiling { Levels, Released };

class TreeSq : public AbsoluteEncoding {
 public:
  TreeSq(int64_t width, int64_t branching, int64_t max_depth, TreeSqTiling tiling, Generator& gen);

  // x [B, N, D] + the encoding of each token's heap position (tree positions [N] or [B, N]).
  Variable embed(const Variable& x, const Positions& positions) override;
  std::string summary() const override;

  // The one-hot word stacks of heap positions [N] or [B, N] -> [N, Z] or [B, N, Z] (float64).
  Tensor word_stacks(const Tensor& heap) const;
  // weight [Z, F] from the current w.
  Variable slot_weights() const;
  // The exponent e(z) of every word slot [Z].
  std::vector<int64_t> slot_exponents() const;

 private:
  int64_t width_, branching_, max_depth_, features_;
  TreeSqTiling tiling_;
  Variable w_;  // [F]
};

std::shared_ptr<AttentionHook> make_tree_sq(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
