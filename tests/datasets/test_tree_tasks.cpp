// The tree transduction tasks (APE spec 7.3): the operations on hand-written trees (a rotation,
// one C3 reduction step, each TREE-OPS operation), the heap positions and traversal numbers of a
// breadth-first and a depth-first linearisation, the words and distances those heap positions
// give the tree encoding (spec 11), the depth limit, the random trees' shape, each generated
// task's input-output relation, the paper's split sizes, reproducibility and golden hashes.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "attention/positions.h"
#include "datasets/seeding.h"
#include "datasets/transduction/random_trees.h"
#include "datasets/transduction/transduction_batch.h"
#include "datasets/transduction/tree_operations.h"
#include "datasets/transduction/tree_tasks.h"
#include "tests/test_support.h"
#include "transduction_test_util.h"

using namespace posgrad;
using Tokens = std::vector<int64_t>;

namespace {
BinaryTree tree(const char* text) { return parse_tree(text); }
}  // namespace

BOOST_AUTO_TEST_SUITE(tree_tasks)

BOOST_AUTO_TEST_CASE(rotate_on_hand_written_trees) {
  // Binary(r, Binary(p, l, m), right) -> Binary(p, rotate_tree(l), Binary(r, rotate_tree(m), rotate_tree(right)))
  BOOST_TEST(to_text(rotate_tree(tree("(11 (12 1 2) 3)"))) == "(12 1 (11 2 3))");
  BOOST_TEST(to_text(rotate_tree(tree("(11 (12 (13 (14 1 2) 3) 4) 5)"))) == "(12 (14 1 (13 2 3)) (11 4 5))");
  BOOST_TEST(to_text(rotate_tree(tree("(11 (12 1 (13 (14 2 3) 4)) 5)"))) == "(12 1 (11 (14 2 (13 3 4)) 5))");
  // A node whose left child is a leaf is returned unchanged, its right subtree included.
  BOOST_TEST(to_text(rotate_tree(tree("(11 1 (12 (13 2 3) 4))"))) == "(11 1 (12 (13 2 3) 4))");
  BOOST_TEST(to_text(rotate_tree(tree("7"))) == "7");
}

BOOST_AUTO_TEST_CASE(c3_group_table_and_one_reduction_step) {
  // Z3 with 1 the identity: 1.x = x, 2.2 = 3, 2.3 = 1, 3.3 = 2, commutative.
  const int64_t table[3][3] = {{1, 2, 3}, {2, 3, 1}, {3, 1, 2}};
  for (int64_t a = 1; a <= 3; ++a)
    for (int64_t b = 1; b <= 3; ++b) BOOST_TEST(c3_product(a, b) == table[a - 1][b - 1]);
  // Only nodes with two leaf children reduce, once: (4 2 3) -> 1 and (4 1 2) -> 2, the parent waits.
  BOOST_TEST(to_text(c3_step(tree("(4 (4 2 3) (4 (4 1 2) 3))"))) == "(4 1 (4 2 3))");
  BOOST_TEST(to_text(c3_step(tree("(4 3 3)"))) == "2");
  BOOST_TEST(to_text(c3_step(tree("2"))) == "2");
  test::check_error([] { c3_product(0, 1); }, {"c3", "0 and 1"});
  test::check_error([] { c3_step(tree("(5 1 2)")); }, {"operator label must be 4, got 5"});
}

BOOST_AUTO_TEST_CASE(each_tree_ops_operation) {
  const BinaryTree x = tree("(70 (71 1 2) 3)");
  BOOST_TEST(tree_ops_meta_token(128, 0) == 124);
  BOOST_TEST(tree_ops_meta_token(128, 3) == 127);
  const char* outputs[] = {"(71 1 2)", "(71 2 1)", "(70 71 3)", "(70 (71 1 2) 3)"};  // subtree, flip, cut, x
  for (int64_t op = 0; op < 4; ++op) {
    const TreePair pair = tree_ops_pair(x, 71, op, 128);
    BOOST_TEST(to_text(pair.input) == "(" + std::to_string(124 + op) + " 71 (70 (71 1 2) 3))");
    BOOST_TEST(to_text(pair.output) == outputs[op]);
  }
  // A leaf pointer: flip leaves it, cut_at replaces it by itself.
  BOOST_TEST(to_text(tree_ops_pair(x, 3, 1, 128).output) == "3");
  BOOST_TEST(to_text(tree_ops_pair(x, 3, 2, 128).output) == "(70 (71 1 2) 3)");
  BOOST_TEST(to_text(flip_tree(tree("(70 (71 1 2) 3)"))) == "(70 3 (71 1 2))");  // the root's children only
  test::check_error([&] { tree_ops_pair(x, 99, 0, 128); }, {"ptr 99 is not a label"});
  test::check_error([&] { tree_ops_pair(x, 71, 4, 128); }, {"op must be in 0..3, got 4"});
  const auto all = subtrees(x);  // pre-order
  BOOST_TEST(all.size() == 5u);
  BOOST_TEST(all[1]->label == 71);
  BOOST_TEST(all[4]->label == 3);
}

BOOST_AUTO_TEST_CASE(heap_positions_of_both_linearisations) {
  // root 10 (heap 1), left 11 (2) with leaf 1 (4) and 12 (5) over leaves 2 (10) and 3 (11); right leaf 4 (3)
  const BinaryTree t = tree("(10 (11 1 (12 2 3)) 4)");
  const LinearTree breadth = linearise(t, TreeOrder::BreadthFirst);
  BOOST_TEST(breadth.labels == (Tokens{10, 11, 4, 1, 12, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(breadth.heap == (Tokens{1, 2, 3, 4, 5, 10, 11}), boost::test_tools::per_element());
  BOOST_TEST(breadth.order == breadth.heap, boost::test_tools::per_element());  // bf numbering = heap
  const LinearTree depth = linearise(t, TreeOrder::DepthFirst);
  BOOST_TEST(depth.labels == (Tokens{10, 11, 1, 12, 2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(depth.heap == (Tokens{1, 2, 4, 5, 10, 11, 3}), boost::test_tools::per_element());
  BOOST_TEST(depth.order == (Tokens{1, 2, 3, 4, 5, 6, 7}), boost::test_tools::per_element());  // pre-order index

  // The example: SOS (token 0, heap 0, order 0) first, input breadth-first, no EOS.
  const TransductionExample e = tree_example({t, rotate_tree(t)}, TreeOrder::DepthFirst);
  BOOST_TEST(e.source == (Tokens{0, 10, 11, 4, 1, 12, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(e.source_heap == (Tokens{0, 1, 2, 3, 4, 5, 10, 11}), boost::test_tools::per_element());
  BOOST_TEST(to_text(rotate_tree(t)) == "(11 1 (10 (12 2 3) 4))");
  BOOST_TEST(e.target == (Tokens{0, 11, 1, 10, 12, 2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(e.target_heap == (Tokens{0, 1, 2, 3, 6, 12, 13, 7}), boost::test_tools::per_element());
  BOOST_TEST(e.target_order == (Tokens{0, 1, 2, 3, 4, 5, 6, 7}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(heap_positions_give_the_tree_encodings_words_and_distances) {
  // Spec 11's cancellation vector: u = [0, 1] (left, then right) and v = [0, 0, 1] under the
  // intended mapping are the heap positions 5 and 9 of our linearisation.
  const LinearTree t = linearise(tree("(1 (2 (4 8 (9 18 19)) (5 10 11)) 3)"), TreeOrder::BreadthFirst);
  BOOST_TEST(t.heap == t.labels, boost::test_tools::per_element());  // labels chosen equal to the heap positions
  BOOST_TEST(Positions::tree_word(5, 2) == (Tokens{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(Positions::tree_word(9, 2) == (Tokens{0, 0, 1}), boost::test_tools::per_element());
  BOOST_TEST(Positions::tree_word(1, 2).empty());  // the root: the identity, as SOS
  for (int64_t a = 1; a < 64; ++a)
    for (int64_t b = 1; b < 64; ++b) BOOST_REQUIRE(heap_distance(a, b) == Positions::tree_distance(a, b, 2));
  BOOST_TEST(heap_distance(4, 3) == 3);  // 4 -> 2 -> 1 -> 3
  BOOST_TEST(heap_distance(5, 5) == 0);
}

BOOST_AUTO_TEST_CASE(the_tree_causal_mask_is_lower_triangular_in_output_order) {
  const BinaryTree t = tree("(10 (11 1 (12 2 3)) 4)");
  std::vector<float> expected(64, 0.0f);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j <= i; ++j) expected[static_cast<size_t>(i * 8 + j)] = 1.0f;
  for (TreeOrder order : {TreeOrder::BreadthFirst, TreeOrder::DepthFirst}) {
    const TransductionExample e = tree_example({t, t}, order);
    BOOST_TEST(causal_mask_from_order(e.target_order).to_vector<float>() == expected, boost::test_tools::per_element());
  }
  // The rule itself, on an order that is not monotone: row i attends j when order[j] <= order[i].
  BOOST_TEST(causal_mask_from_order({0, 3, 1, 2}).to_vector<float>() ==
                 (std::vector<float>{1, 0, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 1}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(too_deep_trees_are_refused_with_depth_and_limit) {
  BinaryTree chain = BinaryTree::leaf(1);
  for (int i = 0; i < 17; ++i) chain = BinaryTree::binary(11, std::move(chain), BinaryTree::leaf(2));
  BOOST_TEST(chain.depth() == 17);
  test::check_error([&] { linearise(chain, TreeOrder::DepthFirst); }, {"depth 17", "max_depth 16"});
  test::check_error([&] { tree_example({chain, chain}, TreeOrder::BreadthFirst); }, {"depth 17", "max_depth 16"});
  BOOST_TEST(linearise(chain.left(), TreeOrder::DepthFirst).labels.size() == 33u);  // depth 16 is fine
  test::check_error([&] { parse_tree_order("postorder"); }, {"'postorder'", "breadth, depth"});
  test::check_error([&] { parse_tree_task("reorder"); }, {"'reorder'", "copy, rotate, c3, tree-ops"});
}

BOOST_AUTO_TEST_CASE(random_trees_have_the_drawn_depth_and_labels) {
  DrawStream stream(3);
  const Tokens leaves{1, 2, 3}, operators{4};
  for (int64_t depth = 0; depth <= 9; ++depth)
    for (int rep = 0; rep < 20; ++rep) {
      const BinaryTree t = random_tree(depth, leaves, operators, stream);
      BOOST_REQUIRE(t.depth() == depth);
      // one child has depth - 1 exactly
      if (depth > 0) BOOST_REQUIRE(std::max(t.left().depth(), t.right().depth()) == depth - 1);
      for (int64_t label : linearise(t, TreeOrder::DepthFirst).labels) BOOST_REQUIRE((label >= 1 && label <= 4));
    }
  Tokens leaf_pool{1, 2}, operator_pool{5};
  BOOST_TEST(!random_tree_unique(2, leaf_pool, operator_pool, stream).has_value());  // needs 2 operators
  for (int rep = 0; rep < 20; ++rep) {  // labels drawn without replacement: used + left = the pools
    Tokens leaf_pool2{1, 2, 3, 4, 5}, operator_pool2{6, 7, 8, 9};
    const auto unique = random_tree_unique(3, leaf_pool2, operator_pool2, stream);
    if (!unique) continue;
    BOOST_REQUIRE(unique->depth() == 3);
    Tokens all = linearise(*unique, TreeOrder::DepthFirst).labels;
    all.insert(all.end(), leaf_pool2.begin(), leaf_pool2.end());
    all.insert(all.end(), operator_pool2.begin(), operator_pool2.end());
    std::sort(all.begin(), all.end());
    BOOST_REQUIRE(all == (Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  }
}

BOOST_AUTO_TEST_CASE(generated_pairs_follow_each_task) {
  const TreeTaskSettings settings;
  for (TreeTask task : {TreeTask::Copy, TreeTask::Rotate, TreeTask::C3, TreeTask::TreeOps}) {
    BOOST_TEST_CONTEXT(tree_task_name(task)) {
      DrawStream stream(derive_seed(42, SeedStream::Transduction));
      const std::vector<TreePair> pairs = draw_tree_pairs(task, settings, 3000, stream);
      const int64_t V = default_tree_vocab_size(task);
      const TreeLabels labels = tree_task_labels(task, V);
      const std::set<int64_t> leaves(labels.leaves.begin(), labels.leaves.end()),
          operators(labels.operators.begin(), labels.operators.end());
      double depth_sum = 0;
      for (const TreePair& pair : pairs) {
        depth_sum += pair.input.depth();
        switch (task) {
          case TreeTask::Copy: BOOST_REQUIRE((pair.output == pair.input)); break;
          case TreeTask::Rotate: BOOST_REQUIRE((pair.output == rotate_tree(pair.input))); break;
          case TreeTask::C3: BOOST_REQUIRE((pair.output == c3_step(pair.input))); break;
          case TreeTask::TreeOps: {
            const int64_t op = pair.input.label - 124;
            BOOST_REQUIRE((op >= 0 && op <= 3));
            const BinaryTree& x = pair.input.right();
            BOOST_REQUIRE(pair.input.left().is_leaf());
            BOOST_REQUIRE((tree_ops_pair(x, pair.input.left().label, op, V).output == pair.output));
            const LinearTree nodes = linearise(x, TreeOrder::DepthFirst);  // unique labels from the task's sets
            BOOST_REQUIRE(std::set<int64_t>(nodes.labels.begin(), nodes.labels.end()).size() == nodes.labels.size());
            break;
          }
        }
        const BinaryTree& body = task == TreeTask::TreeOps ? pair.input.right() : pair.input;
        for (const BinaryTree* node : subtrees(body))
          BOOST_REQUIRE((node->is_leaf() ? leaves.count(node->label) : operators.count(node->label)) == 1u);
      }
      // depth ~ int(Normal(7, 1)): mean about 6.5 (TREE-OPS: the meta node over x of depth d - 1)
      const double mean = depth_sum / static_cast<double>(pairs.size());
      BOOST_TEST(std::abs(mean - 6.5) < 0.06, "mean input depth " << mean);
    }
  }
  BOOST_TEST(tree_task_labels(TreeTask::TreeOps, 128).leaves.back() == 64);
  BOOST_TEST(tree_task_labels(TreeTask::TreeOps, 128).operators.front() == 65);
  BOOST_TEST(tree_task_labels(TreeTask::TreeOps, 128).operators.back() == 124);
  BOOST_TEST(tree_task_labels(TreeTask::Copy, 20).operators.front() == 11);
}

BOOST_AUTO_TEST_CASE(tree_ops_draws_again_when_unique_labels_run_out) {
  // x of depth 10 needs about 64 operators on average, more than the 60 labels 65..124: find a
  // stream whose first unique tree runs out, and check the pair is still drawn, from a later tree.
  const TreeLabels labels = tree_task_labels(TreeTask::TreeOps, 128);
  int exhausted = 0;
  for (uint64_t key = 0; key < 20 && exhausted < 3; ++key) {
    DrawStream probe(key);
    Tokens leaves = labels.leaves, operators = labels.operators;
    if (random_tree_unique(10, leaves, operators, probe)) continue;
    ++exhausted;
    DrawStream stream(key);
    const TreePair pair = draw_tree_pair(TreeTask::TreeOps, 11, 128, stream);
    BOOST_TEST(stream.draws() > probe.draws());  // it went on past the failed tree
    const BinaryTree& x = pair.input.right();
    BOOST_TEST(x.depth() == 10);
    const Tokens nodes = linearise(x, TreeOrder::DepthFirst).labels;
    BOOST_TEST(std::set<int64_t>(nodes.begin(), nodes.end()).size() == nodes.size());
  }
  BOOST_TEST(exhausted == 3);
  // With one operator label a tree of depth 2 can never be drawn: the error names it.
  DrawStream stream(1);
  test::check_error([&] { draw_tree_pair(TreeTask::TreeOps, 3, 10, stream); },
                    {"tree-ops", "depth 2", "1000 attempts", "5 leaf and 1 operator labels"});
}

BOOST_AUTO_TEST_CASE(the_papers_splits_reproducible_with_golden_hashes) {
  const char* hashes[4][2] = {  // [task][breadth, depth]
      {"81f0f29c2a2336c9c794c2f8fda8cd713bec63728e1de2d978d3ec575dbc934c",
       "e7d8ac1d0a16277d9b80b91fb08b4b4f596837ddb785f474b6d77b37a8fac961"},
      {"a3e3f63c82406b2383c284bd3bf271b28564b8979e3c30c4e3fdfcf3764814e6",
       "5c5753abf201f9685896ae3b6c0f275c518e4fd80d54bc5630831dbfc4f1f456"},
      {"da2e7bb5c2319cb044b16b6706fe9f8c96bd0ba5244070602e09dc8aadbe1cb2",
       "72611844acc3d0c1ef8aa4f28df19dc0acf92aba82af7ed8df16ad381b633928"},
      {"549d9b1f18768b4ade5536f8b6c8002adf7a0fd6b85a14525693b20ad8fc9e78",
       "2dd8caf6f2cda5b195764de9c8911a674368e94d625258e9f367f0217a66c50c"}};
  const TreeTask tasks[4] = {TreeTask::Copy, TreeTask::Rotate, TreeTask::C3, TreeTask::TreeOps};
  for (int k = 0; k < 4; ++k)
    for (int o = 0; o < 2; ++o) {
      TreeTaskSettings settings;
      settings.output_order = o == 0 ? TreeOrder::BreadthFirst : TreeOrder::DepthFirst;
      BOOST_TEST_CONTEXT(tree_task_name(tasks[k]) << " " << tree_order_name(settings.output_order)) {
        const TransductionSplits splits = make_tree_splits(tasks[k], settings);
        BOOST_TEST(splits.train.size() == 6000u);
        BOOST_TEST(splits.dev.size() == 2000u);
        BOOST_TEST(splits.test.size() == 2000u);
        BOOST_TEST(test::splits_fingerprint(splits, 3) == hashes[k][o]);
        if (k == 0 && o == 0) {
          const TransductionSplits again = make_tree_splits(tasks[k], settings);
          BOOST_TEST((again.train == splits.train && again.dev == splits.dev && again.test == splits.test));
        }
      }
    }
}

BOOST_AUTO_TEST_SUITE_END()
