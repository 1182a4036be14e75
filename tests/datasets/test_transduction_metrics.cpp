// The transduction metrics on hand-computed cases: the paper's perplexity, the released code's
// shifted-mask variant (spec 10.13), exact match with ties, stability, accumulation and errors.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "datasets/transduction/transduction_metrics.h"
#include "tests/test_support.h"

using namespace posgrad;

BOOST_AUTO_TEST_SUITE(transduction_metrics)

namespace {
// B = 1, T = 3, V = 2: step 0 logits (0, 0) target 0; step 1 (ln 3, 0) target 0; step 2 padding.
Tensor logits() { return Tensor::from_vector(std::vector<double>{0, 0, std::log(3.0), 0, 5, -5}, {1, 3, 2}); }
Tensor targets() { return Tensor::from_vector(std::vector<int64_t>{0, 0, -1}, {1, 3}); }
Tensor scored() { return Tensor::from_vector({1.0f, 1.0f, 0.0f}, {1, 3}); }
Tensor inputs() { return Tensor::from_vector({1.0f, 1.0f, 1.0f}, {1, 3}); }
}  // namespace

BOOST_AUTO_TEST_CASE(perplexity_of_a_hand_computed_case) {
  // CE = ln 2 and -ln(3/4); mean = ln(8/3) / 2; perplexity sqrt(8/3)
  const TokenLoss loss = token_cross_entropy(logits(), targets(), scored());
  BOOST_TEST(loss.tokens == 2);
  BOOST_TEST(loss.loss_sum == std::log(2.0) + std::log(4.0 / 3.0), boost::test_tools::tolerance(1e-12));
  BOOST_TEST(loss.perplexity() == std::sqrt(8.0 / 3.0), boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(released_shifted_mask_counts_one_zero_loss_more) {
  // The padded step counts with loss 0: perplexity (8/3)^(1/3), lower than sqrt(8/3).
  const TokenLoss loss = released_token_cross_entropy(logits(), targets(), scored(), inputs());
  BOOST_TEST(loss.tokens == 3);
  BOOST_TEST(loss.loss_sum == std::log(8.0 / 3.0), boost::test_tools::tolerance(1e-12));
  BOOST_TEST(loss.perplexity() == std::cbrt(8.0 / 3.0), boost::test_tools::tolerance(1e-12));
  // With the input mask equal to the target mask it is the paper's metric.
  BOOST_TEST(released_token_cross_entropy(logits(), targets(), scored(), scored()).perplexity() ==
                 std::sqrt(8.0 / 3.0),
             boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(accumulating_batches_is_a_corpus_mean) {
  TokenLoss total;
  total.add(token_cross_entropy(logits(), targets(), scored()));
  // a second batch: one step, logits (0, 0, 0, 0) target 3 -> CE ln 4
  total.add(token_cross_entropy(Tensor::from_vector({0.0f, 0.0f, 0.0f, 0.0f}, {1, 1, 4}),
                                Tensor::from_vector(std::vector<int64_t>{3}, {1, 1}), Tensor::from_vector({1.0f}, {1, 1})));
  BOOST_TEST(total.tokens == 3);
  BOOST_TEST(total.mean() == (std::log(2.0) + std::log(4.0 / 3.0) + std::log(4.0)) / 3.0,
             boost::test_tools::tolerance(1e-12));
  test::check_error([] { TokenLoss{}.perplexity(); }, {"no tokens"});
}

BOOST_AUTO_TEST_CASE(large_logits_are_stable) {
  const Tensor big = Tensor::from_vector({1000.0f, 0.0f}, {1, 1, 2});
  const TokenLoss loss = token_cross_entropy(big, Tensor::from_vector(std::vector<int64_t>{1}, {1, 1}),
                                             Tensor::from_vector({1.0f}, {1, 1}));
  BOOST_TEST(loss.loss_sum == 1000.0, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(exact_match_of_whole_sequences) {
  // Row 0: argmax (tie -> index 0) = 0, then 0: matches. Row 1: step 1 predicts 1, target 0: no match;
  // its padded step predicts wrongly and does not count.
  const Tensor l = Tensor::from_vector({0.0f, 0.0f, 2.0f, 1.0f, 0.0f, 9.0f,  //
                                        3.0f, 1.0f, 0.0f, 1.0f, 0.0f, 9.0f},
                                       {2, 3, 2});
  const Tensor t = Tensor::from_vector(std::vector<int64_t>{0, 0, -1, 0, 0, -1}, {2, 3});
  const Tensor m = Tensor::from_vector({1.0f, 1.0f, 0.0f, 1.0f, 1.0f, 0.0f}, {2, 3});
  const ExactMatch match = exact_match(l, t, m);
  BOOST_TEST(match.matched == 1);
  BOOST_TEST(match.examples == 2);
  BOOST_TEST(match.accuracy() == 0.5);
  const Tensor right = Tensor::from_vector({0.0f, 0.0f, 2.0f, 1.0f, 0.0f, 9.0f,  //
                                            3.0f, 1.0f, 1.0f, 0.0f, 0.0f, 9.0f},
                                           {2, 3, 2});
  BOOST_TEST(exact_match(right, t, m).matched == 2);
}

BOOST_AUTO_TEST_CASE(bad_inputs_name_what_is_wrong) {
  test::check_error([] { token_cross_entropy(Tensor::from_vector({0.0f, 0.0f}, {1, 2}), targets(), scored()); },
                    {"logits must be a float [B, T, V]"});
  test::check_error([] { token_cross_entropy(logits(), Tensor::from_vector(std::vector<int64_t>{0, 0}, {1, 2}), scored()); },
                    {"targets must be int64 [1, 3]"});
  test::check_error([] { token_cross_entropy(logits(), targets(), Tensor::from_vector({1.0f, 1.0f}, {1, 2})); },
                    {"masks must be [1, 3]"});
  test::check_error([] { token_cross_entropy(logits(), targets(), inputs()); }, {"target -1", "row 0, step 2", "0..1"});
  test::check_error([] { exact_match(logits(), targets(), Tensor::from_vector({0.0f, 0.0f, 0.0f}, {1, 3})); },
                    {"batch row 0 has no scored position"});
}

BOOST_AUTO_TEST_SUITE_END()
