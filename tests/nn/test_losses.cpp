// Losses: values against PyTorch 1.13 (torch.nn.functional, float64; the numbers are hard-coded
// below, produced by the snippets quoted beside them), hand-computed cases, float64 gradchecks of
// every loss and option, and the errors for bad targets and shapes.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "nn/nn.h"
#include "posgrad.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_error;
namespace tt = boost::test_tools;

namespace {

// logits = torch.tensor([[1., 2., 3.], [1., 0., -1.], [.5, -.5, 2.]], dtype=torch.float64)
Tensor logits3() { return Tensor::from_vector<double>({1, 2, 3, 1, 0, -1, 0.5, -0.5, 2}, {3, 3}); }
Tensor targets(std::vector<int64_t> t) {
  const int64_t n = static_cast<int64_t>(t.size());
  return Tensor::from_vector<int64_t>(t, {n});
}

void check_values(const Tensor& got, const std::vector<double>& want, double tol = 1e-12) {
  const std::vector<double> g = got.to(kFloat64).to_vector<double>();
  BOOST_REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) BOOST_TEST(std::abs(g[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i])), "element " << i << ": " << g[i] << " vs " << want[i]);
}

void check_grad(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const std::string& what) {
  const GradcheckResult r = gradcheck(fn, inputs);
  BOOST_TEST(r.ok, what << ": " << r.message);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(losses)

BOOST_AUTO_TEST_CASE(cross_entropy_of_uniform_logits_is_log_c) {
  for (int64_t C : {2, 10, 1000}) {
    const Tensor logits = Tensor::full({4, C}, 0.7, kFloat64);
    const Tensor t = Tensor::from_vector<int64_t>({0, 1, C - 1, 1}, {4});
    BOOST_TEST(cross_entropy(logits, t).item() == std::log(static_cast<double>(C)), tt::tolerance(1e-12));
    // Label smoothing does not change it: every class has the same -log p.
    BOOST_TEST(cross_entropy(logits, t, Reduction::Mean, -100, 0.3).item() == std::log(static_cast<double>(C)),
               tt::tolerance(1e-12));
  }
}

BOOST_AUTO_TEST_CASE(cross_entropy_matches_pytorch) {
  const Tensor l = logits3();
  // F.cross_entropy(logits, torch.tensor([2, 0, 1]))                       (reduction mean/sum/none)
  check_values(cross_entropy(l, targets({2, 0, 1})).value(), {1.1938599428986316});
  check_values(cross_entropy(l, targets({2, 0, 1}), Reduction::Sum).value(), {3.5815798286958946});
  check_values(cross_entropy(l, targets({2, 0, 1}), Reduction::None).value(),
               {0.4076059644443804, 0.4076059644443804, 2.7663678998071335});
  // ..., label_smoothing=0.1)
  check_values(cross_entropy(l, targets({2, 0, 1}), Reduction::Mean, -100, 0.1).value(), {1.2216377206764093});
  // F.cross_entropy(logits, torch.tensor([2, -100, 1]))                    (mean over 2 targets)
  check_values(cross_entropy(l, targets({2, -100, 1})).value(), {1.586986932125757});
  // ..., label_smoothing=0.2) with reduction mean / none / sum
  check_values(cross_entropy(l, targets({2, -100, 1}), Reduction::Mean, -100, 0.2).value(), {1.5703202654590904});
  check_values(cross_entropy(l, targets({2, -100, 1}), Reduction::None, -100, 0.2).value(),
               {0.6076059644443805, 0.0, 2.5330345664738});
  check_values(cross_entropy(l, targets({2, -100, 1}), Reduction::Sum, -100, 0.2).value(), {3.140640530918181});
  // F.cross_entropy(logits, torch.tensor([2, 7, 1]), ignore_index=7)
  check_values(cross_entropy(l, targets({2, 7, 1}), Reduction::Mean, 7).value(), {1.586986932125757});
  // F.nll_loss(torch.log_softmax(logits, -1), torch.tensor([2, -100, 1]))
  check_values(nll_loss(log_softmax(Variable(l), -1), targets({2, -100, 1})).value(), {1.586986932125757});
  // float32 logits agree to float32 precision.
  check_values(cross_entropy(l.to(kFloat32), targets({2, 0, 1})).value(), {1.1938599428986316}, 1e-6);
}

BOOST_AUTO_TEST_CASE(cross_entropy_with_class_axis_last) {
  // l3 = torch.arange(12, dtype=torch.float64).reshape(2, 2, 3).sin()         [B, N, C]
  // t3 = torch.tensor([[0, 2], [-100, 1]])                                     [B, N]
  // F.cross_entropy(l3.permute(0, 2, 1), t3, label_smoothing=0.1)  (PyTorch wants the class axis at 1)
  std::vector<double> v(12);
  for (int i = 0; i < 12; ++i) v[static_cast<size_t>(i)] = std::sin(static_cast<double>(i));
  const Tensor l3 = Tensor::from_vector<double>(v, {2, 2, 3});
  const Tensor t3 = Tensor::from_vector<int64_t>({0, 2, -100, 1}, {2, 2});
  check_values(cross_entropy(l3, t3, Reduction::Mean, -100, 0.1).value(), {1.5791353397118375});
  const Variable none = cross_entropy(l3, t3, Reduction::None);
  BOOST_TEST(none.shape() == (Shape{2, 2}), tt::per_element());
  check_values(none.value(), {1.758263792541364, 1.6540854345848788, 0.0, 1.4434936244819894});
  // A single unbatched row: logits [C], target [].
  check_values(cross_entropy(Tensor::from_vector<double>({1, 2, 3}, {3}), Tensor::full({}, 2, kInt64)).value(),
               {0.4076059644443804});
}

BOOST_AUTO_TEST_CASE(cross_entropy_gradcheck) {
  Generator gen(1);
  const Tensor t = targets({2, 0, 4, 1});
  const Tensor ti = targets({2, -100, 4, -100});
  const Tensor t3 = Tensor::from_vector<int64_t>({0, 2, -100, 1, 1, 0}, {2, 3});
  auto in = [&](const Shape& s) { return std::vector<Tensor>{normal(s, 0, 1.5, gen, kFloat64)}; };
  using V = std::vector<Variable>;
  check_grad([&](const V& v) { return cross_entropy(v[0], t); }, in({4, 5}), "mean");
  check_grad([&](const V& v) { return cross_entropy(v[0], t, Reduction::Sum); }, in({4, 5}), "sum");
  check_grad([&](const V& v) { return cross_entropy(v[0], t, Reduction::None); }, in({4, 5}), "none");
  check_grad([&](const V& v) { return cross_entropy(v[0], ti); }, in({4, 5}), "ignore_index");
  check_grad([&](const V& v) { return cross_entropy(v[0], t, Reduction::Mean, -100, 0.1); }, in({4, 5}), "smoothing");
  check_grad([&](const V& v) { return cross_entropy(v[0], ti, Reduction::Mean, -100, 0.25); }, in({4, 5}),
             "ignore_index + smoothing");
  check_grad([&](const V& v) { return cross_entropy(v[0], t3, Reduction::None, -100, 0.1); }, in({2, 3, 3}),
             "[B, N, C] none + smoothing");
  check_grad([&](const V& v) { return nll_loss(log_softmax(v[0], -1), ti); }, in({4, 5}), "nll_loss");
  check_grad([&](const V& v) { return nll_loss(v[0], t, Reduction::Sum); }, in({4, 5}), "nll_loss raw");
  // Non-contiguous logits (a transposed view).
  check_grad([&](const V& v) { return cross_entropy(v[0], t); },
             {normal({5, 4}, 0, 1, gen, kFloat64).transpose(0, 1)}, "transposed logits");
}

BOOST_AUTO_TEST_CASE(cross_entropy_all_ignored_is_zero_not_nan) {
  Variable logits(Tensor::ones({2, 3}, kFloat64), true);
  const Variable loss = cross_entropy(logits, targets({-100, -100}));
  BOOST_TEST(loss.item() == 0.0);
  loss.backward();
  BOOST_TEST(amax(abs(logits.grad())).item() == 0.0);
}

BOOST_AUTO_TEST_CASE(cross_entropy_errors) {
  const Tensor l = logits3();
  check_error([&] { cross_entropy(l, targets({2, 3, 1})); }, {"target 3", "element 1", "[0, 3)"});
  check_error([&] { cross_entropy(l, targets({2, -1, 1})); }, {"target -1", "ignore_index -100"});
  check_error([&] { cross_entropy(l, targets({2, 0})); }, {"int64[2]", "[3]"});
  check_error([&] { cross_entropy(l, Tensor::zeros({3})); }, {"int64", "float32[3]"});
  check_error([&] { cross_entropy(l, targets({2, 0, 1}), Reduction::Mean, -100, 1.5); }, {"label_smoothing", "1.5"});
  check_error([&] { nll_loss(l, targets({9, 0, 1})); }, {"nll_loss", "target 9"});
  BOOST_TEST((parse_reduction("sum") == Reduction::Sum));
  check_error([] { parse_reduction("avg"); }, {"'avg'", "none, mean, sum"});
}

BOOST_AUTO_TEST_CASE(binary_cross_entropy_matches_pytorch) {
  // p = torch.tensor([.2, .9, 0., 1., .5], dtype=torch.float64, requires_grad=True)
  // y = torch.tensor([0., 1., 1., 0., .3], dtype=torch.float64, requires_grad=True)
  // F.binary_cross_entropy(p, y, reduction='none'); F.binary_cross_entropy(p, y).backward()
  Variable p(Tensor::from_vector<double>({0.2, 0.9, 0.0, 1.0, 0.5}, {5}), true);
  Variable y(Tensor::from_vector<double>({0.0, 1.0, 1.0, 0.0, 0.3}, {5}), true);
  check_values(binary_cross_entropy(p, y, Reduction::None).value(),
               {0.2231435513142097, 0.10536051565782628, 100.0, 100.0, 0.6931471805599453});
  binary_cross_entropy(p, y).backward();
  // PyTorch's p gradient at p = 0 and 1 is (p - y) / 1e-12 / 5 (its EPSILON is a float, hence
  // the ...799 digits); ours uses the double 1e-12, so compare those two relatively.
  check_values(p.grad(), {0.24999999999999994, -0.22222222222222224, -200000000799.16058, 200000000799.16058, 0.16}, 1e-8);
  // The target gradient: PyTorch gives +-inf at p = 0 and 1 (unclamped logs); ours is the exact
  // derivative of the clamped forward, log(1-p) - log(p) with each log >= -100, divided by 5.
  check_values(y.grad(), {0.2772588722239781, -0.4394449154672439, 20.0, -20.0, 0.0});

  Generator gen(2);
  using V = std::vector<Variable>;
  check_grad([](const V& v) { return binary_cross_entropy(v[0], v[1]); },
             {uniform({3, 4}, 0.05, 0.95, gen, kFloat64), uniform({3, 4}, 0, 1, gen, kFloat64)}, "bce mean");
  check_grad([](const V& v) { return binary_cross_entropy(v[0], v[1], Reduction::None); },
             {uniform({6}, 0.05, 0.95, gen, kFloat64), uniform({6}, 0, 1, gen, kFloat64)}, "bce none");

  check_error([&] { binary_cross_entropy(Tensor::from_vector<double>({0.5, 1.2}, {2}), Tensor::zeros({2}, kFloat64)); },
              {"[0, 1]", "1.2"});
  check_error([&] { binary_cross_entropy(Tensor::zeros({2}), Tensor::zeros({3})); }, {"float32[2]", "float32[3]"});
}

BOOST_AUTO_TEST_CASE(binary_cross_entropy_with_logits_matches_pytorch) {
  // x = torch.tensor([-100., 0., 3., 50., -2.], dtype=torch.float64, requires_grad=True)
  // y = torch.tensor([.3, 1., 0., 1., .5], dtype=torch.float64)
  // F.binary_cross_entropy_with_logits(x, y, reduction='none'); (... mean).backward()
  Variable x(Tensor::from_vector<double>({-100.0, 0.0, 3.0, 50.0, -2.0}, {5}), true);
  const Tensor y = Tensor::from_vector<double>({0.3, 1.0, 0.0, 1.0, 0.5}, {5});
  check_values(binary_cross_entropy_with_logits(x, y, Reduction::None).value(),
               {30.0, 0.6931471805599453, 3.048587351573742, 0.0, 1.1269280110429727});
  binary_cross_entropy_with_logits(x, y).backward();
  check_values(x.grad(), {-0.06, -0.1, 0.19051482536448666, 0.0, -0.07615941559557649});
  // No overflow for huge logits in float32 either.
  const Variable big = binary_cross_entropy_with_logits(Tensor::from_vector<float>({1000.0f, -1000.0f}, {2}),
                                                        Tensor::from_vector<float>({0.0f, 1.0f}, {2}), Reduction::None);
  check_values(big.value(), {1000.0, 1000.0});

  Generator gen(3);
  using V = std::vector<Variable>;
  check_grad([](const V& v) { return binary_cross_entropy_with_logits(v[0], v[1]); },
             {normal({3, 4}, 0, 2, gen, kFloat64), uniform({3, 4}, 0, 1, gen, kFloat64)}, "bce_with_logits");
  check_grad([](const V& v) { return binary_cross_entropy_with_logits(v[0], v[1], Reduction::Sum); },
             {Tensor::from_vector<double>({0.0, 0.0, 1.0}, {3}), uniform({3}, 0, 1, gen, kFloat64)},
             "bce_with_logits at x = 0");
}

BOOST_AUTO_TEST_CASE(mse_loss_values_and_gradcheck) {
  // F.mse_loss(torch.tensor([1., 2., -3.]), torch.tensor([.5, 2., 1.])): 5.416666..., sum 16.25
  const Tensor a = Tensor::from_vector<double>({1, 2, -3}, {3}), b = Tensor::from_vector<double>({0.5, 2, 1}, {3});
  check_values(mse_loss(a, b).value(), {16.25 / 3.0});
  check_values(mse_loss(a, b, Reduction::Sum).value(), {16.25});
  check_values(mse_loss(a, b, Reduction::None).value(), {0.25, 0.0, 16.0});
  Generator gen(4);
  check_grad([](const std::vector<Variable>& v) { return mse_loss(v[0], v[1]); },
             {normal({2, 3}, 0, 1, gen, kFloat64), normal({2, 3}, 0, 1, gen, kFloat64)}, "mse");
  check_error([&] { mse_loss(a, Tensor::zeros({3, 1}, kFloat64)); }, {"mse_loss", "float64[3, 1]"});
}

BOOST_AUTO_TEST_SUITE_END()
