// The decode job of the treetasks app: a trained run decodes trees given in the bracketed text
// form (datasets/transduction/binary_tree.h) on the command line (--input "(11 (12 1 2) 3)",
// repeatable) or in a file (--file, one tree a line, blank lines and lines starting with #
// skipped), from the run's best (or latest) checkpoint. For each tree it prints the input, the
// model's output (as a tree when the decoded labels form one in the run's output order, else the
// labels as decoded) and whether it is the task's answer:
//
//   input    (11 (12 1 2) 3)
//   output   (12 1 (11 2 3))
//   correct  yes
//
// The input is the task's input tree: for TREE-OPS, (op_token ptr x) with op_token = V - 4 + op
// (124..127 for V = 128) and ptr a label of x. Before anything is decoded every tree is checked,
// and a malformed tree (naming the character position), a tree deeper than the tree encoding
// allows (naming the depth and the limit), or a label that is not one of the task's leaves at a
// leaf or one of its operators at a binary node is one error line.
// Deliberately does not: sample or beam-search.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "apps/treetasks/treetasks_settings.h"

namespace posgrad::treetasks_app {

// The task's pair for an input tree typed by a user: Error naming what is wrong with it.
TreePair typed_pair(TreeTask task, const BinaryTree& input, int64_t vocab_size, const std::string& where);

// The tree that labels (in `depth_first` or breadth-first order) describe, when they describe
// exactly one (operators have two children, other labels none); nothing otherwise.
std::optional<BinaryTree> tree_from_labels(const std::vector<int64_t>& labels, bool depth_first,
                                           const std::function<bool(int64_t)>& is_operator);

void decode(TreetasksSettings& c, apps::Settings& settings, const std::string& run_dir, const std::string& which,
            const std::vector<std::string>& inputs, const std::string& file);

}  // namespace posgrad::treetasks_app
