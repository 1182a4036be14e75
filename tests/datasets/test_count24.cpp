// count24: the label rule on hand-written sequences, generated data obeys it, seeding, and the
// positive rate against its exact value.
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "datasets/count24.h"
#include "datasets/data_loader.h"
#include "test_util.h"

using namespace posgrad;

BOOST_AUTO_TEST_SUITE(count24)

BOOST_AUTO_TEST_CASE(label_rule_on_hand_written_sequences) {
  const auto label = [](std::vector<int64_t> s) { return count24_label(s); };
  BOOST_TEST(label({2, 0, 0, 0, 0, 0, 0, 0, 0, 0}) == 1);  // one 2, no 4
  BOOST_TEST(label({4, 0, 0, 0, 0, 0, 0, 0, 0, 0}) == 0);  // one 4, no 2
  BOOST_TEST(label({0, 1, 3, 5, 6, 7, 8, 9, 0, 1}) == 0);  // neither: equal counts -> 0
  BOOST_TEST(label({2, 4, 2, 4, 0, 0, 0, 0, 0, 0}) == 0);  // 2 vs 2: equal -> 0
  BOOST_TEST(label({2, 4, 2, 4, 2, 0, 0, 0, 0, 0}) == 1);  // 3 vs 2
  BOOST_TEST(label({4, 4, 4, 2, 2, 9, 9, 9, 9, 9}) == 0);  // 2 vs 3
  BOOST_TEST(label({2, 2, 2, 2, 2, 2, 2, 2, 2, 2}) == 1);
  BOOST_TEST(label({4, 4, 4, 4, 4, 4, 4, 4, 4, 2}) == 0);
  BOOST_TEST(label({9, 8, 7, 6, 5, 4, 3, 2, 1, 2}) == 1);  // 2 vs 1
}

BOOST_AUTO_TEST_CASE(generated_data_follows_the_rule) {
  const Count24 data = make_count24(5000, 11);
  BOOST_TEST((data.inputs.shape() == Shape{5000, 10}));
  BOOST_TEST((data.labels.shape() == Shape{5000, 1}));
  BOOST_TEST((data.inputs.dtype() == kInt64));
  BOOST_TEST((data.labels.dtype() == kFloat32));
  const auto digits = data.inputs.to_vector<int64_t>();
  const auto labels = data.labels.to_vector<float>();
  std::vector<int64_t> histogram(10, 0);
  for (int64_t b = 0; b < 5000; ++b) {
    std::span<const int64_t> row(digits.data() + b * 10, 10);
    for (int64_t d : row) {
      BOOST_REQUIRE(d >= 0);
      BOOST_REQUIRE(d <= 9);
      ++histogram[static_cast<size_t>(d)];
    }
    BOOST_REQUIRE(labels[static_cast<size_t>(b)] == static_cast<float>(count24_label(row)));
  }
  for (int64_t c : histogram) BOOST_TEST(std::abs(c - 5000) < 400);  // 50,000 digits, ~5000 each
}

BOOST_AUTO_TEST_CASE(seeded_and_reproducible) {
  const Count24 a = make_count24(300, 1), b = make_count24(300, 1), c = make_count24(300, 2);
  BOOST_TEST((a.inputs.to_vector<int64_t>() == b.inputs.to_vector<int64_t>()));
  BOOST_TEST((a.labels.to_vector<float>() == b.labels.to_vector<float>()));
  BOOST_TEST((a.inputs.to_vector<int64_t>() != c.inputs.to_vector<int64_t>()));
  // A shorter set with the same seed is a prefix of the longer one.
  const Count24 prefix = make_count24(10, 1);
  const std::vector<int64_t> all = a.inputs.to_vector<int64_t>();
  BOOST_TEST((prefix.inputs.to_vector<int64_t>() == std::vector<int64_t>(all.begin(), all.begin() + 100)));
  posgrad::test::expect_error([] { make_count24(0, 1); }, {"make_count24", "0"});
}

BOOST_AUTO_TEST_CASE(positive_rate) {
  BOOST_TEST(std::abs(count24_positive_probability() - 0.3534301122) < 1e-9);
  const Count24 data = make_count24(20000, 3);
  const double fraction = positive_fraction(data.labels);
  BOOST_TEST_MESSAGE("count24 positives: " << fraction << " (exact " << count24_positive_probability() << ")");
  BOOST_TEST(std::abs(fraction - count24_positive_probability()) < 0.015);  // ~4.4 sigma
  BOOST_TEST(positive_fraction(Tensor::from_vector({1.f, 0.f, 0.f, 1.f}, {4})) == 0.5);
}

BOOST_AUTO_TEST_CASE(dataset_and_loader) {
  const Count24 data = make_count24(100, 5);
  auto ds = data.dataset();
  BOOST_TEST(ds->size() == 100);
  DataLoader loader(ds, 32, true, 5);
  int64_t total = 0;
  for (const Batch& b : loader.epoch(0)) {
    BOOST_TEST((b.input.dtype() == kInt64));
    BOOST_TEST(b.input.size(1) == 10);
    BOOST_TEST((b.target.shape() == Shape{b.input.size(0), 1}));
    total += b.input.size(0);
  }
  BOOST_TEST(total == 100);
}

BOOST_AUTO_TEST_SUITE_END()
