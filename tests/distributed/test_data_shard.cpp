// Each rank's slice of a global batch: contiguous, B / size examples, the union over the ranks
// exactly the batch; a batch the ranks cannot share is refused naming the setting.
#include <boost/test/unit_test.hpp>

#include <numeric>

#include "distributed/data_shard.h"
#include "tensor/error.h"

using namespace posgrad;
using namespace posgrad::distributed;

BOOST_AUTO_TEST_SUITE(data_shard)

BOOST_AUTO_TEST_CASE(the_union_of_the_ranks_slices_is_the_epoch) {
  std::vector<std::vector<int64_t>> batches{{7, 3, 9, 1, 0, 5}, {2, 8, 4, 6, 11, 10}};
  for (int size : {1, 2, 3, 6}) {
    std::vector<std::vector<int64_t>> joined(batches.size());
    for (int rank = 0; rank < size; ++rank) {
      const auto mine = shard_batches(batches, rank, size, "train.batch_size");
      BOOST_REQUIRE_EQUAL(mine.size(), batches.size());
      for (size_t b = 0; b < mine.size(); ++b) {
        BOOST_TEST(static_cast<int>(mine[b].size()) * size == 6);
        joined[b].insert(joined[b].end(), mine[b].begin(), mine[b].end());
      }
    }
    BOOST_TEST(joined == batches, "size " << size);
  }
  const Shard s = shard_of_batch(16, 3, 4, "train.batch_size");
  BOOST_TEST(s.first == 12);
  BOOST_TEST(s.count == 4);
}

BOOST_AUTO_TEST_CASE(an_indivisible_batch_is_refused) {
  try {
    shard_of_batch(10, 0, 4, "train.batch_size");
    BOOST_FAIL("no error");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("train.batch_size 10 cannot be split evenly over 4 ranks") != std::string::npos,
               e.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()
