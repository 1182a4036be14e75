// Random binary trees of a given depth (APE spec section 7.3, the released random_tree):
//
//   depth 0   a leaf with a label drawn from `leaves`
//   depth d   r = uniform in [0, d-1]; f = d-1 if r < d-1, else a second uniform draw in [0, d-1];
//             the children's depths are (r, f) or (f, r), a fair coin deciding; the node's label
//             is drawn from `operators`; then the left child, then the right child are drawn.
//
// So one child has depth d-1 exactly and the tree has depth d. Draws happen in the order
// written, one DrawStream value each (a label is a uniform choice among the list, in its order).
// The unique variant draws labels without replacement from pools (each drawn label is removed),
// for TREE-OPS; it gives up (nullopt) when a pool runs out, where the released code would raise.
// This file deliberately knows no task (tree_tasks.h chooses labels and depths).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "datasets/transduction/binary_tree.h"
#include "datasets/transduction/draw_stream.h"

namespace posgrad {

BinaryTree random_tree(int64_t depth, const std::vector<int64_t>& leaves, const std::vector<int64_t>& operators,
                       DrawStream& stream);

// Labels are removed from the pools as they are drawn; nullopt when a pool is empty when drawn from.
std::optional<BinaryTree> random_tree_unique(int64_t depth, std::vector<int64_t>& leaf_pool,
                                             std::vector<int64_t>& operator_pool, DrawStream& stream);

}  // namespace posgrad
