// MaskRows (nn/mask_rows.h): the masks a data-parallel rank draws for its rows of a global batch
// are the single process's masks of those rows, for Bernoulli draws, Dropout (activations and
// attention-probability shapes) and DropPath; every rank's generator ends where the single
// process's does; without a scope the draws are unchanged; a mask that is not whole rows is one
// clear error; scopes nest.
// Rows of 3 x 7 = 21 elements, not a multiple of Philox's 4 lanes, so a rank's first element
// lies inside a counter block.
#include <boost/test/unit_test.hpp>

#include <vector>

#include "nn/drop_path.h"
#include "nn/dropout.h"
#include "nn/mask_rows.h"
#include "tensor/ops.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_error;

namespace {

// The rank splits of a global batch of 5 rows: one process, two ranks (uneven), five ranks.
const std::vector<std::vector<MaskRows>> kSplits = {
    {{0, 5, 5}}, {{0, 3, 5}, {3, 2, 5}}, {{0, 1, 5}, {1, 1, 5}, {2, 1, 5}, {3, 1, 5}, {4, 1, 5}}};

}  // namespace

BOOST_AUTO_TEST_SUITE(mask_rows)

BOOST_AUTO_TEST_CASE(a_ranks_bernoulli_rows_are_the_global_draws_rows) {
  for (const auto& split : kSplits) {
    Generator single(77);
    single.reserve(3);  // a generator part-way through its stream
    const Tensor global = bernoulli({5, 3, 7}, 0.5, single);  // [B, 3, 7]
    const Tensor second = bernoulli({5, 3, 7}, 0.5, single);  // the next step's draw
    for (const MaskRows& rows : split) {
      Generator rank(77);
      rank.reserve(3);
      Tensor mine, next;
      {
        MaskRowsScope scope(rows);
        mine = bernoulli_for_rows({rows.count, 3, 7}, 0.5, rank, kFloat32, kCPU, "test");
        next = bernoulli_for_rows({rows.count, 3, 7}, 0.5, rank, kFloat32, kCPU, "test");
      }
      BOOST_TEST(max_abs_diff(mine, global.narrow(0, rows.first, rows.count)) == 0.0);
      BOOST_TEST(max_abs_diff(next, second.narrow(0, rows.first, rows.count)) == 0.0);
      BOOST_TEST(rank.offset() == single.offset());
      BOOST_TEST(rank.seed() == single.seed());
    }
  }
}

BOOST_AUTO_TEST_CASE(dropout_and_drop_path_of_a_ranks_rows_equal_the_global_ones) {
  Generator data(5);
  const Tensor x = normal({5, 3, 7}, 0, 1, data);     // [B, T, D]
  const Tensor probs = uniform({5, 2, 3, 3}, 0, 1, data);  // [B, H, T, S]
  for (const Tensor& input : {x, probs}) {
    Generator g(9), h(9);
    const Tensor dropped = dropout(Variable(input), 0.4, true, g).value();
    const Tensor paths = drop_path(Variable(input), 0.4, true, true, g).value();
    for (const MaskRows& rows : kSplits[1]) {
      Generator rank(9);
      MaskRowsScope scope(rows);
      const Tensor mine = input.narrow(0, rows.first, rows.count).contiguous();
      BOOST_TEST(max_abs_diff(dropout(Variable(mine), 0.4, true, rank).value(), dropped.narrow(0, rows.first, rows.count)) == 0.0);
      BOOST_TEST(max_abs_diff(drop_path(Variable(mine), 0.4, true, true, rank).value(), paths.narrow(0, rows.first, rows.count)) == 0.0);
      BOOST_TEST(rank.offset() == g.offset());
    }
    // The same draws without a scope: unchanged streams (old checkpoints' generators continue).
    BOOST_TEST(max_abs_diff(dropout(Variable(input), 0.4, true, h).value(), dropped) == 0.0);
  }
}

BOOST_AUTO_TEST_CASE(without_a_scope_the_draw_is_bernoulli_and_scopes_nest) {
  Generator a(3), b(3);
  BOOST_TEST(current_mask_rows() == nullptr);
  BOOST_TEST(max_abs_diff(bernoulli_for_rows({4, 6}, 0.3, a, kFloat32, kCPU, "test"), bernoulli({4, 6}, 0.3, b)) == 0.0);
  {
    MaskRowsScope outer({.first = 2, .count = 2, .global = 4});
    {
      MaskRowsScope inner({.first = 0, .count = 1, .global = 3});
      BOOST_TEST(current_mask_rows()->global == 3);
    }
    BOOST_TEST(current_mask_rows()->first == 2);
  }
  BOOST_TEST(current_mask_rows() == nullptr);
}

BOOST_AUTO_TEST_CASE(a_mask_that_is_not_whole_rows_is_one_clear_error) {
  Generator g(1);
  MaskRowsScope scope({.first = 0, .count = 2, .global = 4});
  check_error([&] { dropout(Variable(Tensor::ones({3, 4})), 0.5, true, g); },
              {"dropout: a mask of shape [3, 4] is not batch-major over the 2 rows this process computes (MaskRows)"});
  check_error([] { MaskRowsScope bad({.first = 3, .count = 2, .global = 4}); },
              {"MaskRows: rows [3, 5) are not rows of a global batch of 4"});
}

BOOST_AUTO_TEST_SUITE_END()
