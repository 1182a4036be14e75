// BinaryTree: a labelled tree whose nodes are leaves or have exactly two children (the tree
// tasks' ADT, APE spec section 7.3), and its bracketed text form, for trees typed by a user:
//
//   leaf     a label:                          7
//   binary   ( label left right ):             (11 (12 1 2) 3)
//
// Labels are non-negative integers; tokens are separated by spaces (any whitespace) where two
// labels would otherwise touch. to_text prints this form with single spaces; parse_tree reads it
// back (parse_tree(to_text(t)) == t). Malformed text is an Error of one line naming the position
// (0-based character offset) and what was expected there.
// Depth: a leaf has depth 0, a binary node 1 + the deeper child (the released code's depth).
// This file deliberately has no traversal orders (tree_linearisation.h), no task operations
// (tree_operations.h) and no random trees (random_trees.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace posgrad {

struct BinaryTree {
  int64_t label = 0;
  std::vector<BinaryTree> children;  // empty (a leaf) or exactly two: left, right

  static BinaryTree leaf(int64_t label);
  static BinaryTree binary(int64_t label, BinaryTree left, BinaryTree right);

  bool is_leaf() const { return children.empty(); }
  const BinaryTree& left() const;   // Error on a leaf
  const BinaryTree& right() const;  // Error on a leaf
  int64_t depth() const;            // leaf 0
  int64_t size() const;             // number of nodes
  bool operator==(const BinaryTree&) const = default;
};

std::string to_text(const BinaryTree& tree);

// Nesting deeper than this is refused by parse_tree (a guard for the parser's recursion; the
// tree positional encoding allows much less, see tree_linearisation.h).
inline constexpr int64_t kMaxTreeTextNesting = 256;

BinaryTree parse_tree(std::string_view text);

}  // namespace posgrad
