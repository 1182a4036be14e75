// The tree transduction tasks (see tree_tasks.h).
#include "datasets/transduction/tree_tasks.h"

#include <algorithm>
#include <numeric>

#include "datasets/seeding.h"
#include "datasets/transduction/random_trees.h"
#include "datasets/transduction/tree_operations.h"
#include "tensor/error.h"

namespace posgrad {

namespace {

constexpr int64_t kTreeOpsMetaOps = 4;
constexpr int64_t kUniqueTreeAttempts = 1000;

std::vector<int64_t> labels_between(int64_t first, int64_t last) {  // first..last, both included
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(0, last - first + 1)));
  std::iota(out.begin(), out.end(), first);
  return out;
}

int64_t resolved_vocab(TreeTask task, const TreeTaskSettings& settings) {
  return settings.vocab_size == 0 ? default_tree_vocab_size(task) : settings.vocab_size;
}

bool has_label(const BinaryTree& tree, int64_t label) {
  if (tree.label == label) return true;
  return std::any_of(tree.children.begin(), tree.children.end(),
                     [&](const BinaryTree& child) { return has_label(child, label); });
}

}  // namespace

TreeTask parse_tree_task(const std::string& name) {
  if (name == "copy") return TreeTask::Copy;
  if (name == "rotate") return TreeTask::Rotate;
  if (name == "c3") return TreeTask::C3;
  if (name == "tree-ops") return TreeTask::TreeOps;
  fail("tree task '{}' is not one of: copy, rotate, c3, tree-ops", name);
}

std::string tree_task_name(TreeTask task) {
  switch (task) {
    case TreeTask::Copy: return "copy";
    case TreeTask::Rotate: return "rotate";
    case TreeTask::C3: return "c3";
    case TreeTask::TreeOps: return "tree-ops";
  }
  fail("tree_task_name: unknown task");
}

int64_t default_tree_vocab_size(TreeTask task) { return task == TreeTask::TreeOps ? 128 : 20; }

TreeLabels tree_task_labels(TreeTask task, int64_t vocab_size) {
  switch (task) {
    case TreeTask::C3:
      if (vocab_size < kC3Operator) fail("tree task c3: vocab_size must be >= {}, got {}", kC3Operator, vocab_size);
      return {{1, 2, 3}, {kC3Operator}};
    case TreeTask::Copy:
    case TreeTask::Rotate:
      if (vocab_size < 2) fail("tree task {}: vocab_size must be >= 2, got {}", tree_task_name(task), vocab_size);
      return {labels_between(1, vocab_size / 2), labels_between(vocab_size / 2 + 1, vocab_size)};
    case TreeTask::TreeOps:
      if (vocab_size < 8) fail("tree task tree-ops: vocab_size must be >= 8, got {}", vocab_size);
      return {labels_between(1, vocab_size / 2), labels_between(vocab_size / 2 + 1, vocab_size - kTreeOpsMetaOps)};
  }
  fail("tree_task_labels: unknown task");
}

int64_t tree_ops_meta_token(int64_t vocab_size, int64_t op) {
  if (op < 0 || op >= kTreeOpsMetaOps) fail("tree task tree-ops: op must be in 0..3, got {}", op);
  return vocab_size - (kTreeOpsMetaOps - op);
}

TreePair tree_ops_pair(const BinaryTree& x, int64_t ptr, int64_t op, int64_t vocab_size) {
  const int64_t meta = tree_ops_meta_token(vocab_size, op);
  const auto all = subtrees(x);
  const auto found = std::find_if(all.begin(), all.end(), [&](const BinaryTree* t) { return t->label == ptr; });
  if (found == all.end()) fail("tree task tree-ops: ptr {} is not a label of the tree {}", ptr, to_text(x));
  const BinaryTree& subtree = **found;
  BinaryTree output;
  switch (op) {
    case 0: output = subtree; break;
    case 1: output = flip_tree(subtree); break;
    case 2: output = cut_at(x, ptr); break;
    default: output = x; break;
  }
  return {BinaryTree::binary(meta, BinaryTree::leaf(ptr), x), std::move(output)};
}

TreePair draw_tree_pair(TreeTask task, int64_t depth, int64_t vocab_size, DrawStream& stream) {
  const TreeLabels labels = tree_task_labels(task, vocab_size);
  switch (task) {
    case TreeTask::Copy: {
      BinaryTree x = random_tree(depth, labels.leaves, labels.operators, stream);
      return {x, x};
    }
    case TreeTask::Rotate: {
      BinaryTree x = random_tree(depth, labels.leaves, labels.operators, stream);
      return {x, rotate_tree(x)};
    }
    case TreeTask::C3: {
      BinaryTree x = random_tree(depth, labels.leaves, labels.operators, stream);
      return {x, c3_step(x)};
    }
    case TreeTask::TreeOps: {
      if (depth < 1) fail("tree task tree-ops: depth must be >= 1, got {}", depth);
      for (int64_t attempt = 0; attempt < kUniqueTreeAttempts; ++attempt) {
        std::vector<int64_t> leaf_pool = labels.leaves, operator_pool = labels.operators;
        auto x = random_tree_unique(depth - 1, leaf_pool, operator_pool, stream);
        if (!x) continue;  // a pool ran out: draw again (tree_tasks.h)
        const auto all = subtrees(*x);
        const int64_t ptr = all[static_cast<size_t>(stream.index(static_cast<int64_t>(all.size())))]->label;
        const int64_t op = stream.index(kTreeOpsMetaOps);
        return tree_ops_pair(*x, ptr, op, vocab_size);
      }
      fail("tree task tree-ops: no tree of depth {} with unique labels in {} attempts ({} leaf and {} operator labels)",
           depth - 1, kUniqueTreeAttempts, labels.leaves.size(), labels.operators.size());
    }
  }
  fail("draw_tree_pair: unknown task");
}

TransductionExample tree_example(const TreePair& pair, TreeOrder output_order, int64_t max_depth) {
  const LinearTree input = linearise(pair.input, TreeOrder::BreadthFirst, max_depth);
  const LinearTree output = linearise(pair.output, output_order, max_depth);
  const auto with_sos = [](const std::vector<int64_t>& values) {
    std::vector<int64_t> out{kSosToken};
    out.insert(out.end(), values.begin(), values.end());
    return out;
  };
  TransductionExample example;
  example.source = with_sos(input.labels);
  example.source_heap = with_sos(input.heap);
  example.target = with_sos(output.labels);
  example.target_heap = with_sos(output.heap);
  example.target_order = with_sos(output.order);
  return example;
}

int64_t draw_tree_depth(TreeTask task, const TreeTaskSettings& settings, DrawStream& stream) {
  const double depth = stream.normal(settings.depth_mean, settings.depth_stddev);
  return std::max<int64_t>(task == TreeTask::TreeOps ? 1 : 0, static_cast<int64_t>(depth));  // truncation
}

std::vector<TreePair> draw_tree_pairs(TreeTask task, const TreeTaskSettings& settings, int64_t count,
                                      DrawStream& stream) {
  if (count < 0) fail("tree task {}: the number of examples must be >= 0, got {}", tree_task_name(task), count);
  if (!(settings.depth_stddev >= 0.0))
    fail("tree task {}: depth_stddev must be >= 0, got {}", tree_task_name(task), settings.depth_stddev);
  const int64_t vocab_size = resolved_vocab(task, settings);
  std::vector<int64_t> depths(static_cast<size_t>(count));
  for (int64_t& depth : depths) {
    depth = draw_tree_depth(task, settings, stream);
    if (depth > kMaxTreeDepth)
      fail("tree task {}: drawn depth {} is deeper than the tree positional encoding allows (max_depth {})",
           tree_task_name(task), depth, kMaxTreeDepth);
  }
  std::vector<TreePair> pairs;
  pairs.reserve(depths.size());
  for (int64_t depth : depths) pairs.push_back(draw_tree_pair(task, depth, vocab_size, stream));
  return pairs;
}

TransductionSplits make_tree_splits(TreeTask task, const TreeTaskSettings& settings, const SplitSizes& sizes,
                                    uint64_t seed) {
  DrawStream stream(derive_seed(seed, SeedStream::Transduction));
  const auto examples = [&](int64_t count) {
    std::vector<TransductionExample> out;
    for (const TreePair& pair : draw_tree_pairs(task, settings, count, stream))
      out.push_back(tree_example(pair, settings.output_order));
    return out;
  };
  TransductionSplits splits;
  splits.train = examples(sizes.train);
  splits.dev = examples(sizes.dev);
  splits.test = examples(sizes.test);
  return splits;
}

}  // namespace posgrad
