// Fuzz harness: the bracketed text form of binary trees (parse_tree, datasets/transduction/
// binary_tree.cpp), which reads trees typed by a user. The input is the text.
// When the text is accepted: printing it and reading it back gives the same tree; the tree is
// linearised in both orders (or refused as too deep for the tree encoding, a posgrad::Error),
// each listing every node once with heap positions that fit the depth; rotate_tree keeps the
// number of nodes; c3_step either reduces or names a label outside C3 (a posgrad::Error).
#include <cstddef>
#include <cstdint>
#include <string>

#include "datasets/transduction/binary_tree.h"
#include "datasets/transduction/tree_linearisation.h"
#include "datasets/transduction/tree_operations.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace posgrad;
  using namespace posgrad::fuzz;
  BinaryTree tree;
  if (!expect_error_or_success([&] { tree = parse_tree(as_text(data, size)); })) return 0;
  const std::string text = to_text(tree);
  if (!(parse_tree(text) == tree)) fuzz_finding("to_text does not read back to the same tree: " + text);
  const int64_t nodes = tree.size();
  for (TreeOrder order : {TreeOrder::BreadthFirst, TreeOrder::DepthFirst}) {
    LinearTree linear;
    if (!expect_error_or_success([&] { linear = linearise(tree, order); })) {
      if (tree.depth() <= kMaxTreeDepth) fuzz_finding("linearise refused a tree within the depth limit: " + text);
      continue;
    }
    if (static_cast<int64_t>(linear.labels.size()) != nodes || linear.heap.size() != linear.labels.size() ||
        linear.order.size() != linear.labels.size())
      fuzz_finding("a linearisation does not list every node once: " + text);
    for (int64_t heap : linear.heap)
      if (heap < 1 || heap >= (int64_t{2} << tree.depth())) fuzz_finding("a heap position outside the tree: " + text);
  }
  if (rotate_tree(tree).size() != nodes) fuzz_finding("rotate_tree changed the number of nodes: " + text);
  expect_error_or_success([&] { (void)c3_step(tree); });
  return 0;
}
