// Tree linearisation (see tree_linearisation.h).
#include "datasets/transduction/tree_linearisation.h"

#include <deque>
#include <utility>

#include "tensor/error.h"

namespace posgrad {

TreeOrder parse_tree_order(const std::string& name) {
  if (name == "breadth") return TreeOrder::BreadthFirst;
  if (name == "depth") return TreeOrder::DepthFirst;
  fail("tree order '{}' is not one of: breadth, depth", name);
}

std::string tree_order_name(TreeOrder order) { return order == TreeOrder::BreadthFirst ? "breadth" : "depth"; }

void check_tree_depth(const BinaryTree& tree, int64_t max_depth) {
  const int64_t depth = tree.depth();
  if (depth > max_depth)
    fail("tree of depth {} is deeper than the tree positional encoding allows (max_depth {})", depth, max_depth);
}

namespace {

void depth_first(const BinaryTree& tree, int64_t heap, LinearTree& out) {
  out.labels.push_back(tree.label);
  out.heap.push_back(heap);
  out.order.push_back(static_cast<int64_t>(out.order.size()) + 1);  // 1-based pre-order index
  if (tree.is_leaf()) return;
  depth_first(tree.children[0], 2 * heap, out);
  depth_first(tree.children[1], 2 * heap + 1, out);
}

void breadth_first(const BinaryTree& root, LinearTree& out) {
  std::deque<std::pair<const BinaryTree*, int64_t>> queue{{&root, 1}};
  while (!queue.empty()) {
    const auto [node, heap] = queue.front();
    queue.pop_front();
    out.labels.push_back(node->label);
    out.heap.push_back(heap);
    out.order.push_back(heap);
    if (node->is_leaf()) continue;
    queue.emplace_back(&node->children[0], 2 * heap);
    queue.emplace_back(&node->children[1], 2 * heap + 1);
  }
}

}  // namespace

LinearTree linearise(const BinaryTree& tree, TreeOrder order, int64_t max_depth) {
  if (max_depth < 0 || max_depth > 62) fail("linearise: max_depth must be in 0..62, got {}", max_depth);
  check_tree_depth(tree, max_depth);
  LinearTree out;
  if (order == TreeOrder::BreadthFirst)
    breadth_first(tree, out);
  else
    depth_first(tree, 1, out);
  return out;
}

int64_t heap_distance(int64_t heap_a, int64_t heap_b) {
  if (heap_a < 1 || heap_b < 1) fail("heap_distance: heap positions must be >= 1, got {} and {}", heap_a, heap_b);
  int64_t steps = 0;
  while (heap_a != heap_b) {  // the deeper (larger) one steps up to its parent
    if (heap_a > heap_b)
      heap_a /= 2;
    else
      heap_b /= 2;
    ++steps;
  }
  return steps;
}

}  // namespace posgrad
