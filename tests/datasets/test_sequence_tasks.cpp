// The sequence transduction tasks (APE spec 7.2): each task's example on hand-written words, token
// ranges refused, the split sizes and length distribution of the paper's recipe, the generation
// order (one stream: a part's lengths, then its words), reproducibility and a golden hash.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "datasets/seeding.h"
#include "datasets/transduction/sequence_tasks.h"
#include "tests/test_support.h"
#include "transduction_test_util.h"

using namespace posgrad;
using Tokens = std::vector<int64_t>;

BOOST_AUTO_TEST_SUITE(sequence_tasks)

BOOST_AUTO_TEST_CASE(examples_of_hand_written_words) {
  const Tokens word{3, 1, 19};
  const TransductionExample copy = sequence_example(SequenceTask::Copy, Tokens{3, 1, 20}, 20);
  BOOST_TEST(copy.source == (Tokens{0, 3, 1, 20, 21}), boost::test_tools::per_element());  // SOS = 0, EOS = V + 1
  BOOST_TEST(copy.target == copy.source, boost::test_tools::per_element());
  const TransductionExample repeat = sequence_example(SequenceTask::Repeat, word, 20);
  BOOST_TEST(repeat.source == word, boost::test_tools::per_element());
  BOOST_TEST(repeat.target == (Tokens{3, 1, 19, 3, 1, 19}), boost::test_tools::per_element());
  const TransductionExample reverse = sequence_example(SequenceTask::Reverse, word, 20);
  BOOST_TEST(reverse.source == word, boost::test_tools::per_element());
  BOOST_TEST(reverse.target == (Tokens{19, 1, 3}), boost::test_tools::per_element());
  for (const auto* e : {&copy, &repeat, &reverse}) {
    BOOST_TEST(e->source_heap.empty());
    BOOST_TEST(e->target_order.empty());
  }
}

BOOST_AUTO_TEST_CASE(tokens_outside_the_task_range_are_refused) {
  test::check_error([] { sequence_example(SequenceTask::Copy, Tokens{1, 21}, 20); }, {"copy", "token 21", "index 1", "1..20"});
  test::check_error([] { sequence_example(SequenceTask::Repeat, Tokens{20}, 20); }, {"repeat", "token 20", "1..19"});
  test::check_error([] { sequence_example(SequenceTask::Reverse, Tokens{0, 1}, 20); }, {"reverse", "token 0"});
  test::check_error([] { sequence_example(SequenceTask::Copy, Tokens{}, 20); }, {"empty"});
  test::check_error([] { parse_sequence_task("mirror"); }, {"'mirror'", "copy, repeat, reverse"});
  BOOST_TEST((parse_sequence_task("reverse") == SequenceTask::Reverse));
}

BOOST_AUTO_TEST_CASE(the_papers_splits_sizes_lengths_and_tokens) {
  for (SequenceTask task : {SequenceTask::Copy, SequenceTask::Repeat, SequenceTask::Reverse}) {
    BOOST_TEST_CONTEXT(sequence_task_name(task)) {
      const TransductionSplits splits = make_sequence_splits(task);
      BOOST_TEST(splits.train.size() == 6000u);
      BOOST_TEST(splits.dev.size() == 2000u);
      BOOST_TEST(splits.test.size() == 2000u);
      double sum = 0, squares = 0;
      int64_t count = 0;
      std::vector<int64_t> histogram(22, 0);
      for (const auto* part : {&splits.train, &splits.dev, &splits.test})
        for (const TransductionExample& e : *part) {
          Tokens word = e.source;
          if (task == SequenceTask::Copy) {
            BOOST_REQUIRE(e.source.front() == kSosToken);
            BOOST_REQUIRE(e.source.back() == 21);
            word = Tokens(e.source.begin() + 1, e.source.end() - 1);
          }
          BOOST_REQUIRE((sequence_example(task, word, 20) == e));  // the target is the task's function of the word
          for (int64_t t : word) ++histogram[static_cast<size_t>(t)];
          const auto n = static_cast<double>(word.size());
          sum += n;
          squares += n * n;
          ++count;
        }
      const double mean = sum / count, stddev = std::sqrt(squares / count - mean * mean);
      // int() truncation of Normal(100, 10): mean about 99.5, standard deviation about 10.
      BOOST_TEST(std::abs(mean - 99.5) < 0.5, "mean length " << mean);
      BOOST_TEST(std::abs(stddev - 10.0) < 0.5, "length standard deviation " << stddev);
      const int64_t max_token = sequence_task_max_token(task, 20);
      BOOST_TEST(histogram[0] == 0);
      for (int64_t t = 1; t <= max_token; ++t)  // uniform tokens: each within 5% of its share
        BOOST_TEST(std::abs(histogram[static_cast<size_t>(t)] / (sum / max_token) - 1.0) < 0.05, "token " << t);
      for (int64_t t = max_token + 1; t < 22; ++t) BOOST_TEST(histogram[static_cast<size_t>(t)] == 0);
    }
  }
}

BOOST_AUTO_TEST_CASE(one_stream_lengths_of_a_part_first_then_its_words) {
  const SequenceTaskSettings settings;
  const TransductionSplits splits = make_sequence_splits(SequenceTask::Reverse, settings, {5, 3, 4}, 7);
  DrawStream stream(derive_seed(7, SeedStream::Transduction));
  Tokens lengths;
  for (int i = 0; i < 5; ++i) lengths.push_back(draw_sequence_length(settings, stream));
  for (int i = 0; i < 5; ++i) {
    Tokens word(static_cast<size_t>(lengths[static_cast<size_t>(i)]));
    for (int64_t& t : word) t = stream.integer(1, 19);
    BOOST_TEST((sequence_example(SequenceTask::Reverse, word, 20) == splits.train[static_cast<size_t>(i)]));
  }
  // dev and test continue the same stream
  BOOST_TEST((draw_sequence_examples(SequenceTask::Reverse, settings, 3, stream) == splits.dev));
  BOOST_TEST((draw_sequence_examples(SequenceTask::Reverse, settings, 4, stream) == splits.test));
}

BOOST_AUTO_TEST_CASE(same_seed_same_data_and_a_golden_hash) {
  const auto a = make_sequence_splits(SequenceTask::Copy), b = make_sequence_splits(SequenceTask::Copy);
  BOOST_TEST((a.train == b.train && a.dev == b.dev && a.test == b.test));
  const auto other = make_sequence_splits(SequenceTask::Copy, {}, {}, 43);
  BOOST_TEST(!(other.train[0] == a.train[0]));
  // The first three examples of every part, for each task: any change in generation shows here.
  BOOST_TEST(test::splits_fingerprint(a, 3) == "ae84fa258521881e0b878add203fbe5999e3ddc5c9528beb58ddefd728756efc");
  BOOST_TEST(test::splits_fingerprint(make_sequence_splits(SequenceTask::Repeat), 3) == "275d672d198468ed755eba5c7e6878fe8c92002d41957dd3e20e4c8d7c8acf16");
  BOOST_TEST(test::splits_fingerprint(make_sequence_splits(SequenceTask::Reverse), 3) == "6f3b8875b7680036b70e44e0f15f19e311df075db30ae38759ce9c491dbd8cc1");
}

BOOST_AUTO_TEST_CASE(draw_stream_ranges_and_repeatability) {
  DrawStream a(5), b(5);
  std::vector<int64_t> counts(3, 0);
  for (int i = 0; i < 3000; ++i) {
    const int64_t x = a.integer(-1, 1);
    BOOST_REQUIRE(x == b.integer(-1, 1));
    BOOST_REQUIRE(x >= -1);
    BOOST_REQUIRE(x <= 1);
    ++counts[static_cast<size_t>(x + 1)];
  }
  for (int64_t c : counts) BOOST_TEST(std::abs(c - 1000) < 100);
  BOOST_TEST(a.draws() == 3000u);
  test::check_error([&] { a.integer(2, 1); }, {"empty range [2, 1]"});
  test::check_error([&] { a.choice({}); }, {"nothing to choose"});
}

BOOST_AUTO_TEST_SUITE_END()
