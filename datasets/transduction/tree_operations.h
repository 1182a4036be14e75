// The tree functions the tree tasks are made of (APE spec section 7.3): ROTATE's rotation, one C3
// reduction step, and TREE-OPS's subtree listing, flip and cut.
//
//   rotate_tree   Binary(r, Binary(p, l, m), right) -> Binary(p, rot(l), Binary(r, rot(m), rot(right)))
//                 (rot = rotate_tree); a node whose left child is a leaf (and a leaf) is returned
//                 unchanged, without recursing
//   c3_step       every Binary(op, Leaf(a), Leaf(b)) becomes Leaf(c3_product(a, b)), other binary
//                 nodes recurse into both children, leaves stay: one reduction step, not a full
//                 evaluation
//   c3_product    the group Z3 on the labels {1, 2, 3} with 1 the identity:
//                 (a - 1 + b - 1) mod 3 + 1; the only operator label is 4 (kC3Operator)
//   subtrees      every subtree, in pre-order (the tree itself first)
//   flip_tree     swaps the root's two children only (a leaf is returned unchanged)
//   cut_at        the first node met in pre-order whose label is `at`, on every root-to-leaf path,
//                 becomes Leaf(at) (its subtree is cut off); with unique labels, the one such node
// This file deliberately has no randomness (random_trees.h) and no task assembly (tree_tasks.h).
#pragma once

#include <cstdint>
#include <vector>

#include "datasets/transduction/binary_tree.h"

namespace posgrad {

inline constexpr int64_t kC3Operator = 4;

BinaryTree rotate_tree(const BinaryTree& tree);

// a, b in {1, 2, 3}; anything else is an Error naming the labels.
int64_t c3_product(int64_t a, int64_t b);
// Every operator label must be kC3Operator (an Error names the label otherwise).
BinaryTree c3_step(const BinaryTree& tree);

std::vector<const BinaryTree*> subtrees(const BinaryTree& tree);
BinaryTree flip_tree(const BinaryTree& tree);
BinaryTree cut_at(const BinaryTree& tree, int64_t at);

}  // namespace posgrad
