// Linearising a BinaryTree for the transformer (APE spec section 7.3): its labels in breadth-first
// or depth-first order, each with its heap position, and the traversal numbers from which the
// decoder's causal mask is derived.
//
//   heap position   root 1, children of p: 2p (left) and 2p + 1 (right)   (the released bf_enum)
//   breadth-first   level by level, left to right (heap positions increase along the order)
//   depth-first     pre-order: node, left subtree, right subtree
//   order           the traversal's own numbering of each node: its heap position for
//                   breadth-first, its 1-based pre-order index for depth-first. Node i of the
//                   output may attend node j exactly when order[j] <= order[i] (itself included),
//                   which in either order is "j comes no later than i": lower-triangular.
//
// The tree positional encoding (attention's Positions::tree, the released code's create_paths(16))
// takes words of at most kMaxTreeDepth branch steps, so a tree deeper than that is refused here,
// with its depth and the limit, before any heap position could overflow or be mis-encoded.
// This file deliberately adds no SOS and builds no tensors (tree_tasks.h, transduction_batch.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/transduction/binary_tree.h"

namespace posgrad {

enum class TreeOrder { BreadthFirst, DepthFirst };

// "breadth" or "depth" (the released code's names); anything else is an Error naming both.
TreeOrder parse_tree_order(const std::string& name);
std::string tree_order_name(TreeOrder order);

inline constexpr int64_t kMaxTreeDepth = 16;

struct LinearTree {
  std::vector<int64_t> labels;  // in traversal order
  std::vector<int64_t> heap;    // heap position of each, same order
  std::vector<int64_t> order;   // traversal number of each, same order (see above)
};

// Error "tree of depth D is deeper than the tree positional encoding allows (max_depth M)" when
// tree.depth() > max_depth.
void check_tree_depth(const BinaryTree& tree, int64_t max_depth = kMaxTreeDepth);

LinearTree linearise(const BinaryTree& tree, TreeOrder order, int64_t max_depth = kMaxTreeDepth);

// The number of branch steps between two heap positions (>= 1) through their lowest common
// ancestor: the tree distance APE's decay uses.
int64_t heap_distance(int64_t heap_a, int64_t heap_b);

}  // namespace posgrad
