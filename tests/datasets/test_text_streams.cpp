// TextStreams (datasets/text_streams.h): rows and shifted targets, the restart at a random offset
// in [0, M) with the `restarted` flag when the data wraps, the evaluation blocks (final partial
// block skipped), resuming at a position, and the error for a segment longer than a row.
#include <boost/test/unit_test.hpp>

#include "datasets/text_streams.h"
#include "tensor/error.h"

using namespace posgrad;

namespace {
Tensor iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return Tensor::from_vector(v, {n});
}
}  // namespace

BOOST_AUTO_TEST_SUITE(text_streams)

BOOST_AUTO_TEST_CASE(rows_segments_targets_and_restarts) {
  // 103 tokens in 2 rows of 51 (the last token dropped); segments of 10.
  TextStreams s(iota(103), 2, 10, "test stream");
  BOOST_TEST(s.row_length() == 51);
  Generator gen(4);
  int64_t expected_pos = 0;
  for (int step = 0; step < 5; ++step) {  // positions 0, 10, 20, 30, 40 (40 + 10 + 1 = 51 fits)
    const auto seg = s.next(gen);
    BOOST_TEST(!seg.restarted);
    const auto in = seg.input.to_vector<int64_t>(), tg = seg.target.to_vector<int64_t>();
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t t = 0; t < 10; ++t) {
        BOOST_TEST(in[static_cast<size_t>(b * 10 + t)] == b * 51 + expected_pos + t);
        BOOST_TEST(tg[static_cast<size_t>(b * 10 + t)] == b * 51 + expected_pos + t + 1);
      }
    expected_pos += 10;
  }
  // The next segment would need column 60: restart at an offset in [0, 10) and say so.
  for (int wrap = 0; wrap < 20; ++wrap) {
    const auto seg = s.next(gen);
    BOOST_TEST(seg.restarted);
    const int64_t offset = seg.input.to_vector<int64_t>()[0];
    BOOST_TEST((offset >= 0 && offset < 10));
    while (s.position() + 10 + 1 <= s.row_length()) BOOST_TEST(!s.next(gen).restarted);
  }
}

BOOST_AUTO_TEST_CASE(evaluation_blocks_skip_the_partial_block) {
  TextStreams s(iota(8 * 35), 8, 10, "eval stream");  // rows of 35: blocks at 0, 10, 20 (30 + 10 + 1 > 35)
  BOOST_TEST(s.blocks() == 3);
  const auto last = s.block(2);
  BOOST_TEST(last.input.to_vector<int64_t>()[0] == 20);
  BOOST_TEST(last.target.to_vector<int64_t>()[9] == 30);
  BOOST_CHECK_THROW(s.block(3), Error);
}

BOOST_AUTO_TEST_CASE(resume_and_errors) {
  TextStreams s(iota(100), 1, 10, "stream");
  s.set_position(30);
  Generator gen(1);
  BOOST_TEST(s.next(gen).input.to_vector<int64_t>()[0] == 30);
  BOOST_CHECK_THROW(s.set_position(101), Error);
  try {
    TextStreams(iota(20), 2, 10, "the training split of x.txt");
    BOOST_FAIL("no error");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("a segment of 10 needs 11 per row") != std::string::npos, e.what());
    BOOST_TEST(std::string(e.what()).find("x.txt") != std::string::npos);
  }
  BOOST_CHECK_THROW(TextStreams(iota(20), 0, 5, "s"), Error);
  BOOST_CHECK_THROW(TextStreams(iota(20), 1, 0, "s"), Error);
}

BOOST_AUTO_TEST_SUITE_END()
