// Random binary trees (see random_trees.h).
#include "datasets/transduction/random_trees.h"

#include <utility>

#include "tensor/error.h"

namespace posgrad {

namespace {

// The two children's depths of a node at depth `depth` >= 1, drawn as random_trees.h says.
std::pair<int64_t, int64_t> draw_child_depths(int64_t depth, DrawStream& stream) {
  const int64_t random_depth = stream.integer(0, depth - 1);
  const int64_t fixed_depth = random_depth < depth - 1 ? depth - 1 : stream.integer(0, depth - 1);
  if (stream.index(2) == 0) return {random_depth, fixed_depth};
  return {fixed_depth, random_depth};
}

void check_depth(int64_t depth) {
  if (depth < 0) fail("random tree: depth must be >= 0, got {}", depth);
}

std::optional<int64_t> take_from(std::vector<int64_t>& pool, DrawStream& stream) {
  if (pool.empty()) return std::nullopt;
  const int64_t i = stream.index(static_cast<int64_t>(pool.size()));
  const int64_t label = pool[static_cast<size_t>(i)];
  pool.erase(pool.begin() + i);
  return label;
}

std::optional<BinaryTree> unique_tree(int64_t depth, std::vector<int64_t>& leaf_pool,
                                      std::vector<int64_t>& operator_pool, DrawStream& stream) {
  if (depth == 0) {
    const auto label = take_from(leaf_pool, stream);
    if (!label) return std::nullopt;
    return BinaryTree::leaf(*label);
  }
  const auto [left_depth, right_depth] = draw_child_depths(depth, stream);
  const auto label = take_from(operator_pool, stream);
  if (!label) return std::nullopt;
  auto left = unique_tree(left_depth, leaf_pool, operator_pool, stream);
  if (!left) return std::nullopt;
  auto right = unique_tree(right_depth, leaf_pool, operator_pool, stream);
  if (!right) return std::nullopt;
  return BinaryTree::binary(*label, std::move(*left), std::move(*right));
}

BinaryTree any_tree(int64_t depth, const std::vector<int64_t>& leaves, const std::vector<int64_t>& operators,
                    DrawStream& stream) {
  if (depth == 0) return BinaryTree::leaf(stream.choice(leaves));
  const auto [left_depth, right_depth] = draw_child_depths(depth, stream);
  const int64_t label = stream.choice(operators);
  BinaryTree left = any_tree(left_depth, leaves, operators, stream);
  BinaryTree right = any_tree(right_depth, leaves, operators, stream);
  return BinaryTree::binary(label, std::move(left), std::move(right));
}

}  // namespace

BinaryTree random_tree(int64_t depth, const std::vector<int64_t>& leaves, const std::vector<int64_t>& operators,
                       DrawStream& stream) {
  check_depth(depth);
  if (leaves.empty() || (depth > 0 && operators.empty()))
    fail("random tree: no leaf labels or no operator labels to draw from");
  return any_tree(depth, leaves, operators, stream);
}

std::optional<BinaryTree> random_tree_unique(int64_t depth, std::vector<int64_t>& leaf_pool,
                                             std::vector<int64_t>& operator_pool, DrawStream& stream) {
  check_depth(depth);
  return unique_tree(depth, leaf_pool, operator_pool, stream);
}

}  // namespace posgrad
