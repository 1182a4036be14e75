// IDX / MNIST: small raw and gzip files written here, every corruption case yields an Error that
// names the file and the problem; the real MNIST files when the shared data folder is present.
#include <boost/test/unit_test.hpp>

#include "datasets/idx.h"
#include "datasets/mnist.h"
#include "tensor/ops.h"
#include "test_util.h"

using namespace posgrad;
using posgrad::test::expect_error;
using posgrad::test::TempDir;

namespace {
void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}
// n images of rows x cols, pixel (i, r, c) = (i * 31 + r * cols + c) % 256.
std::vector<uint8_t> idx_images(uint32_t n, uint32_t rows, uint32_t cols) {
  std::vector<uint8_t> out;
  put_be32(out, kIdxImagesMagic);
  put_be32(out, n);
  put_be32(out, rows);
  put_be32(out, cols);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t p = 0; p < rows * cols; ++p) out.push_back(static_cast<uint8_t>((i * 31 + p) % 256));
  return out;
}
std::vector<uint8_t> idx_labels(const std::vector<uint8_t>& labels) {
  std::vector<uint8_t> out;
  put_be32(out, kIdxLabelsMagic);
  put_be32(out, static_cast<uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(mnist)

BOOST_AUTO_TEST_CASE(raw_and_gzip_files_load_identically) {
  TempDir dir;
  const auto images = idx_images(3, 28, 28);
  const auto labels = idx_labels({5, 0, 9});
  test::write_bytes(dir / "train-images-idx3-ubyte", images);
  test::write_bytes(dir / "train-labels-idx1-ubyte", labels);
  test::write_gzip(dir / "t10k-images-idx3-ubyte.gz", images);
  test::write_gzip(dir / "t10k-labels-idx1-ubyte.gz", labels);
  const Mnist raw = load_mnist(dir.path(), true);
  const Mnist gz = load_mnist(dir.path(), false);
  BOOST_TEST((raw.images.shape() == Shape{3, 1, 28, 28}));
  BOOST_TEST((raw.images.dtype() == kFloat32));
  BOOST_TEST((raw.labels.to_vector<int64_t>() == std::vector<int64_t>{5, 0, 9}));
  BOOST_TEST((raw.labels.dtype() == kInt64));
  BOOST_TEST(max_abs_diff(raw.images, gz.images) == 0.0);
  BOOST_TEST((gz.labels.to_vector<int64_t>() == raw.labels.to_vector<int64_t>()));
  // Pixel (image 1, row 2, col 3) = (31 + 2 * 28 + 3) % 256 = 90 -> 90 / 255.
  BOOST_TEST(raw.images.at<float>({1, 0, 2, 3}) == 90.0f / 255.0f);
  BOOST_TEST(raw.images.at<float>({0, 0, 0, 0}) == 0.0f);
  // [-1, 1]: (x / 255 - 0.5) / 0.5.
  const Mnist sym = load_mnist(dir.path(), true, PixelRange::Symmetric);
  BOOST_TEST(sym.images.at<float>({0, 0, 0, 0}) == -1.0f);
  BOOST_TEST(std::abs(sym.images.at<float>({1, 0, 2, 3}) - (90.0f / 255.0f - 0.5f) / 0.5f) < 1e-7f);
  auto ds = raw.dataset();
  BOOST_TEST(ds->size() == 3);
  BOOST_TEST((ds->get(2).input.shape() == Shape{1, 28, 28}));
}

BOOST_AUTO_TEST_CASE(other_image_sizes) {
  TempDir dir;
  test::write_bytes(dir / "img", idx_images(2, 4, 5));
  const Tensor t = load_idx_images(dir / "img");
  BOOST_TEST((t.shape() == Shape{2, 1, 4, 5}));
  BOOST_TEST(t.at<float>({1, 0, 3, 4}) == static_cast<float>((31 + 19) % 256) / 255.0f);
}

BOOST_AUTO_TEST_CASE(wrong_magic) {
  TempDir dir;
  test::write_bytes(dir / "labels-as-images", idx_labels({1, 2}));
  expect_error([&] { load_idx_images(dir / "labels-as-images"); },
              {"labels-as-images", "wrong magic number 0x00000801", "expected 0x00000803"});
  test::write_bytes(dir / "images-as-labels.gz", {});
  test::write_gzip(dir / "images-as-labels.gz", idx_images(1, 2, 2));
  expect_error([&] { load_idx_labels(dir / "images-as-labels.gz"); },
              {"images-as-labels.gz", "wrong magic number 0x00000803", "expected 0x00000801"});
  std::vector<uint8_t> floats = idx_images(1, 2, 2);
  floats[2] = 0x0D;  // float32 element type
  test::write_bytes(dir / "floats", floats);
  expect_error([&] { load_idx_images(dir / "floats"); }, {"floats", "element type 0x0d", "not supported"});
  test::write_text(dir / "text.idx", "hello, this is not IDX");
  expect_error([&] { load_idx_images(dir / "text.idx"); }, {"text.idx", "wrong magic"});
}

BOOST_AUTO_TEST_CASE(truncated_header) {
  TempDir dir;
  auto images = idx_images(1, 28, 28);
  test::write_bytes(dir / "short-header", std::vector<uint8_t>(images.begin(), images.begin() + 10));
  expect_error([&] { load_idx_images(dir / "short-header"); },
              {"short-header", "truncated header", "10 bytes", "expected 16"});
  test::write_bytes(dir / "tiny", {0, 0});
  expect_error([&] { load_idx_labels(dir / "tiny"); }, {"tiny", "truncated header"});
  test::write_bytes(dir / "empty", {});
  expect_error([&] { load_idx_labels(dir / "empty"); }, {"empty", "truncated header"});
}

BOOST_AUTO_TEST_CASE(truncated_data) {
  TempDir dir;
  auto images = idx_images(60000, 28, 28);
  images.resize(16 + 1000);
  test::write_gzip(dir / "train-images-idx3-ubyte.gz", images);
  expect_error([&] { load_idx_images(dir / "train-images-idx3-ubyte.gz"); },
              {"train-images-idx3-ubyte.gz", "expected 47040000 bytes of pixels, file has 1000"});
  auto labels = idx_labels({1, 2, 3, 4});
  labels.pop_back();
  test::write_bytes(dir / "labels", labels);
  expect_error([&] { load_idx_labels(dir / "labels"); }, {"labels", "expected 4 bytes of labels, file has 3"});
}

BOOST_AUTO_TEST_CASE(wrong_size_trailing_bytes) {
  TempDir dir;
  auto labels = idx_labels({1, 2, 3});
  labels.push_back(7);
  labels.push_back(7);
  test::write_bytes(dir / "long-labels", labels);
  expect_error([&] { load_idx_labels(dir / "long-labels"); }, {"long-labels", "wrong size", "2 extra"});
}

BOOST_AUTO_TEST_CASE(count_mismatch_between_images_and_labels) {
  TempDir dir;
  test::write_bytes(dir / "imgs", idx_images(3, 2, 2));
  test::write_bytes(dir / "lbls", idx_labels({1, 2}));
  expect_error([&] { load_mnist_files(dir / "imgs", dir / "lbls"); }, {"imgs", "3 images", "lbls", "2 labels"});
}

BOOST_AUTO_TEST_CASE(bad_label) {
  TempDir dir;
  test::write_bytes(dir / "lbls", idx_labels({1, 2, 12, 3}));
  expect_error([&] { load_idx_labels(dir / "lbls"); }, {"lbls", "label 12 at index 2", "0..9"});
}

BOOST_AUTO_TEST_CASE(corrupt_gzip_and_missing_files) {
  TempDir dir;
  test::write_gzip(dir / "whole.gz", idx_images(50, 28, 28));
  const auto gz = test::read_bytes(dir / "whole.gz");
  test::write_bytes(dir / "cut.gz", std::vector<uint8_t>(gz.begin(), gz.begin() + static_cast<long>(gz.size() / 2)));
  expect_error([&] { load_idx_images(dir / "cut.gz"); }, {"cut.gz", "gzip"});
  expect_error([&] { load_idx_images(dir / "nope.gz"); }, {"nope.gz", "file not found"});
  expect_error([&] { load_idx_images(dir.path()); }, {"is a directory"});
  expect_error([&] { load_mnist(dir.path(), true); }, {"train-images-idx3-ubyte.gz", "file not found"});
}

BOOST_AUTO_TEST_CASE(real_mnist, *boost::unit_test::precondition(test::data_present("mnist"))) {
  const auto dir = test::data_dir() / "mnist";
  const Mnist train = load_mnist(dir, true);
  const Mnist test_set = load_mnist(dir, false);
  BOOST_TEST((train.images.shape() == Shape{60000, 1, 28, 28}));
  BOOST_TEST((train.labels.shape() == Shape{60000}));
  BOOST_TEST((test_set.images.shape() == Shape{10000, 1, 28, 28}));
  BOOST_TEST(test_set.labels.size(0) == 10000);
  BOOST_TEST(train.labels.at<int64_t>({0}) == 5);
  BOOST_TEST(train.labels.at<int64_t>({1}) == 0);
  BOOST_TEST(test_set.labels.at<int64_t>({0}) == 7);
  BOOST_TEST(amin(train.images).item() == 0.0);
  BOOST_TEST(amax(train.images).item() == 1.0);
  const double m = mean(train.images).item();
  BOOST_TEST_MESSAGE("MNIST train pixel mean " << m);
  BOOST_TEST(std::abs(m - 0.1307) < 1e-3);  // the well-known MNIST mean
  const Mnist sym = load_mnist(dir, false, PixelRange::Symmetric);
  BOOST_TEST(amin(sym.images).item() == -1.0);
  BOOST_TEST(amax(sym.images).item() == 1.0);
}

BOOST_AUTO_TEST_SUITE_END()
