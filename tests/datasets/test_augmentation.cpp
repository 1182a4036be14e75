// Image augmentation (datasets/byte_image.h, autoaugment.h, augmented_images.h): every
// AutoAugment operation and the crop / flip / normalise steps against images computed by hand
// from the definitions in autoaugment.h, the policy table, and the reproducibility of
// AugmentedImages (an example's augmentation depends on (seed, epoch, index) only).
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "datasets/augmented_images.h"
#include "datasets/autoaugment.h"
#include "datasets/byte_image.h"
#include "tensor/ops.h"
#include "tests/test_support.h"

using namespace posgrad;

namespace {

ByteImage image(int64_t c, int64_t y, int64_t x, std::vector<uint8_t> pixels) {
  ByteImage im(c, y, x);
  BOOST_REQUIRE(pixels.size() == im.pixels.size());
  im.pixels = std::move(pixels);
  return im;
}

std::vector<int> ints(const ByteImage& im) { return {im.pixels.begin(), im.pixels.end()}; }

const ByteImage kSquare = image(1, 2, 2, {1, 2, 3, 4});  // [[1, 2], [3, 4]]

}  // namespace

BOOST_AUTO_TEST_SUITE(augmentation)

BOOST_AUTO_TEST_CASE(geometric_ops_by_hand) {
  // ShearX 0.5: out(x, y) = in(floor(x + .5 + .5 (y + .5)), y); (1, 1) reads x = 2: outside -> 128.
  BOOST_TEST(ints(apply_augment_op(kSquare, AugmentOp::ShearX, 0.5)) == std::vector<int>({1, 2, 4, 128}));
  // ShearY 0.5: out(x, y) = in(x, floor(y + .5 + .5 (x + .5))).
  BOOST_TEST(ints(apply_augment_op(kSquare, AugmentOp::ShearY, 0.5)) == std::vector<int>({1, 4, 3, 128}));
  BOOST_TEST(ints(apply_augment_op(kSquare, AugmentOp::TranslateX, 1)) == std::vector<int>({2, 128, 4, 128}));
  BOOST_TEST(ints(apply_augment_op(kSquare, AugmentOp::TranslateY, -1)) == std::vector<int>({128, 128, 1, 2}));
  // Rotate 90 degrees counter-clockwise: the top row becomes the left column, bottom to top.
  BOOST_TEST(ints(apply_augment_op(kSquare, AugmentOp::Rotate, 90)) == std::vector<int>({2, 4, 1, 3}));
  BOOST_TEST(ints(apply_augment_op(kSquare, AugmentOp::Rotate, -90)) == std::vector<int>({3, 1, 4, 2}));
  BOOST_TEST(ints(apply_augment_op(kSquare, AugmentOp::Rotate, 0)) == ints(kSquare));
}

BOOST_AUTO_TEST_CASE(pixel_ops_by_hand) {
  const ByteImage px = image(1, 1, 4, {127, 128, 200, 183});
  BOOST_TEST(ints(apply_augment_op(px, AugmentOp::Invert, 0)) == std::vector<int>({128, 127, 55, 72}));
  BOOST_TEST(ints(apply_augment_op(px, AugmentOp::Solarize, 128)) == std::vector<int>({127, 127, 55, 72}));
  BOOST_TEST(ints(apply_augment_op(px, AugmentOp::Solarize, 256)) == ints(px));
  // 4 bits: 183 = 0b10110111 -> 0b10110000 = 176; 127 -> 112; 128 -> 128; 200 = 0b11001000 -> 192.
  BOOST_TEST(ints(apply_augment_op(px, AugmentOp::Posterize, 4)) == std::vector<int>({112, 128, 192, 176}));
  // Brightness: f x truncated and clipped: 1.5 * (3, 100, 200, 171) = 4.5, 150, 300, 256.5.
  const ByteImage b = image(1, 1, 4, {3, 100, 200, 171});
  BOOST_TEST(ints(apply_augment_op(b, AugmentOp::Brightness, 1.5)) == std::vector<int>({4, 150, 255, 255}));
  BOOST_TEST(ints(apply_augment_op(b, AugmentOp::Brightness, 0.5)) == std::vector<int>({1, 50, 100, 85}));
}

BOOST_AUTO_TEST_CASE(colour_and_contrast_by_hand) {
  // Pure red: L = (255 * 19595 + 32768) >> 16 = 76. Color 0 = grey; Color 2 = 76 + 2 (x - 76), clipped.
  const ByteImage red = image(3, 1, 1, {255, 0, 0});
  BOOST_TEST(ints(apply_augment_op(red, AugmentOp::Color, 0.0)) == std::vector<int>({76, 76, 76}));
  BOOST_TEST(ints(apply_augment_op(red, AugmentOp::Color, 2.0)) == std::vector<int>({255, 0, 0}));
  BOOST_TEST(ints(apply_augment_op(red, AugmentOp::Color, 0.5)) == std::vector<int>({165, 38, 38}));  // 76 + 89.5, 76 - 38
  // White and black: grey levels 255 and 0, mean 127.5 -> 128. Contrast 0 = all 128.
  const ByteImage bw = image(3, 1, 2, {255, 0, 255, 0, 255, 0});
  BOOST_TEST(ints(apply_augment_op(bw, AugmentOp::Contrast, 0.0)) == std::vector<int>(6, 128));
  // Contrast 0.5: 128 + 0.5 (255 - 128) = 191.5 -> 191; 128 - 64 = 64.
  BOOST_TEST(ints(apply_augment_op(bw, AugmentOp::Contrast, 0.5)) == std::vector<int>({191, 64, 191, 64, 191, 64}));
}

BOOST_AUTO_TEST_CASE(sharpness_by_hand) {
  // A 3x3 plane with 13 in the centre: the smoothed centre is (5 * 13) / 13 = 5, the border is kept.
  const ByteImage dot = image(1, 3, 3, {0, 0, 0, 0, 13, 0, 0, 0, 0});
  BOOST_TEST(ints(apply_augment_op(dot, AugmentOp::Sharpness, 0.0)) == std::vector<int>({0, 0, 0, 0, 5, 0, 0, 0, 0}));
  // Factor 2: 5 + 2 (13 - 5) = 21.
  BOOST_TEST(ints(apply_augment_op(dot, AugmentOp::Sharpness, 2.0)) == std::vector<int>({0, 0, 0, 0, 21, 0, 0, 0, 0}));
}

BOOST_AUTO_TEST_CASE(autocontrast_and_equalize_by_hand) {
  // [50, 150] stretched to [0, 255]: scale 2.55, offset -127.5; 100 -> 127.5 -> 127.
  BOOST_TEST(ints(apply_augment_op(image(1, 1, 3, {50, 100, 150}), AugmentOp::AutoContrast, 0)) ==
             std::vector<int>({0, 127, 255}));
  BOOST_TEST(ints(apply_augment_op(image(1, 1, 2, {7, 7}), AugmentOp::AutoContrast, 0)) == std::vector<int>({7, 7}));
  // 255 pixels of 10, 255 of 20, 1 of 30: step = (511 - 1) / 255 = 2, n starts at 1:
  // 10 -> 1 / 2 = 0; 20 -> (1 + 255) / 2 = 128; 30 -> (1 + 510) / 2 = 255.
  std::vector<uint8_t> levels(255, 10);
  levels.insert(levels.end(), 255, 20);
  levels.push_back(30);
  const ByteImage eq = apply_augment_op(image(1, 1, 511, levels), AugmentOp::Equalize, 0);
  BOOST_TEST(int(eq.pixels[0]) == 0);
  BOOST_TEST(int(eq.pixels[300]) == 128);
  BOOST_TEST(int(eq.pixels[510]) == 255);
  // Fewer than 256 pixels: the step is 0 and the image is unchanged.
  BOOST_TEST(ints(apply_augment_op(kSquare, AugmentOp::Equalize, 0)) == ints(kSquare));
}

BOOST_AUTO_TEST_CASE(crop_flip_normalize_by_hand) {
  BOOST_TEST(ints(crop_padded(kSquare, 1, 0, 0)) == std::vector<int>({0, 0, 0, 1}));
  BOOST_TEST(ints(crop_padded(kSquare, 1, 2, 1)) == std::vector<int>({3, 4, 0, 0}));
  BOOST_TEST(ints(crop_padded(kSquare, 1, 1, 1)) == ints(kSquare));
  BOOST_TEST(ints(flip_horizontal(kSquare)) == std::vector<int>({2, 1, 4, 3}));
  // 51 / 255 = 0.2; (0.2 - 0.1) / 0.5 = 0.2.
  const Tensor n = normalize_image(image(1, 1, 1, {51}), {0.1}, {0.5});
  BOOST_TEST(std::abs(n.item() - 0.2) < 1e-6);
  test::check_error([] { crop_padded(kSquare, 1, 3, 0); }, {"crop_padded", "[0, 2]"});
  test::check_error([] { normalize_image(kSquare, {0.1, 0.2}, {0.5}); }, {"normalize_image", "one value per channel"});
}

BOOST_AUTO_TEST_CASE(policy_table_and_magnitudes) {
  const auto& policy = cifar10_policy();
  BOOST_TEST(policy.size() == 25u);
  for (const SubPolicy& s : policy)
    for (const SubPolicyStep& step : s) {
      BOOST_TEST((step.probability >= 0.0 && step.probability <= 1.0));
      BOOST_TEST((step.bin >= 0 && step.bin <= 9));
    }
  BOOST_TEST(augment_op_name(policy[0][0].op) == "Invert");
  BOOST_TEST(augment_op_name(policy[24][1].op) == "AutoContrast");
  BOOST_TEST(std::abs(augment_magnitude(AugmentOp::TranslateX, 9, 32) - 150.0 / 331.0 * 32) < 1e-12);
  BOOST_TEST(augment_magnitude(AugmentOp::Posterize, 0, 32) == 8.0);
  BOOST_TEST(augment_magnitude(AugmentOp::Posterize, 2, 32) == 7.0);
  BOOST_TEST(augment_magnitude(AugmentOp::Posterize, 9, 32) == 4.0);
  BOOST_TEST(augment_magnitude(AugmentOp::Solarize, 0, 32) == 256.0);
  BOOST_TEST(std::abs(augment_magnitude(AugmentOp::Rotate, 3, 32) - 10.0) < 1e-12);
  test::check_error([] { augment_magnitude(AugmentOp::Rotate, 10, 32); }, {"bin", "0..9", "10"});
}

BOOST_AUTO_TEST_CASE(augmented_images_are_reproducible) {
  Generator gen(3);
  Tensor images = uniform({6, 3, 8, 8}, 0, 1, gen);
  auto base = std::make_shared<TensorDataset>(images, Tensor::arange(6));
  AugmentSettings on{.autoaugment = true, .crop_padding = 2, .flip = true};
  AugmentedImages a(base, on, 7, 0), b(base, on, 7, 0), other_epoch(base, on, 7, 1);
  // Same (seed, epoch, index): the same image, in any order of reading.
  const Tensor a5 = a.get(5).input;
  a.get(2);
  BOOST_TEST(max_abs_diff(b.get(5).input, a5) == 0.0);
  int differs = 0;
  for (int64_t i = 0; i < 6; ++i) differs += max_abs_diff(a.get(i).input, other_epoch.get(i).input) > 0;
  BOOST_TEST(differs >= 4);
  BOOST_TEST(a.get(5).target.item() == 5.0);
  // Everything off: normalisation only.
  AugmentedImages plain(base, {}, 7, 0);
  const Tensor expected = normalize_image(byte_image_from_unit(images.select(0, 1)), AugmentSettings{}.mean, AugmentSettings{}.std);
  BOOST_TEST(max_abs_diff(plain.get(1).input, expected) == 0.0);
  test::check_error([&] { byte_image_from_unit(add_scalar(images.select(0, 0), 2.0)); }, {"[0, 1]"});
}

BOOST_AUTO_TEST_SUITE_END()
