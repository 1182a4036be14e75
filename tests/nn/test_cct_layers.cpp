// The layers CCT needs (nn/conv2d.h, nn/drop_path.h, nn/sequence_pooling.h): Conv2d / MaxPool2d
// modules (PyTorch's init bounds, the op through the module, errors naming the layer), DropPath
// in both variants (whole examples dropped, the rescaled and the released unscaled form, eval
// mode, reproducibility), and SequencePooling (gradcheck, a hand-computed pooling).
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "nn/nn.h"
#include "posgrad.h"
#include "tests/module_gradcheck.h"
#include "tests/test_support.h"

using namespace posgrad;

BOOST_AUTO_TEST_SUITE(cct_layers)

BOOST_AUTO_TEST_CASE(conv2d_module_init_and_forward) {
  Generator gen(1);
  Conv2d conv(4, 6, {3, 3}, {{1, 1}, {1, 1}, {1, 1}, 2}, true, gen);
  BOOST_TEST(conv.weight().shape() == Shape({6, 2, 3, 3}));
  BOOST_TEST(conv.bias().shape() == Shape({6}));
  // PyTorch's default: U(+-1/sqrt(fan_in)), fan_in = 2 * 3 * 3 = 18.
  const double bound = 1.0 / std::sqrt(18.0);
  BOOST_TEST(amax(abs(conv.weight().value())).item() <= bound);
  BOOST_TEST(amax(abs(conv.weight().value())).item() > 0.8 * bound);
  BOOST_TEST(amax(abs(conv.bias().value())).item() <= bound);
  Tensor x = normal({2, 4, 5, 5}, 0, 1, gen);
  Tensor expected = conv2d(x, conv.weight().value(), conv.bias().value(), conv.options());
  BOOST_TEST(max_abs_diff(conv.forward(x).value(), expected) == 0.0);
  test::check_module_gradients(conv, x, [&](const Variable& v) { return conv.forward(v); });
}

BOOST_AUTO_TEST_CASE(layer_errors_name_the_layer_and_shapes) {
  Generator gen(1);
  Conv2d conv(3, 8, {5, 5}, {}, false, gen);
  test::check_error([&] { conv.forward(Tensor::zeros({1, 3, 4, 4})); },
                    {"Conv2d(3 -> 8, kernel=(5, 5)", "larger than the padded input", "input [1, 3, 4, 4]"});
  test::check_error([&] { conv.forward(Tensor::zeros({1, 4, 8, 8})); }, {"Conv2d(3 -> 8", "input channels per group 4"});
  test::check_error([&] { Conv2d(3, 8, {3, 3}, {{1, 1}, {0, 0}, {1, 1}, 2}, false, gen); },
                    {"Conv2d(3 -> 8)", "divisible by groups 2"});
  MaxPool2d pool({{3, 3}, {0, 0}, {0, 0}});
  test::check_error([&] { pool.forward(Tensor::zeros({1, 2, 2, 9})); },
                    {"MaxPool2d(kernel=(3, 3), stride=(3, 3)", "row extent 3", "input [1, 2, 2, 9]"});
}

BOOST_AUTO_TEST_CASE(drop_path_drops_whole_examples) {
  const int64_t B = 4000;
  Tensor x = add_scalar(Tensor::zeros({B, 3, 2}), 2.0);
  for (bool rescale : {true, false}) {
    DropPath layer(0.25, rescale, 17);
    const std::vector<float> y = layer.forward(x).value().to_vector<float>();
    const float kept_value = rescale ? 2.0f / 0.75f : 2.0f;
    int64_t dropped = 0;
    for (int64_t b = 0; b < B; ++b) {
      const float first = y[b * 6];
      BOOST_REQUIRE(first == 0.0f || std::abs(first - kept_value) < 1e-6);
      for (int64_t i = 1; i < 6; ++i) BOOST_REQUIRE(y[b * 6 + i] == first);  // one draw per example
      dropped += first == 0.0f;
    }
    // 4000 draws at p = 0.25: the dropped share is within 4 standard deviations (0.027) of p.
    BOOST_TEST(std::abs(static_cast<double>(dropped) / B - 0.25) < 0.03);
    layer.eval();
    BOOST_TEST(max_abs_diff(layer.forward(x).value(), x) == 0.0);
  }
  // Reproducible from the seed; p = 0 passes the input through.
  DropPath a(0.5, true, 3), b(0.5, true, 3);
  BOOST_TEST(max_abs_diff(a.forward(x).value(), b.forward(x).value()) == 0.0);
  BOOST_TEST(max_abs_diff(DropPath(0.0, true, 3).forward(x).value(), x) == 0.0);
  test::check_error([] { DropPath(1.0, true); }, {"drop_path", "[0, 1)", "got 1"});
}

BOOST_AUTO_TEST_CASE(drop_path_gradient_follows_the_mask) {
  Variable x(normal({6, 2, 3}, 0, 1, *std::make_shared<Generator>(4)), true);
  DropPath layer(0.5, true, 9);
  Variable y = layer.forward(x);
  sum(y).backward();
  // d sum(x * m) / dx = m: 0 or 1 / (1 - p) = 2 per example.
  const auto g = x.grad().to_vector<float>(), v = y.value().to_vector<float>(), xv = x.value().to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) BOOST_TEST((g[i] == 0.0f ? v[i] == 0.0f : std::abs(v[i] - 2 * xv[i]) < 1e-6));
}

BOOST_AUTO_TEST_CASE(sequence_pooling_by_hand_and_gradcheck) {
  Generator gen(2);
  SequencePooling pool(3, gen);
  // Zero score weights and bias: equal weights 1/N, i.e. the mean over tokens.
  pool.parameter("attention_pool.weight").mutable_value().fill_(0.0);
  pool.parameter("attention_pool.bias").mutable_value().fill_(0.0);
  Tensor x = normal({2, 4, 3}, 0, 1, gen);
  BOOST_TEST(max_abs_diff(pool.forward(x).value(), mean(x, {1})) < 1e-6);
  // Score weight e_0 * 100: the softmax picks the token with the largest first feature.
  pool.parameter("attention_pool.weight").mutable_value().copy_(Tensor::from_vector<float>({100, 0, 0}, {1, 3}));
  Tensor x2 = Tensor::from_vector<float>({0, 1, 2, 1, 3, 4, -1, 5, 6, 0.5, 7, 8}, {1, 4, 3});
  const auto out = pool.forward(x2).value().to_vector<float>();
  BOOST_TEST(std::abs(out[1] - 3.0f) < 1e-4);
  BOOST_TEST(std::abs(out[2] - 4.0f) < 1e-4);
  BOOST_TEST(pool.last_weights().shape() == Shape({1, 4}));
  Generator g2(5);
  SequencePooling fresh(3, g2);
  test::check_module_gradients(fresh, normal({2, 4, 3}, 0, 1, g2), [&](const Variable& v) { return fresh.forward(v); });
  test::check_error([&] { fresh.forward(Tensor::zeros({2, 4, 5})); }, {"SequencePooling", "[B, N, 3]", "[2, 4, 5]"});
}

BOOST_AUTO_TEST_SUITE_END()
