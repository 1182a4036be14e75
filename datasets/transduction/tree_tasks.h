// The APE paper's tree transduction tasks (APE spec section 7.3): binary trees of depth
// ~ Normal(7, 1) truncated to integers, 6000 / 2000 / 2000 train / dev / test examples from one
// random stream seeded 42, input in breadth-first order, output in breadth- or depth-first order.
//
//   COPY      labels: leaves 1..V/2, operators V/2+1..V (V = 20)     output = input
//   ROTATE    the same labels                                        output = rotate_tree(input)
//   C3        leaves {1, 2, 3} (Z3, 1 the identity), operator 4      output = c3_step(input)
//   TREE-OPS  V = 128: a tree x of depth d - 1 with unique labels, leaves 1..64, operators
//             65..124; a uniformly chosen subtree (label ptr) and op in 0..3; the input is
//             Binary(124 + op, Leaf(ptr), x) (meta-op tokens 124..127; 124 is also an operator
//             label, as released) and the output is, by op:
//               0 the subtree, 1 flip_tree(subtree), 2 cut_at(x, ptr), 3 x
//
// Example (transduction_example.h): source = (SOS = 0, input labels breadth-first), source_heap
// = (0, their heap positions); target = (SOS, output labels in the output order), target_heap =
// (0, heap positions), target_order = (0, the output traversal's numbers). No EOS. A model's
// vocabulary is V + 2.
//
// Generation order (spec 7.1, as released): for each part in turn (train, dev, test), first every
// depth of that part, then the examples in order (each tree drawn node by node, random_trees.h;
// TREE-OPS then draws the subtree, then op).
// Where the spec leaves a choice, and what we chose:
//   * the random numbers: one DrawStream keyed by derive_seed(seed, SeedStream::Transduction)
//     (the released code: torch for depths, Python's `random` for trees), so the trees are not
//     the released ones, but the same seed always gives the same data;
//   * a truncated depth below 0 (below 1 for TREE-OPS, whose x has depth d - 1) is raised to it;
//   * TREE-OPS runs out of unique labels when x has more than 60 operators or 64 leaves (rare at
//     depth 6, possible deeper): the released code raises there; we draw x again at the same depth
//     from the continuing stream (up to 1000 times, then an Error);
//   * a depth beyond kMaxTreeDepth is refused (tree_linearisation.h) rather than encoded wrongly.
// This file deliberately has no batching (transduction_batch.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/transduction/binary_tree.h"
#include "datasets/transduction/draw_stream.h"
#include "datasets/transduction/transduction_example.h"
#include "datasets/transduction/tree_linearisation.h"

namespace posgrad {

enum class TreeTask { Copy, Rotate, C3, TreeOps };

// "copy", "rotate", "c3", "tree-ops"; anything else is an Error listing them.
TreeTask parse_tree_task(const std::string& name);
std::string tree_task_name(TreeTask task);

// The task's V: 20 for COPY, ROTATE and C3 (the released default), 128 for TREE-OPS.
int64_t default_tree_vocab_size(TreeTask task);

struct TreeTaskSettings {
  TreeOrder output_order = TreeOrder::BreadthFirst;
  int64_t vocab_size = 0;     // V; 0 = default_tree_vocab_size(task)
  double depth_mean = 7.0;    // depths ~ Normal(mean, stddev), truncated
  double depth_stddev = 1.0;
};

// The labels a task draws from (C3: {1, 2, 3} and {4} whatever V).
struct TreeLabels {
  std::vector<int64_t> leaves, operators;
};
TreeLabels tree_task_labels(TreeTask task, int64_t vocab_size);

// The first meta-op token of TREE-OPS: vocab_size - 4 (124 for V = 128).
int64_t tree_ops_meta_token(int64_t vocab_size, int64_t op);

struct TreePair {
  BinaryTree input, output;
};

// The TREE-OPS pair for a given x, subtree label ptr and op in 0..3 (Error if ptr is not a label
// of x or op is out of range).
TreePair tree_ops_pair(const BinaryTree& x, int64_t ptr, int64_t op, int64_t vocab_size);

// One task pair of the given depth, drawn from the stream.
TreePair draw_tree_pair(TreeTask task, int64_t depth, int64_t vocab_size, DrawStream& stream);

// The example of a pair (see above); Error if either tree is deeper than max_depth.
TransductionExample tree_example(const TreePair& pair, TreeOrder output_order, int64_t max_depth = kMaxTreeDepth);

// One depth drawn from the stream (truncated normal, at least the task's minimum).
int64_t draw_tree_depth(TreeTask task, const TreeTaskSettings& settings, DrawStream& stream);

// `count` pairs: first `count` depths, then the pairs in order.
std::vector<TreePair> draw_tree_pairs(TreeTask task, const TreeTaskSettings& settings, int64_t count,
                                      DrawStream& stream);

// The three parts from one stream keyed by derive_seed(seed, SeedStream::Transduction).
TransductionSplits make_tree_splits(TreeTask task, const TreeTaskSettings& settings = {},
                                    const SplitSizes& sizes = {}, uint64_t seed = 42);

}  // namespace posgrad
