// LR schedules at known steps. `step` is the number of updates already done; the formulas use
// k = step + 1. Expected values were computed by hand with Python's math module, e.g. Noam:
//   2.0 * 512**-0.5 * min(k**-0.5, k * 4000**-1.5)
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "nn/lr_schedule.h"
#include "tensor/error.h"

using namespace posgrad;

namespace {
bool close(double a, double b) { return std::abs(a - b) <= 1e-15 + 1e-12 * std::abs(b); }
}  // namespace

BOOST_AUTO_TEST_SUITE(lr_schedules)

BOOST_AUTO_TEST_CASE(constant) {
  ConstantLR s(0.5);
  BOOST_TEST(s.lr_at(0) == 0.5);
  BOOST_TEST(s.lr_at(123456789) == 0.5);
  BOOST_CHECK_THROW(s.lr_at(-1), Error);
  BOOST_CHECK_THROW(ConstantLR(-1.0), Error);
  BOOST_CHECK_THROW(ConstantLR(std::nan("")), Error);
}

BOOST_AUTO_TEST_CASE(warmup_then_constant) {
  // The adaptive-span convention: update k uses lr * min(1, k / warmup), so the first update is
  // not made at lr 0.
  WarmupConstantLR s(0.07, 4);
  BOOST_TEST(close(s.lr_at(0), 0.0175));
  BOOST_TEST(close(s.lr_at(1), 0.035));
  BOOST_TEST(close(s.lr_at(2), 0.0525));
  BOOST_TEST(s.lr_at(3) == 0.07);
  BOOST_TEST(s.lr_at(4) == 0.07);
  BOOST_TEST(s.lr_at(1000000) == 0.07);
  WarmupConstantLR from(0.07, 4, 1e-7);
  BOOST_TEST(close(from.lr_at(0), 0.017500075));
  BOOST_TEST(WarmupConstantLR(0.3, 0).lr_at(0) == 0.3);  // no warmup
  BOOST_CHECK_THROW(WarmupConstantLR(0.1, -1), Error);
}

BOOST_AUTO_TEST_CASE(warmup_then_cosine) {
  WarmupCosineLR s(1.0, 2, 6, 0.1);
  BOOST_TEST(close(s.lr_at(0), 0.5));
  BOOST_TEST(close(s.lr_at(1), 1.0));                  // k = warmup: peak
  BOOST_TEST(close(s.lr_at(2), 0.8681980515339464));   // 0.1 + 0.45 * (1 + cos(pi / 4))
  BOOST_TEST(close(s.lr_at(3), 0.55));                 // half way: the midpoint of peak and floor
  BOOST_TEST(close(s.lr_at(4), 0.23180194846605365));
  BOOST_TEST(close(s.lr_at(5), 0.1));                  // k = total: the floor
  BOOST_TEST(s.lr_at(6) == 0.1);
  BOOST_TEST(s.lr_at(1000) == 0.1);
  // Monotone decay after the warmup.
  WarmupCosineLR long_run(5e-4, 100, 10000, 1e-9, 1e-7);
  for (int64_t step = 100; step < 10000; ++step) BOOST_REQUIRE(long_run.lr_at(step) <= long_run.lr_at(step - 1));
  BOOST_TEST(close(long_run.lr_at(0), 1e-7 + (5e-4 - 1e-7) / 100));
  BOOST_CHECK_THROW(WarmupCosineLR(1.0, 10, 10), Error);      // total must exceed warmup
  BOOST_CHECK_THROW(WarmupCosineLR(1.0, 1, 10, 2.0), Error);  // floor above peak
}

BOOST_AUTO_TEST_CASE(noam) {
  NoamLR s(512, 4000, 2.0);
  BOOST_TEST(close(s.lr_at(0), 3.493856214843422e-07));
  BOOST_TEST(close(s.lr_at(1), 6.987712429686844e-07));
  BOOST_TEST(close(s.lr_at(99), 3.493856214843422e-05));
  BOOST_TEST(close(s.lr_at(3999), 0.0013975424859373686));  // the peak, at k = warmup
  BOOST_TEST(close(s.lr_at(4000), 0.001397367825874706));
  BOOST_TEST(close(s.lr_at(15999), 0.0006987712429686843));
  for (int64_t step = 1; step < 3999; ++step) BOOST_REQUIRE(s.lr_at(step) > s.lr_at(step - 1));
  BOOST_CHECK_THROW(NoamLR(0, 10), Error);
  BOOST_CHECK_THROW(NoamLR(512, 0), Error);
}

BOOST_AUTO_TEST_CASE(describe_names_the_parameters) {
  BOOST_TEST(NoamLR(512, 4000).describe() == "noam(d_model=512, warmup=4000, scale=1)");
  BOOST_TEST(ConstantLR(0.001).describe() == "constant(lr=0.001)");
}

BOOST_AUTO_TEST_SUITE_END()
