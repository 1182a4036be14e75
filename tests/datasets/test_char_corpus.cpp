// Char-level text: vocabulary, encode/decode, the 90/10 split, random windows (targets shifted by
// one), sequential evaluation windows, errors; Tiny Shakespeare when present.
#include <boost/test/unit_test.hpp>
#include <set>

#include "datasets/char_corpus.h"
#include "datasets/data_loader.h"
#include "test_util.h"

using namespace posgrad;
using posgrad::test::expect_error;
using posgrad::test::TempDir;

namespace {
const std::string kText =
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n";
}

BOOST_AUTO_TEST_SUITE(char_text)

BOOST_AUTO_TEST_CASE(vocabulary_is_sorted_unique_bytes) {
  const CharVocab v = CharVocab::from_text("banana\n");
  BOOST_TEST(v.size() == 4);
  BOOST_TEST((v.symbols() == std::vector<uint8_t>{'\n', 'a', 'b', 'n'}));
  BOOST_TEST((v.encode("nab") == std::vector<int64_t>{3, 1, 2}));
  BOOST_TEST(v.decode({2, 1, 3, 1, 3, 1, 0}) == "banana\n");
  expect_error([&] { v.encode("x"); }, {"'x'", "not in the vocabulary"});
  expect_error([&] { v.decode({4}); }, {"token id 4"});
  // Arbitrary bytes (UTF-8 pieces, NUL) round-trip.
  const std::string bytes("\x00\xc3\xa9z", 4);
  const CharVocab b = CharVocab::from_text(bytes);
  BOOST_TEST(b.decode(b.encode(bytes)) == bytes);
}

BOOST_AUTO_TEST_CASE(load_and_split) {
  TempDir dir;
  test::write_text(dir / "input.txt", kText);
  const CharCorpus c = CharCorpus::load(dir / "input.txt");
  const int64_t n = static_cast<int64_t>(kText.size());
  BOOST_TEST(c.size() == n);
  BOOST_TEST(c.size(TextSplit::Train) == n * 9 / 10);
  BOOST_TEST(c.size(TextSplit::Train) + c.size(TextSplit::Val) == n);
  BOOST_TEST(c.text(TextSplit::Train) + c.text(TextSplit::Val) == kText);
  BOOST_TEST(c.vocab().size() == static_cast<int64_t>(std::set<char>(kText.begin(), kText.end()).size()));
  const CharCorpus half = CharCorpus::from_text(kText, 0.5);
  BOOST_TEST(half.size(TextSplit::Train) == n / 2);
  // gzip text is read too.
  test::write_gzip(dir / "input.txt.gz", std::vector<uint8_t>(kText.begin(), kText.end()));
  BOOST_TEST(CharCorpus::load(dir / "input.txt.gz").text(TextSplit::Val) == c.text(TextSplit::Val));
}

BOOST_AUTO_TEST_CASE(random_windows_are_shifted_by_one) {
  const CharCorpus c = CharCorpus::from_text(kText);
  const std::string train = c.text(TextSplit::Train);
  Generator gen(3);
  const Batch b = c.sample_batch(TextSplit::Train, 6, 8, gen);
  BOOST_TEST((b.input.shape() == Shape{6, 8}));
  BOOST_TEST((b.target.shape() == Shape{6, 8}));
  BOOST_TEST((b.input.dtype() == kInt64));
  for (int64_t r = 0; r < 6; ++r) {
    std::vector<int64_t> in, tg;
    for (int64_t t = 0; t < 8; ++t) {
      in.push_back(b.input.at<int64_t>({r, t}));
      tg.push_back(b.target.at<int64_t>({r, t}));
    }
    const std::string si = c.vocab().decode(in), st = c.vocab().decode(tg);
    BOOST_TEST(si.substr(1) == st.substr(0, 7));
    const size_t at = train.find(si + st.back());  // the 9-byte window occurs in the train split
    BOOST_TEST(at != std::string::npos);
  }
  // Reproducible from the generator state; the generator advances.
  Generator again(3);
  const Batch b2 = c.sample_batch(TextSplit::Train, 6, 8, again);
  BOOST_TEST((b2.input.to_vector<int64_t>() == b.input.to_vector<int64_t>()));
  const Batch b3 = c.sample_batch(TextSplit::Train, 6, 8, again);
  BOOST_TEST((b3.input.to_vector<int64_t>() != b.input.to_vector<int64_t>()));
  // Window = split length - 1 is the largest allowed: the only start is 0.
  const int64_t val = c.size(TextSplit::Val);
  const Batch whole = c.sample_batch(TextSplit::Val, 2, val - 1, gen);
  BOOST_TEST(c.vocab().decode(whole.input.select(0, 1).to_vector<int64_t>()) == c.text(TextSplit::Val).substr(0, val - 1));
}

BOOST_AUTO_TEST_CASE(sequential_windows_cover_the_split) {
  const CharCorpus c = CharCorpus::from_text(kText, 0.5);
  const int64_t t = 5, l = c.size(TextSplit::Val);
  BOOST_TEST(c.num_windows(TextSplit::Val, t) == (l - 1) / t);
  const int64_t nb = c.num_sequential_batches(TextSplit::Val, 3, t);
  std::string inputs, targets;
  for (int64_t k = 0; k < nb; ++k) {
    const Batch b = c.sequential_batch(TextSplit::Val, 3, t, k);
    inputs += c.vocab().decode(b.input.to_vector<int64_t>());
    targets += c.vocab().decode(b.target.to_vector<int64_t>());
  }
  const std::string val = c.text(TextSplit::Val);
  const size_t covered = static_cast<size_t>(c.num_windows(TextSplit::Val, t) * t);
  BOOST_TEST(inputs == val.substr(0, covered));
  BOOST_TEST(targets == val.substr(1, covered));
  // The same through the windows dataset and an unshuffled DataLoader.
  DataLoader loader(c.windows(TextSplit::Val, t), 3);
  std::string via_loader;
  for (const Batch& b : loader.epoch(0)) via_loader += c.vocab().decode(b.input.to_vector<int64_t>());
  BOOST_TEST(via_loader == inputs);
  expect_error([&] { c.sequential_batch(TextSplit::Val, 3, t, nb); }, {"out of range"});
}

BOOST_AUTO_TEST_CASE(errors) {
  TempDir dir;
  test::write_text(dir / "empty.txt", "");
  expect_error([&] { CharCorpus::load(dir / "empty.txt"); }, {"empty.txt", "empty"});
  expect_error([&] { CharCorpus::load(dir / "absent.txt"); }, {"absent.txt", "file not found"});
  test::write_text(dir / "small.txt", "abcdefghijklmnopqrst");  // 18 train, 2 validation bytes
  const CharCorpus c = CharCorpus::load(dir / "small.txt");
  Generator gen(0);
  expect_error([&] { c.sample_batch(TextSplit::Val, 1, 2, gen); },
              {"small.txt", "window of 2 tokens needs 3", "validation split has only 2"});
  expect_error([&] { c.sample_batch(TextSplit::Train, 1, 18, gen); }, {"train split has only 18"});
  expect_error([&] { c.windows(TextSplit::Train, 0); }, {"window length"});
  expect_error([&] { CharCorpus::from_text("abc", 0.0); }, {"train_fraction"});
}

BOOST_AUTO_TEST_CASE(real_tiny_shakespeare, *boost::unit_test::precondition(test::data_present("tinyshakespeare"))) {
  const CharCorpus c = CharCorpus::load(test::data_dir() / "tinyshakespeare" / "input.txt");
  BOOST_TEST(c.size() == 1115394);
  BOOST_TEST(c.vocab().size() == 65);
  BOOST_TEST(c.size(TextSplit::Train) == 1003854);  // floor(0.9 * 1115394)
  BOOST_TEST(c.size(TextSplit::Val) == 111540);
  BOOST_TEST(c.vocab().decode(c.tokens(TextSplit::Train).narrow(0, 0, 14).to_vector<int64_t>()) == "First Citizen:");
  Generator gen(0);
  const Batch b = c.sample_batch(TextSplit::Train, 64, 256, gen);
  BOOST_TEST((b.input.shape() == Shape{64, 256}));
}

BOOST_AUTO_TEST_SUITE_END()
