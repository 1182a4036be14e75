// conv2d and max_pool2d (tensor/conv.h, autograd/ops_conv.cpp): gradcheck in float64 over
// strides, paddings, dilations and group counts; the PyTorch golden file
// (tools/golden_conv.py -> tests/golden/conv.safetensors); a hand-computed convolution; the
// errors for bad input; and the CPU = CUDA cases (skipped without a GPU).
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include "nn/safetensors.h"
#include "posgrad.h"
#include "tests/device_support.h"
#include "tests/golden_compare.h"
#include "tests/test_support.h"

using namespace posgrad;
namespace bdata = boost::unit_test::data;

namespace {

struct ConvCase {
  std::string name;
  Shape x, weight;
  Conv2dOptions options;
  bool bias;
};
std::ostream& operator<<(std::ostream& os, const ConvCase& c) { return os << c.name; }

std::vector<ConvCase> conv_cases() {
  return {
      {"1x1", {2, 3, 4, 5}, {2, 3, 1, 1}, {}, true},
      {"3x3", {2, 2, 5, 5}, {3, 2, 3, 3}, {}, true},
      {"stride2 pad1", {1, 2, 6, 7}, {3, 2, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, 1}, true},
      {"stride(1,3) pad(2,0)", {2, 1, 5, 8}, {2, 1, 2, 3}, {{1, 3}, {2, 0}, {1, 1}, 1}, false},
      {"dilation2", {1, 2, 7, 6}, {2, 2, 3, 2}, {{1, 1}, {1, 0}, {2, 2}, 1}, true},
      {"groups2", {2, 4, 5, 5}, {6, 2, 3, 3}, {{1, 2}, {1, 1}, {1, 1}, 2}, true},
      {"depthwise", {1, 3, 6, 6}, {3, 1, 3, 3}, {{2, 1}, {1, 1}, {1, 1}, 3}, false},
      {"groups3 dilated strided", {1, 6, 9, 8}, {3, 2, 2, 3}, {{2, 2}, {2, 1}, {2, 3}, 3}, true},
  };
}

struct PoolCase {
  std::string name;
  Shape x;
  Pool2dOptions options;
};
std::ostream& operator<<(std::ostream& os, const PoolCase& c) { return os << c.name; }

std::vector<PoolCase> pool_cases() {
  return {
      {"2x2", {2, 2, 4, 6}, {{2, 2}, {0, 0}, {0, 0}}},
      {"3x3 stride3 (CCT)", {1, 3, 9, 10}, {{3, 3}, {0, 0}, {0, 0}}},
      {"3x3 stride2 pad1", {2, 1, 7, 6}, {{3, 3}, {2, 2}, {1, 1}}},
      {"overlapping (2,3) stride1", {1, 2, 5, 5}, {{2, 3}, {1, 1}, {1, 1}}},
  };
}

Variable weighted(const Variable& y, uint64_t seed) {
  Generator g(seed);
  return sum(y * Variable(uniform(y.shape(), 0.5, 1.5, g, y.value().dtype()).to(y.value().device())));
}

std::string golden_path() { return std::string(POSGRAD_SOURCE_DIR) + "/tests/golden/conv.safetensors"; }

Conv2dOptions conv_options(const Tensor& t) {
  const auto v = t.to_vector<int64_t>();
  return {{v[0], v[1]}, {v[2], v[3]}, {v[4], v[5]}, v[6]};
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = std::min(s.find(',', start), s.size());
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(conv2d_ops)

BOOST_DATA_TEST_CASE(gradcheck_conv2d, bdata::make(conv_cases()), c) {
  Generator g(7);
  std::vector<Tensor> inputs{normal(c.x, 0, 1, g, kFloat64), normal(c.weight, 0, 0.5, g, kFloat64)};
  if (c.bias) inputs.push_back(normal({c.weight[0]}, 0, 1, g, kFloat64));
  const Conv2dOptions o = c.options;
  const bool bias = c.bias;
  GradcheckResult r = gradcheck(
      [o, bias](const std::vector<Variable>& v) { return conv2d(v[0], v[1], bias ? v[2] : Variable(), o); }, inputs);
  BOOST_TEST(r.ok, r.message);
}

BOOST_DATA_TEST_CASE(gradcheck_max_pool2d, bdata::make(pool_cases()), c) {
  // Distinct values, spaced well above the finite-difference step, so no window has a near tie.
  Generator g(3);
  const int64_t n = shape_numel(c.x);
  Tensor x = (randperm(n, g).to(kFloat64) * 0.01 + normal({n}, 0, 1e-4, g, kFloat64)).reshape(c.x);
  const Pool2dOptions o = c.options;
  GradcheckResult r = gradcheck([o](const std::vector<Variable>& v) { return max_pool2d(v[0], o); }, {x});
  BOOST_TEST(r.ok, r.message);
}

BOOST_AUTO_TEST_CASE(conv2d_by_hand) {
  // x = 1..9 on a 3x3 plane, weight [[1, 0], [0, -1]], padding 0: y[oy, ox] = x[oy, ox] - x[oy+1, ox+1] = -4.
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  Tensor w = Tensor::from_vector<float>({1, 0, 0, -1}, {1, 1, 2, 2});
  BOOST_TEST(conv2d(x, w, Tensor()).to_vector<float>() == std::vector<float>({-4, -4, -4, -4}));
  // Stride 2, padding 1: output (oy, ox) reads x[2 oy - 1, 2 ox - 1] (weight 1) and x[2 oy, 2 ox]
  // (weight -1), zero outside: -x00, -x02, -x20, x11 - x22 = -1, -3, -7, 5 - 9.
  Conv2dOptions o{{2, 2}, {1, 1}, {1, 1}, 1};
  BOOST_TEST(conv2d(x, w, Tensor(), o).to_vector<float>() == std::vector<float>({-1, -3, -7, -4}));
  // The bias adds per output channel.
  Tensor b = Tensor::from_vector<float>({10}, {1});
  BOOST_TEST(conv2d(x, w, b).to_vector<float>() == std::vector<float>({6, 6, 6, 6}));
}

BOOST_AUTO_TEST_CASE(max_pool2d_by_hand) {
  // A 4x4 plane, 2x2 windows, stride 2: the maxima and their flat indices.
  Tensor x = Tensor::from_vector<float>({1, 5, 2, 0, 3, 4, 8, 1, 0, 0, 9, 9, -1, 2, 9, 3}, {1, 1, 4, 4});
  MaxPool2dResult r = max_pool2d(x, {{2, 2}, {0, 0}, {0, 0}});
  BOOST_TEST(r.out.to_vector<float>() == std::vector<float>({5, 8, 2, 9}));
  BOOST_TEST(r.argmax.to_vector<int64_t>() == std::vector<int64_t>({1, 6, 13, 10}));  // ties: the first
  // The gradient goes to the argmax cells only.
  Variable xv(x, true);
  sum(max_pool2d(xv, {{2, 2}, {0, 0}, {0, 0}})).backward();
  BOOST_TEST(xv.grad().to_vector<float>() ==
             std::vector<float>({0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0}));
}

BOOST_AUTO_TEST_CASE(golden_pytorch) {
  const auto golden = load_safetensors(golden_path());
  for (const std::string& name : split_commas(golden.metadata.at("conv_cases"))) {
    BOOST_TEST_CONTEXT("conv case " << name) {
      const bool f64 = golden.at(name + ".x").dtype() == kFloat64;
      const double atol = f64 ? 1e-12 : 2e-5, rtol = f64 ? 1e-10 : 1e-4;
      Variable x(golden.at(name + ".x"), true), w(golden.at(name + ".w"), true);
      const bool has_bias = golden.contains(name + ".b");
      Variable b = has_bias ? Variable(golden.at(name + ".b"), true) : Variable();
      Variable y = conv2d(x, w, b, conv_options(golden.at(name + ".options")));
      test::expect_close(name + ".y", y.value(), golden.at(name + ".y"), atol, rtol);
      sum(y * Variable(golden.at(name + ".R"))).backward();
      test::expect_close(name + ".grad_x", x.grad(), golden.at(name + ".grad_x"), atol, rtol);
      // float32 weight gradients sum B * Yo * Xo products (3,600 for the stem): a wider atol.
      test::expect_close(name + ".grad_w", w.grad(), golden.at(name + ".grad_w"), f64 ? atol : 1e-3, rtol);
      if (has_bias) test::expect_close(name + ".grad_b", b.grad(), golden.at(name + ".grad_b"), atol, rtol);
    }
  }
  for (const std::string& name : split_commas(golden.metadata.at("pool_cases"))) {
    BOOST_TEST_CONTEXT("pool case " << name) {
      const auto o = golden.at(name + ".options").to_vector<int64_t>();
      Variable x(golden.at(name + ".x"), true);
      Variable y = max_pool2d(x, {{o[0], o[1]}, {o[2], o[3]}, {o[4], o[5]}});
      test::expect_close(name + ".y", y.value(), golden.at(name + ".y"), 1e-30, 0);  // a max is exact
      sum(y * Variable(golden.at(name + ".R"))).backward();
      test::expect_close(name + ".grad_x", x.grad(), golden.at(name + ".grad_x"), 1e-6, 1e-6);
    }
  }
  // CCT's stem: conv 3x3 -> ReLU -> max_pool2d(3).
  Variable x(golden.at("tokenizer_f32.x"), true), w(golden.at("tokenizer_f32.w"), true);
  Variable y = max_pool2d(relu(conv2d(x, w, Variable())), {{3, 3}, {0, 0}, {0, 0}});
  test::expect_close("tokenizer.y", y.value(), golden.at("tokenizer_f32.y"), 2e-5, 1e-4);
  sum(y * Variable(golden.at("tokenizer_f32.R"))).backward();
  test::expect_close("tokenizer.grad_x", x.grad(), golden.at("tokenizer_f32.grad_x"), 2e-5, 1e-4);
  test::expect_close("tokenizer.grad_w", w.grad(), golden.at("tokenizer_f32.grad_w"), 1e-3, 1e-4);
}

BOOST_AUTO_TEST_CASE(bad_input_one_clear_line) {
  Tensor x = Tensor::zeros({2, 4, 5, 5}), w = Tensor::zeros({6, 2, 3, 3});
  test::check_error([&] { conv2d(x, Tensor::zeros({6, 4, 7, 3}), Tensor()); },
                    {"conv2d", "row extent 7", "padded input's 5", "input [2, 4, 5, 5]", "weight [6, 4, 7, 3]"});
  test::check_error([&] { conv2d(x, w, Tensor(), {{1, 1}, {0, 0}, {1, 1}, 3}); },
                    {"conv2d", "input channels 4", "divisible by groups 3", "input [2, 4, 5, 5]"});
  test::check_error([&] { conv2d(x, w, Tensor()); }, {"conv2d", "per group 4", "got 2", "weight [6, 2, 3, 3]"});
  test::check_error([&] { conv2d(Tensor::zeros({4, 5, 5}), w, Tensor()); }, {"conv2d", "[B, C, Y, X]", "[4, 5, 5]"});
  test::check_error([&] { conv2d(x, w, Tensor::zeros({5}), {{1, 1}, {1, 1}, {1, 1}, 2}); }, {"conv2d", "bias", "[6]"});
  test::check_error([&] { conv2d(x, w, Tensor(), {{0, 1}, {0, 0}, {1, 1}, 2}); }, {"conv2d", "stride must be >= 1"});
  test::check_error([&] { max_pool2d(x, {{8, 2}, {0, 0}, {1, 0}}); }, {"max_pool2d", "row extent 8", "padded input's 7"});
  test::check_error([&] { max_pool2d(x, {{3, 3}, {0, 0}, {2, 1}}); }, {"max_pool2d", "at most half the kernel"});
  test::check_error([&] { max_pool2d(Tensor::zeros({2, 4, 5, 5}, kInt64), {{2, 2}, {0, 0}, {0, 0}}); },
                    {"max_pool2d", "floating-point"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(conv2d_ops_cuda, *boost::unit_test::precondition(test::GpuPresent()))

BOOST_DATA_TEST_CASE(cpu_equals_cuda, bdata::make(conv_cases()), c) {
  Generator g(11);
  Tensor x = normal(c.x, 0, 1, g), w = normal(c.weight, 0, 0.5, g), b = normal({c.weight[0]}, 0, 1, g);
  std::vector<Tensor> grads[2];
  Tensor outs[2];
  for (int on_gpu = 0; on_gpu < 2; ++on_gpu) {
    const Device d = on_gpu ? test::kGPU : kCPU;
    Variable xv(x.to(d), true), wv(w.to(d), true), bv(b.to(d), true);
    Variable y = max_pool2d(relu(conv2d(xv, wv, c.bias ? bv : Variable(), c.options)), {{2, 2}, {1, 1}, {1, 1}});
    outs[on_gpu] = y.value().to(kCPU);
    weighted(y, 5).backward();
    grads[on_gpu] = {xv.grad().to(kCPU), wv.grad().to(kCPU)};
    if (c.bias) grads[on_gpu].push_back(bv.grad().to(kCPU));
  }
  test::expect_close("y", outs[1], outs[0], 1e-5, 1e-4);
  for (size_t i = 0; i < grads[0].size(); ++i) test::expect_close(fmt::format("grad {}", i), grads[1][i], grads[0][i], 1e-4, 1e-4);
}

BOOST_DATA_TEST_CASE(gradcheck_on_cuda, bdata::make(conv_cases()), c) {
  Generator g(7);
  std::vector<Tensor> inputs{normal(c.x, 0, 1, g, kFloat64), normal(c.weight, 0, 0.5, g, kFloat64)};
  const Conv2dOptions o = c.options;
  GradcheckOptions go;
  go.device = test::kGPU;
  GradcheckResult r = gradcheck(
      [o](const std::vector<Variable>& v) { return max_pool2d(conv2d(v[0], v[1], Variable(), o), {{2, 2}, {1, 1}, {1, 1}}); },
      inputs, go);
  BOOST_TEST(r.ok, r.message);
}

BOOST_AUTO_TEST_SUITE_END()
