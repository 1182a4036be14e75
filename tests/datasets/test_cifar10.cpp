// CIFAR-10 binary: records written here (layout, pixel mapping, concatenation, optional test
// batch, sequence/channels-last views), corruption cases, the seeded 80/20 split, and the real
// files when present.
#include <boost/test/unit_test.hpp>
#include <set>

#include "datasets/cifar10.h"
#include "datasets/image_sequence.h"
#include "datasets/split.h"
#include "tensor/ops.h"
#include "test_util.h"

using namespace posgrad;
using posgrad::test::expect_error;
using posgrad::test::TempDir;

namespace {
// Record r: label, then byte (c, y, x) = (r + 3 * c + y * 32 + x) % 256.
std::vector<uint8_t> cifar_records(int n, int label_offset = 0) {
  std::vector<uint8_t> out;
  for (int r = 0; r < n; ++r) {
    out.push_back(static_cast<uint8_t>((r + label_offset) % 10));
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < 1024; ++p) out.push_back(static_cast<uint8_t>((r + 3 * c + p) % 256));
  }
  return out;
}
float sym(int x) { return (static_cast<float>(x) / 255.0f - 0.5f) / 0.5f; }
}  // namespace

BOOST_AUTO_TEST_SUITE(cifar10)

BOOST_AUTO_TEST_CASE(records_decode_into_planes) {
  TempDir dir;
  test::write_bytes(dir / "b.bin", cifar_records(4));
  const Cifar10 c = load_cifar10_files({dir / "b.bin"});
  BOOST_TEST((c.images.shape() == Shape{4, 3, 32, 32}));
  BOOST_TEST((c.images.dtype() == kFloat32));
  BOOST_TEST((c.labels.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3}));
  // Record 2, green (c = 1), row 5, col 7: (2 + 3 + 5 * 32 + 7) % 256 = 172.
  BOOST_TEST(c.images.at<float>({2, 1, 5, 7}) == sym(172));
  BOOST_TEST(c.images.at<float>({0, 0, 0, 0}) == -1.0f);
  BOOST_TEST(amax(c.images).item() == 1.0);
  const Cifar10 unit = load_cifar10_files({dir / "b.bin"}, PixelRange::Unit);
  BOOST_TEST(unit.images.at<float>({2, 1, 5, 7}) == 172.0f / 255.0f);
}

BOOST_AUTO_TEST_CASE(train_batches_concatenate_and_test_batch_is_optional) {
  TempDir dir;
  // Batches of 2 records here (CIFAR-10's hold 10,000: see the next case).
  constexpr auto kSym = PixelRange::Symmetric;
  for (int b = 1; b <= 5; ++b) test::write_bytes(dir / fmt::format("data_batch_{}.bin", b), cifar_records(2, b));
  const Cifar10 train = load_cifar10_train(dir.path(), kSym, 5, 2);
  BOOST_TEST(train.size() == 10);
  // Batch 3's first record has label (0 + 3) % 10.
  BOOST_TEST(train.labels.at<int64_t>({4}) == 3);
  BOOST_TEST(!load_cifar10_test(dir.path()).has_value());
  test::write_bytes(dir / "test_batch.bin", cifar_records(3));
  const auto test_set = load_cifar10_test(dir.path(), kSym, 3);
  BOOST_REQUIRE(test_set.has_value());
  BOOST_TEST(test_set->size() == 3);
  std::filesystem::remove(dir / "data_batch_4.bin");
  expect_error([&] { load_cifar10_train(dir.path(), kSym, 5, 2); }, {"data_batch_4.bin", "file not found"});
  // A partial copy: the first k batches only.
  const Cifar10 first_three = load_cifar10_train(dir.path(), kSym, 3, 2);
  BOOST_TEST(first_three.size() == 6);
  BOOST_TEST(first_three.labels.at<int64_t>({4}) == 3);
  expect_error([&] { load_cifar10_train(dir.path(), kSym, 0, 2); }, {"0 training batches", "data_batch_5"});
  expect_error([&] { load_cifar10_train(dir.path(), kSym, 6, 2); }, {"6 training batches"});
}

BOOST_AUTO_TEST_CASE(corrupt_files) {
  TempDir dir;
  auto records = cifar_records(2);
  records.resize(records.size() + 5);
  test::write_bytes(dir / "odd.bin", records);
  expect_error([&] { load_cifar10_files({dir / "odd.bin"}); },
              {"odd.bin", "6151 bytes is not a multiple of the 3073-byte"});
  auto bad = cifar_records(3);
  bad[2 * 3073] = 10;
  test::write_bytes(dir / "bad_label.bin", bad);
  expect_error([&] { load_cifar10_files({dir / "bad_label.bin"}); }, {"bad_label.bin", "label 10 in record 2"});
  test::write_bytes(dir / "empty.bin", {});
  expect_error([&] { load_cifar10_files({dir / "empty.bin"}); }, {"empty.bin", "empty"});
  expect_error([&] { load_cifar10_files({dir / "missing.bin"}); }, {"missing.bin", "file not found"});
}

// Every batch file of CIFAR-10 holds exactly 10,000 records: one cut at a record boundary has a
// valid size, and used to load as fewer images without a word.
BOOST_AUTO_TEST_CASE(a_batch_file_cut_at_a_record_boundary_is_refused) {
  TempDir dir;
  test::write_bytes(dir / "data_batch_1.bin", cifar_records(3));
  expect_error([&] { load_cifar10_train(dir.path(), PixelRange::Symmetric, 1); },
               {"data_batch_1.bin", "holds 3 records", "exactly 10000"});
  test::write_bytes(dir / "test_batch.bin", cifar_records(2));
  expect_error([&] { load_cifar10_test(dir.path()); }, {"test_batch.bin", "holds 2 records", "exactly 10000"});
  // A batch of the size the caller expects loads; one record short is refused, naming that file.
  test::write_bytes(dir / "data_batch_2.bin", cifar_records(2));
  expect_error([&] { load_cifar10_train(dir.path(), PixelRange::Symmetric, 2, 3); },
               {"data_batch_2.bin", "holds 2 records", "exactly 3"});
}

BOOST_AUTO_TEST_CASE(sequence_and_channels_last_views) {
  TempDir dir;
  test::write_bytes(dir / "b.bin", cifar_records(2));
  const Cifar10 c = load_cifar10_files({dir / "b.bin"});
  const Tensor seq = images_to_sequence(c.images);
  const Tensor last = images_to_channels_last(c.images);
  BOOST_TEST((seq.shape() == Shape{2, 1024, 3}));
  BOOST_TEST((last.shape() == Shape{2, 32, 32, 3}));
  BOOST_TEST(seq.is_contiguous());
  for (int64_t p : {0, 1, 33, 1023})
    for (int64_t ch = 0; ch < 3; ++ch) {
      BOOST_TEST(seq.at<float>({1, p, ch}) == c.images.at<float>({1, ch, p / 32, p % 32}));
      BOOST_TEST(last.at<float>({1, p / 32, p % 32, ch}) == c.images.at<float>({1, ch, p / 32, p % 32}));
    }
  expect_error([&] { images_to_sequence(Tensor::zeros({3, 4})); }, {"images_to_sequence", "[B, C, H, W]"});
}

BOOST_AUTO_TEST_CASE(random_split_protocol) {
  const SplitIndices a = random_split_indices(50000, 0.2, 1);
  BOOST_TEST(a.train.size() == 40000u);
  BOOST_TEST(a.val.size() == 10000u);
  std::set<int64_t> all(a.train.begin(), a.train.end());
  all.insert(a.val.begin(), a.val.end());
  BOOST_TEST(all.size() == 50000u);
  BOOST_TEST(*all.begin() == 0);
  BOOST_TEST(*all.rbegin() == 49999);
  const SplitIndices again = random_split_indices(50000, 0.2, 1);
  BOOST_TEST((again.val == a.val));
  BOOST_TEST((random_split_indices(50000, 0.2, 2).val != a.val));
  const SplitIndices odd = random_split_indices(11, 0.2, 0);  // floor(2.2) = 2 validation
  BOOST_TEST(odd.train.size() == 9u);
  BOOST_TEST(odd.val.size() == 2u);
  expect_error([] { random_split_indices(10, 1.0, 0); }, {"val_fraction"});
}

BOOST_AUTO_TEST_CASE(real_cifar10, *boost::unit_test::precondition(test::data_present("cifar10"))) {
  const auto dir = test::data_dir() / "cifar10";
  const Cifar10 b1 = load_cifar10_files({dir / "data_batch_1.bin"});
  BOOST_TEST((b1.images.shape() == Shape{10000, 3, 32, 32}));
  BOOST_TEST(b1.labels.size(0) == 10000);
  BOOST_TEST(b1.labels.at<int64_t>({0}) == 6);  // the first CIFAR-10 training image is a frog
  BOOST_TEST(amin(b1.images).item() == -1.0);
  BOOST_TEST(amax(b1.images).item() == 1.0);
  std::vector<int64_t> per_class(10, 0);
  for (int64_t y : b1.labels.to_vector<int64_t>()) ++per_class[static_cast<size_t>(y)];
  for (int64_t c : per_class) BOOST_TEST((c > 900 && c < 1100));
  const auto names = cifar10_class_names(dir);
  BOOST_TEST(names.size() == 10u);
  BOOST_TEST(names[6] == "frog");

  const Cifar10Splits s = load_cifar10_posattn(dir, 17);
  BOOST_TEST(s.all.size() == 50000);
  BOOST_TEST(s.parts.train->size() == 40000);
  BOOST_TEST(s.parts.val->size() == 10000);
  BOOST_TEST((s.parts.val->indices() == random_split_indices(50000, 0.2, 17).val));
  // The parts index the loaded images: validation example 0 is image val.indices()[0].
  const int64_t i0 = s.parts.val->indices()[0];
  const Batch b = s.parts.val->get_batch({0});
  BOOST_TEST(max_abs_diff(b.input.select(0, 0), s.all.images.select(0, i0)) == 0.0);
  BOOST_TEST(b.target.at<int64_t>({0}) == s.all.labels.at<int64_t>({i0}));
}

BOOST_AUTO_TEST_SUITE_END()
