// The tree tasks' tree functions (see tree_operations.h).
#include "datasets/transduction/tree_operations.h"

#include "tensor/error.h"

namespace posgrad {

BinaryTree rotate_tree(const BinaryTree& tree) {
  if (tree.is_leaf() || tree.left().is_leaf()) return tree;
  const BinaryTree& pivot = tree.left();
  return BinaryTree::binary(pivot.label, rotate_tree(pivot.left()),
                            BinaryTree::binary(tree.label, rotate_tree(pivot.right()), rotate_tree(tree.right())));
}

int64_t c3_product(int64_t a, int64_t b) {
  if (a < 1 || a > 3 || b < 1 || b > 3) fail("c3: leaf labels must be 1, 2 or 3, got {} and {}", a, b);
  return (a - 1 + b - 1) % 3 + 1;
}

BinaryTree c3_step(const BinaryTree& tree) {
  if (tree.is_leaf()) return tree;
  if (tree.label != kC3Operator) fail("c3_step: operator label must be {}, got {}", kC3Operator, tree.label);
  if (tree.left().is_leaf() && tree.right().is_leaf())
    return BinaryTree::leaf(c3_product(tree.left().label, tree.right().label));
  return BinaryTree::binary(tree.label, c3_step(tree.left()), c3_step(tree.right()));
}

namespace {
void collect_subtrees(const BinaryTree& tree, std::vector<const BinaryTree*>& out) {
  out.push_back(&tree);
  for (const BinaryTree& child : tree.children) collect_subtrees(child, out);
}
}  // namespace

std::vector<const BinaryTree*> subtrees(const BinaryTree& tree) {
  std::vector<const BinaryTree*> out;
  collect_subtrees(tree, out);
  return out;
}

BinaryTree flip_tree(const BinaryTree& tree) {
  if (tree.is_leaf()) return tree;
  return BinaryTree::binary(tree.label, tree.right(), tree.left());
}

BinaryTree cut_at(const BinaryTree& tree, int64_t at) {
  if (tree.label == at) return BinaryTree::leaf(at);
  if (tree.is_leaf()) return tree;
  return BinaryTree::binary(tree.label, cut_at(tree.left(), at), cut_at(tree.right(), at));
}

}  // namespace posgrad
