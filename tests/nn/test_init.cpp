// init: fans and gains exactly as PyTorch computes them (values from PyTorch 1.13, quoted), and the
// statistics of every random fill on large tensors (std within a few per cent, bounds exact).
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "nn/nn.h"
#include "posgrad.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_error;
namespace tt = boost::test_tools;

namespace {

struct Stats {
  double mean, std, max_abs;
};
Stats stats(const Tensor& t) {
  const std::vector<double> v = t.to(kFloat64).to_vector<double>();
  double m = 0, s = 0, mx = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) {
    s += (x - m) * (x - m);
    mx = std::max(mx, std::abs(x));
  }
  return {m, std::sqrt(s / static_cast<double>(v.size())), mx};
}

// A [out, in] = [512, 256] weight: 131072 samples, so the sample std is within ~0.5% of the truth.
Tensor weight() { return Tensor::empty({512, 256}); }

}  // namespace

BOOST_AUTO_TEST_SUITE(init_functions)

BOOST_AUTO_TEST_CASE(fans_as_pytorch) {
  // torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(5, 3, 2, 4)) == (24, 40)
  const init::Fans f = init::fan_in_and_fan_out({5, 3, 2, 4});
  BOOST_TEST(f.fan_in == 24);
  BOOST_TEST(f.fan_out == 40);
  const init::Fans l = init::fan_in_and_fan_out({7, 3});  // a Linear weight [out, in]
  BOOST_TEST(l.fan_in == 3);
  BOOST_TEST(l.fan_out == 7);
  check_error([] { init::fan_in_and_fan_out({5}); }, {"at least 2 axes", "[5]"});
}

BOOST_AUTO_TEST_CASE(gains_as_pytorch) {
  // calculate_gain('leaky_relu') = 1.4141428569978354, ('leaky_relu', 0.2) = 1.3867504905630728,
  // ('tanh') = 5/3, ('selu') = 0.75
  BOOST_TEST(init::calculate_gain("leaky_relu") == 1.4141428569978354, tt::tolerance(1e-14));
  BOOST_TEST(init::calculate_gain("leaky_relu", 0.2) == 1.3867504905630728, tt::tolerance(1e-14));
  BOOST_TEST(init::calculate_gain("leaky_relu", 0.0) == std::sqrt(2.0), tt::tolerance(1e-14));
  BOOST_TEST(init::calculate_gain("relu") == std::sqrt(2.0), tt::tolerance(1e-14));
  BOOST_TEST(init::calculate_gain("tanh") == 5.0 / 3.0, tt::tolerance(1e-14));
  BOOST_TEST(init::calculate_gain("selu") == 0.75);
  BOOST_TEST(init::calculate_gain("linear") == 1.0);
  BOOST_TEST(init::calculate_gain("sigmoid") == 1.0);
  check_error([] { init::calculate_gain("swish"); }, {"'swish'", "leaky_relu"});
}

BOOST_AUTO_TEST_CASE(plain_fills) {
  Generator gen(1);
  const Stats u = stats(init::uniform_(weight(), -2.0, 1.0, gen));
  BOOST_TEST(u.mean == -0.5, tt::tolerance(0.02));
  BOOST_TEST(u.std == 3.0 / std::sqrt(12.0), tt::tolerance(0.01));
  BOOST_TEST(u.max_abs <= 2.0);
  const Stats n = stats(init::normal_(weight(), 1.5, 0.2, gen));
  BOOST_TEST(n.mean == 1.5, tt::tolerance(0.001));
  BOOST_TEST(n.std == 0.2, tt::tolerance(0.01));
  BOOST_TEST(stats(init::constant_(weight(), 0.25)).max_abs == 0.25);
  BOOST_TEST(stats(init::zeros_(weight())).max_abs == 0.0);
  const Stats o = stats(init::ones_(Tensor::empty({3}, kFloat64)));
  BOOST_TEST(o.mean == 1.0);
  BOOST_TEST(o.std == 0.0);
  check_error([&] { init::uniform_(Tensor::empty({2}, kInt64), 0, 1, gen); }, {"uniform_", "int64"});
  check_error([&] { init::uniform_(weight(), 1, 0, gen); }, {"exceeds"});
}

BOOST_AUTO_TEST_CASE(xavier_statistics) {
  Generator gen(2);
  const double std_ = std::sqrt(2.0 / (256 + 512));
  const Stats u = stats(init::xavier_uniform_(weight(), gen));
  BOOST_TEST(u.std == std_, tt::tolerance(0.02));
  BOOST_TEST(u.max_abs <= std::sqrt(3.0) * std_ + 1e-7);
  BOOST_TEST(u.max_abs >= 0.99 * std::sqrt(3.0) * std_);
  const Stats n = stats(init::xavier_normal_(weight(), gen, 2.0));
  BOOST_TEST(n.std == 2.0 * std_, tt::tolerance(0.02));
  BOOST_TEST(std::abs(n.mean) < 0.01 * n.std);
}

BOOST_AUTO_TEST_CASE(kaiming_statistics) {
  Generator gen(3);
  const double fan_in = 256, fan_out = 512;
  // Default: a = 0, fan_in, leaky_relu -> gain sqrt(2).
  const Stats u = stats(init::kaiming_uniform_(weight(), gen));
  BOOST_TEST(u.std == std::sqrt(2.0 / fan_in), tt::tolerance(0.02));
  BOOST_TEST(u.max_abs <= std::sqrt(6.0 / fan_in) + 1e-7);
  // nn.Linear's default: a = sqrt(5) -> U(+-1/sqrt(fan_in)), std 1/sqrt(3 fan_in).
  const Stats lin = stats(init::kaiming_uniform_(weight(), gen, std::sqrt(5.0)));
  BOOST_TEST(lin.std == 1.0 / std::sqrt(3.0 * fan_in), tt::tolerance(0.02));
  BOOST_TEST(lin.max_abs <= 1.0 / std::sqrt(fan_in) + 1e-7);
  // fan_out mode, and other nonlinearities.
  const Stats out = stats(init::kaiming_normal_(weight(), gen, 0.0, init::FanMode::FanOut, "relu"));
  BOOST_TEST(out.std == std::sqrt(2.0 / fan_out), tt::tolerance(0.02));
  const Stats tanh_ = stats(init::kaiming_normal_(weight(), gen, 0.0, init::FanMode::FanIn, "tanh"));
  BOOST_TEST(tanh_.std == (5.0 / 3.0) / std::sqrt(fan_in), tt::tolerance(0.02));
  const Stats lin_u = stats(init::kaiming_uniform_(weight(), gen, 0.0, init::FanMode::FanIn, "linear"));
  BOOST_TEST(lin_u.std == 1.0 / std::sqrt(fan_in), tt::tolerance(0.02));
  const Stats leaky = stats(init::kaiming_normal_(weight(), gen, 0.2));
  BOOST_TEST(leaky.std == std::sqrt(2.0 / (1.0 + 0.04)) / std::sqrt(fan_in), tt::tolerance(0.02));
}

BOOST_AUTO_TEST_CASE(fills_are_reproducible_and_write_through_views) {
  Generator a(7), b(7);
  const Tensor x = init::normal_(Tensor::empty({100}), 0, 1, a);
  const Tensor y = init::normal_(Tensor::empty({100}), 0, 1, b);
  BOOST_TEST(max_abs_diff(x, y) == 0.0);
  // A view: only the sliced rows change.
  Tensor w = Tensor::zeros({4, 3});
  init::ones_(w.slice(0, 1, 3));
  const std::vector<float> v = w.to_vector<float>();
  BOOST_TEST(v == (std::vector<float>{0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0}), tt::per_element());
  Generator g(8);
  init::uniform_(w.select(1, 0), 5, 6, g);  // a strided column
  BOOST_TEST(w.at<float>({2, 0}) >= 5.0f);
  BOOST_TEST(w.at<float>({2, 1}) == 1.0f);
  // Zero-element tensors are left alone (PyTorch warns and returns).
  init::kaiming_uniform_(Tensor::empty({0, 3}), g);
  init::xavier_normal_(Tensor::empty({3, 0}), g);
  // float64 fills.
  BOOST_TEST((init::xavier_uniform_(Tensor::empty({4, 4}, kFloat64), g).dtype() == kFloat64));
}

BOOST_AUTO_TEST_SUITE_END()
