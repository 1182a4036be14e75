// matrix_exp: forward against closed forms (2x2 rotations, diagonal, nilpotent, upper-triangular
// non-normal), e^X e^-X = I at norms that need many squarings, batching and float32; float64
// gradchecks of the exact backward (several sizes, batched, large norms) and its scale
// invariance in the upstream gradient; errors. The PyTorch golden file is checked in
// test_orthogonal.cpp.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "nn/matrix_exp.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_error;

namespace {

Tensor mat(const std::vector<double>& v, const Shape& shape) { return Tensor::from_vector(v, shape); }

Tensor eye(int64_t n, DType dtype = kFloat64) {
  std::vector<double> v(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i * n + i)] = 1.0;
  return mat(v, {n, n}).to(dtype);
}

// max |a - b| / max(1, |b|): the error relative to the size of the reference entries.
double rel_err(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  BOOST_REQUIRE_EQUAL(x.size(), y.size());
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]) / std::max(1.0, std::abs(y[i])));
  return worst;
}

void check_gradcheck(const Tensor& x, const char* what, double atol = 1e-6, double rtol = 1e-5) {
  GradcheckOptions o;
  o.atol = atol;
  o.rtol = rtol;
  const GradcheckResult r = gradcheck([](const std::vector<Variable>& v) { return matrix_exp(v[0]); }, {x}, o);
  BOOST_TEST_INFO(what << ": " << r.message);
  BOOST_TEST(r.ok);
  BOOST_TEST_MESSAGE("matrix_exp gradcheck " << what << ": worst |analytic - numeric| " << r.max_abs_error);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(matrix_exp_op)

BOOST_AUTO_TEST_CASE(rotation_generator_gives_cos_sin) {
  // exp([[0, t], [-t, 0]]) = [[cos t, sin t], [-sin t, cos t]]; t = 40 needs 6 squarings.
  for (double t : {0.0, 0.3, 1.0, 2.5, 40.0}) {
    const Tensor w = matrix_exp(mat({0, t, -t, 0}, {2, 2}));
    const Tensor ref = mat({std::cos(t), std::sin(t), -std::sin(t), std::cos(t)}, {2, 2});
    BOOST_TEST_INFO("t = " << t);
    BOOST_TEST(max_abs_diff(w, ref) <= 2e-14);
  }
}

BOOST_AUTO_TEST_CASE(diagonal_gives_exp_of_diagonal) {
  const std::vector<double> diag{-7.0, -0.5, 0.0, 0.25, 3.0, 9.0};
  std::vector<double> x(36, 0.0), ref(36, 0.0);
  for (size_t i = 0; i < 6; ++i) {
    x[i * 6 + i] = diag[i];
    ref[i * 6 + i] = std::exp(diag[i]);
  }
  const Tensor w = matrix_exp(mat(x, {6, 6}));
  BOOST_TEST(rel_err(w, mat(ref, {6, 6})) <= 1e-14);  // relative: e^9 ~ 8103
  BOOST_TEST(rel_err(matrix_exp(mat({2.0}, {1, 1})), mat({std::exp(2.0)}, {1, 1})) <= 1e-15);
}

BOOST_AUTO_TEST_CASE(nilpotent_series_terminates) {
  // N strictly upper triangular 4x4: N^4 = 0, so e^N = I + N + N^2/2 + N^3/6 exactly.
  const Tensor n = mat({0, 1, 2, 3, 0, 0, 4, 5, 0, 0, 0, 6, 0, 0, 0, 0}, {4, 4});
  const Tensor n2 = matmul(n, n), n3 = matmul(n2, n);
  const Tensor ref = eye(4) + n + n2 * 0.5 + n3 * (1.0 / 6.0);
  BOOST_TEST(rel_err(matrix_exp(n), ref) <= 1e-14);
}

BOOST_AUTO_TEST_CASE(non_normal_upper_triangular) {
  // exp([[a, b], [0, c]]) = [[e^a, b (e^a - e^c) / (a - c)], [0, e^c]]: a strongly non-normal
  // matrix (b = 50) whose norm needs squarings.
  const double a = 1.5, b = 50.0, c = -2.0;
  const Tensor w = matrix_exp(mat({a, b, 0, c}, {2, 2}));
  const Tensor ref = mat({std::exp(a), b * (std::exp(a) - std::exp(c)) / (a - c), 0, std::exp(c)}, {2, 2});
  BOOST_TEST(rel_err(w, ref) <= 1e-14);
}

BOOST_AUTO_TEST_CASE(inverse_and_batching) {
  Generator gen(3);
  // [2, 3, 6, 6] with norms from ~0.1 to ~60: e^X e^-X = I, and each matrix as computed alone.
  Tensor x = normal({2, 3, 6, 6}, 0, 1, gen, kFloat64) *
             mat({0.02, 0.1, 0.5, 1.0, 4.0, 10.0}, {2, 3, 1, 1});
  const Tensor w = matrix_exp(x), winv = matrix_exp(-x);
  BOOST_TEST(w.shape() == x.shape(), boost::test_tools::per_element());
  // Products of e^X (entries up to ~1e8 for the largest) with e^-X: relative to ||e^X|| ||e^-X||.
  double worst = 0.0;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      const Tensor a = w.select(0, i).select(0, j), b = winv.select(0, i).select(0, j);
      const double scale = amax(abs(a)).item() * amax(abs(b)).item();
      worst = std::max(worst, max_abs_diff(matmul(a, b), eye(6)) / scale);
      BOOST_TEST(max_abs_diff(matrix_exp(x.select(0, i).select(0, j)), a) == 0.0);  // same s, same ops
    }
  BOOST_TEST_MESSAGE("matrix_exp: worst |e^X e^-X - I| / (||e^X|| ||e^-X||) = " << worst);
  BOOST_TEST(worst <= 1e-13);
}

BOOST_AUTO_TEST_CASE(float32_matches_float64) {
  Generator gen(4);
  const Tensor x = normal({3, 8, 8}, 0, 0.7, gen, kFloat64);
  const Tensor w64 = matrix_exp(x), w32 = matrix_exp(x.to(kFloat32));
  BOOST_TEST((w32.dtype() == kFloat32));
  const double err = rel_err(w32, w64);
  BOOST_TEST_MESSAGE("matrix_exp float32 vs float64: worst relative error " << err);
  BOOST_TEST(err <= 1e-5);
}

BOOST_AUTO_TEST_CASE(empty_and_zero) {
  BOOST_TEST(max_abs_diff(matrix_exp(Tensor::zeros({2, 5, 5}, kFloat64)), eye(5).expand({2, 5, 5})) == 0.0);
  BOOST_TEST(matrix_exp(Tensor::zeros({0, 3, 3})).numel() == 0);
}

// ------------------------------------------------------------ backward

BOOST_AUTO_TEST_CASE(gradcheck_sizes_and_norms) {
  Generator gen(5);
  check_gradcheck(normal({1, 1}, 0, 1, gen, kFloat64), "1x1");
  check_gradcheck(normal({3, 3}, 0, 0.2, gen, kFloat64), "3x3 small norm (no squaring)");
  check_gradcheck(normal({5, 5}, 0, 1, gen, kFloat64), "5x5 norm ~4");
  check_gradcheck(normal({2, 3, 4, 4}, 0, 0.8, gen, kFloat64), "batched [2, 3, 4, 4]");
  check_gradcheck(normal({8, 8}, 0, 0.5, gen, kFloat64), "8x8");
  // ||X||_1 ~ 20: five squarings, entries of e^X up to ~1e3; the skew case stays bounded.
  const Tensor big = normal({4, 4}, 0, 4, gen, kFloat64);
  check_gradcheck(big, "4x4 norm ~20", 1e-5, 1e-5);
  check_gradcheck(big - big.transpose(0, 1), "4x4 skew, norm ~30");
  // A transposed (non-contiguous) input.
  check_gradcheck(normal({6, 6}, 0, 0.7, gen, kFloat64).transpose(0, 1), "6x6 transposed view");
}

BOOST_AUTO_TEST_CASE(backward_is_linear_in_the_upstream_gradient) {
  // The upstream gradient is scaled by a power of two inside; huge and tiny G give the same
  // result up to that factor (and zero gives zero).
  Generator gen(6);
  const Tensor x = normal({2, 5, 5}, 0, 1, gen, kFloat64), g = normal({2, 5, 5}, 0, 1, gen, kFloat64);
  const Tensor l = matrix_exp_backward(x, g);
  for (double f : {1e-30, 3.0, 1e25}) {
    BOOST_TEST_INFO("factor " << f);
    BOOST_TEST(rel_err(matrix_exp_backward(x, g * f) / f, l) <= 1e-13);
  }
  BOOST_TEST(amax(abs(matrix_exp_backward(x, Tensor::zeros_like(g)))).item() == 0.0);
}

BOOST_AUTO_TEST_CASE(backward_of_diagonal_closed_form) {
  // For diagonal X the gradient of sum(G * e^X) is G_ij (e^xi - e^xj) / (xi - xj) off the
  // diagonal and G_ii e^xi on it (the divided differences of exp).
  const std::vector<double> d{-1.0, 0.5, 2.0};
  std::vector<double> x(9, 0.0);
  for (size_t i = 0; i < 3; ++i) x[i * 3 + i] = d[i];
  Generator gen(7);
  const Tensor g = normal({3, 3}, 0, 1, gen, kFloat64);
  const Tensor l = matrix_exp_backward(mat(x, {3, 3}), g);
  const auto gv = g.to_vector<double>();
  std::vector<double> ref(9);
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 3; ++j)
      ref[i * 3 + j] = gv[i * 3 + j] * (i == j ? std::exp(d[i]) : (std::exp(d[i]) - std::exp(d[j])) / (d[i] - d[j]));
  BOOST_TEST(rel_err(l, mat(ref, {3, 3})) <= 1e-14);
}

BOOST_AUTO_TEST_CASE(float32_backward) {
  Generator gen(8);
  const Tensor x = normal({2, 6, 6}, 0, 0.8, gen, kFloat64), g = normal({2, 6, 6}, 0, 1, gen, kFloat64);
  Variable v(x.to(kFloat32), true);
  sum(matrix_exp(v) * Variable(g.to(kFloat32))).backward();
  BOOST_TEST((v.grad().dtype() == kFloat32));
  const double err = rel_err(v.grad(), matrix_exp_backward(x, g));
  BOOST_TEST_MESSAGE("matrix_exp float32 backward vs float64: worst relative error " << err);
  BOOST_TEST(err <= 1e-5);
}

// ------------------------------------------------------------ errors

BOOST_AUTO_TEST_CASE(errors_name_the_op_and_shape) {
  check_error([] { matrix_exp(Tensor::zeros({4})); }, {"matrix_exp", "[4]", "square"});
  check_error([] { matrix_exp(Tensor::zeros({2, 3, 4})); }, {"matrix_exp", "[2, 3, 4]", "square"});
  check_error([] { matrix_exp(Variable(Tensor::zeros({3, 4}), true)); }, {"matrix_exp", "[3, 4]"});
  check_error([] { matrix_exp(Tensor::zeros({2, 2}, kInt64)); }, {"matrix_exp", "int64"});
  check_error([] { matrix_exp(mat({1, NAN, 0, 1}, {2, 2})); }, {"matrix_exp", "NaN", "[2, 2]"});
  check_error([] { matrix_exp(mat({1, 0, INFINITY, 1}, {2, 2}).to(kFloat32)); }, {"matrix_exp", "inf", "float32[2, 2]"});
  check_error([] { matrix_exp_backward(Tensor::zeros({3, 3}), Tensor::zeros({2, 2})); },
              {"matrix_exp_backward", "[2, 2]", "[3, 3]"});
}

BOOST_AUTO_TEST_SUITE_END()
