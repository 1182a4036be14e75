// Batching transduction examples: padding and padding masks on both sides, the teacher-forcing
// shift, the released code's one-longer input mask, the decoder mask (index order for sequences,
// traversal order for trees, never an empty row), heap positions, the errors, and that the
// encoder-decoder golden files hold exactly the batches posgrad builds from their examples.
#include <boost/test/unit_test.hpp>

#include <numeric>

#include "datasets/transduction/sequence_tasks.h"
#include "datasets/transduction/transduction_batch.h"
#include "datasets/transduction/tree_tasks.h"
#include "nn/safetensors.h"
#include "tests/test_support.h"

using namespace posgrad;
using Tokens = std::vector<int64_t>;
using Floats = std::vector<float>;

BOOST_AUTO_TEST_SUITE(transduction_batch)

BOOST_AUTO_TEST_CASE(sequences_padding_masks_and_shift) {
  const std::vector<TransductionExample> examples{
      sequence_example(SequenceTask::Reverse, Tokens{1, 2, 3}, 20),  // target 3 2 1
      sequence_example(SequenceTask::Reverse, Tokens{4, 5}, 20),     // target 5 4
  };
  const TransductionBatch b = make_transduction_batch(examples, {0, 1});
  BOOST_TEST(b.size() == 2);
  BOOST_TEST((b.source.shape() == Shape{2, 3}));
  BOOST_TEST(b.source.to_vector<int64_t>() == (Tokens{1, 2, 3, 4, 5, 0}), boost::test_tools::per_element());
  BOOST_TEST(b.source_mask.to_vector<float>() == (Floats{1, 1, 1, 1, 1, 0}), boost::test_tools::per_element());
  BOOST_TEST((b.decoder_input.shape() == Shape{2, 2}));  // T = longest target - 1
  BOOST_TEST(b.decoder_input.to_vector<int64_t>() == (Tokens{3, 2, 5, 4}), boost::test_tools::per_element());
  BOOST_TEST(b.decoder_target.to_vector<int64_t>() == (Tokens{2, 1, 4, -1}), boost::test_tools::per_element());
  BOOST_TEST(b.target_mask.to_vector<float>() == (Floats{1, 1, 1, 0}), boost::test_tools::per_element());
  // The released mask counts the shorter example's last input (4), whose target is padding.
  BOOST_TEST(b.input_mask.to_vector<float>() == (Floats{1, 1, 1, 1}), boost::test_tools::per_element());
  BOOST_TEST((b.decoder_mask.shape() == Shape{2, 2, 2}));
  BOOST_TEST(b.decoder_mask.to_vector<float>() == (Floats{1, 0, 1, 1, 1, 0, 1, 1}), boost::test_tools::per_element());
  BOOST_TEST(!b.source_heap.defined());
  BOOST_TEST(!b.decoder_heap.defined());
}

BOOST_AUTO_TEST_CASE(order_of_indices_and_a_copy_batch) {
  const std::vector<TransductionExample> examples{
      sequence_example(SequenceTask::Copy, Tokens{7}, 20),        // 0 7 21
      sequence_example(SequenceTask::Copy, Tokens{8, 9, 10}, 20),  // 0 8 9 10 21
  };
  const TransductionBatch b = make_transduction_batch(examples, {1, 0});
  BOOST_TEST((b.decoder_input.shape() == Shape{2, 4}));
  BOOST_TEST(b.decoder_input.to_vector<int64_t>() == (Tokens{0, 8, 9, 10, 0, 7, 21, 0}), boost::test_tools::per_element());
  BOOST_TEST(b.decoder_target.to_vector<int64_t>() == (Tokens{8, 9, 10, 21, 7, 21, -1, -1}),
             boost::test_tools::per_element());
  BOOST_TEST(b.target_mask.to_vector<float>() == (Floats{1, 1, 1, 1, 1, 1, 0, 0}), boost::test_tools::per_element());
  BOOST_TEST(b.input_mask.to_vector<float>() == (Floats{1, 1, 1, 1, 1, 1, 1, 0}), boost::test_tools::per_element());
  // row 1: scored steps 0 and 1 attend causally among themselves; rows 2 and 3 (unscored) attend j <= i
  const Floats mask = b.decoder_mask.to_vector<float>();
  const Floats row1(mask.begin() + 16, mask.end());
  BOOST_TEST(row1 == (Floats{1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(trees_heap_positions_and_traversal_mask) {
  const BinaryTree big = parse_tree("(11 (12 1 2) 3)"), small = parse_tree("(13 4 5)");
  const std::vector<TransductionExample> examples{tree_example({big, big}, TreeOrder::DepthFirst),
                                                  tree_example({small, small}, TreeOrder::DepthFirst)};
  const TransductionBatch b = make_transduction_batch(examples, {0, 1});
  BOOST_TEST(b.source.to_vector<int64_t>() == (Tokens{0, 11, 12, 3, 1, 2, 0, 13, 4, 5, 0, 0}),
             boost::test_tools::per_element());
  BOOST_TEST(b.source_heap.to_vector<int64_t>() == (Tokens{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 0, 0}),
             boost::test_tools::per_element());
  // depth-first target: 0 11 12 1 2 3 (heap 0 1 2 4 5 3); T = 5
  BOOST_TEST(b.decoder_input.to_vector<int64_t>() == (Tokens{0, 11, 12, 1, 2, 0, 13, 4, 5, 0}),
             boost::test_tools::per_element());
  BOOST_TEST(b.decoder_target.to_vector<int64_t>() == (Tokens{11, 12, 1, 2, 3, 13, 4, 5, -1, -1}),
             boost::test_tools::per_element());
  BOOST_TEST(b.decoder_heap.to_vector<int64_t>() == (Tokens{0, 1, 2, 4, 5, 0, 1, 2, 3, 0}),
             boost::test_tools::per_element());
  const Floats mask = b.decoder_mask.to_vector<float>();
  for (int64_t bi = 0; bi < 2; ++bi)
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 5; ++j) BOOST_TEST(mask[static_cast<size_t>(bi * 25 + i * 5 + j)] == (j <= i ? 1.0f : 0.0f));
}

BOOST_AUTO_TEST_CASE(bad_batches_name_the_example) {
  const auto sequence = sequence_example(SequenceTask::Reverse, Tokens{1, 2}, 20);
  const auto tree = tree_example({parse_tree("(11 1 2)"), parse_tree("(11 1 2)")}, TreeOrder::BreadthFirst);
  TransductionExample single = sequence;
  single.target = {5};
  test::check_error([&] { make_transduction_batch({sequence, single}, {0, 1}); },
                    {"example 1", "target of 1 token", "at least 2"});
  test::check_error([&] { make_transduction_batch({sequence, tree}, {0, 1}); }, {"example 1 is a tree example", "sequence"});
  test::check_error([&] { make_transduction_batch({sequence}, {1}); }, {"index 1 is outside 0..0"});
  test::check_error([&] { make_transduction_batch({sequence}, {}); }, {"no examples"});
  TransductionExample broken = tree;
  broken.target_order.pop_back();
  test::check_error([&] { make_transduction_batch({broken}, {0}); }, {"example 0", "lengths differ"});
}

BOOST_AUTO_TEST_SUITE_END()

// The encoder-decoder golden files (tools/golden_encoder_decoder.py) batch their examples with a
// Python copy of these rules: posgrad must build exactly the batch stored beside them.
BOOST_AUTO_TEST_SUITE(transduction_batch_golden)

BOOST_AUTO_TEST_CASE(golden_files_hold_posgrads_batches) {
  for (const char* name : {"ape_postnorm", "sinusoidal_prenorm", "ape_tree_postnorm"}) {
    BOOST_TEST_CONTEXT(name) {
      const auto golden = load_safetensors(std::string(POSGRAD_SOURCE_DIR) + "/tests/golden/encoder_decoder_" +
                                           name + ".safetensors");
      std::vector<TransductionExample> examples;
      const auto list = [&](const std::string& key) {
        return golden.contains(key) ? golden.at(key).to_vector<int64_t>() : Tokens{};
      };
      for (int i = 0; golden.contains("example." + std::to_string(i) + ".source"); ++i) {
        const std::string prefix = "example." + std::to_string(i) + ".";
        examples.push_back({list(prefix + "source"), list(prefix + "target"), list(prefix + "source_heap"),
                            list(prefix + "target_heap"), list(prefix + "target_order")});
      }
      BOOST_REQUIRE(examples.size() >= 2u);
      std::vector<int64_t> all(examples.size());
      std::iota(all.begin(), all.end(), 0);
      const TransductionBatch b = make_transduction_batch(examples, all);
      const auto same = [&](const char* key, const Tensor& ours) {
        const Tensor& theirs = golden.at(key);
        BOOST_TEST_CONTEXT(key) {
          BOOST_REQUIRE((ours.shape() == theirs.shape()));
          BOOST_TEST(ours.to_vector<double>() == theirs.to_vector<double>(), boost::test_tools::per_element());
        }
      };
      same("source", b.source);
      same("source_mask", b.source_mask);
      same("decoder_input", b.decoder_input);
      same("decoder_target", b.decoder_target);
      same("decoder_mask", b.decoder_mask);
      BOOST_TEST(golden.contains("source_heap") == b.source_heap.defined());
      if (b.source_heap.defined()) {
        same("source_heap", b.source_heap);
        same("decoder_heap", b.decoder_heap);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
