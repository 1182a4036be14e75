// Numerical edge cases of the differentiable ops and losses: softmax, log_softmax,
// cross-entropy (with and without label smoothing) and binary cross-entropy with logits at
// +-1e4, binary cross-entropy at probabilities exactly 0 and 1 (logs clamped at -100 as PyTorch
// does), matrix exponentials of generators with 1-norm 50, and losses over empty batches and
// single tokens. Every forward and gradient must be finite and equal the analytic value, written
// out below from the formulas (in double); the PyTorch 1.13 values quoted in the comments were
// computed with /usr/bin/python3 (torch.softmax, F.cross_entropy, F.binary_cross_entropy,
// torch.matrix_exp, then .backward()) and agree.
//
// Deliberately not here: bad arguments (tests/tensor/test_bad_input.cpp) and the gradchecks of
// ordinary inputs (test_gradcheck.cpp).
#include <boost/test/unit_test.hpp>

// The expected values below include braced lists such as {1e4, 1e4, 0, 0}, which GCC 12 at
// -march=native on AVX-512 miscompiled until the top-level CMakeLists.txt turned its SLP
// vectorizer off (docs/reliability/edges.md): these tests fail again if that flag is dropped.

#include <cmath>
#include <vector>

#include "autograd/functions.h"
#include "nn/losses.h"
#include "nn/matrix_exp.h"

using namespace posgrad;

namespace {

// A leaf of `dtype` holding `values`, requiring a gradient.
Variable leaf(const std::vector<double>& values, const Shape& shape, DType dtype) {
  return Variable(Tensor::from_vector(values, shape).to(dtype), true);
}

bool all_finite(const Tensor& t) {
  for (double v : t.to_vector<double>())
    if (!std::isfinite(v)) return false;
  return true;
}

// |got - want| <= atol + rtol |want| element by element, with the first miss reported.
void check_close(const Tensor& got, const std::vector<double>& want, double rtol, double atol, const std::string& what) {
  const std::vector<double> g = got.to_vector<double>();
  BOOST_TEST_REQUIRE(g.size() == want.size(), what << ": " << g.size() << " values, expected " << want.size());
  for (size_t i = 0; i < g.size(); ++i)
    BOOST_TEST(std::abs(g[i] - want[i]) <= atol + rtol * std::abs(want[i]),
               what << "[" << i << "] = " << g[i] << ", expected " << want[i]);
}

double tolerance(DType dtype) { return dtype == kFloat32 ? 2e-6 : 1e-13; }

const std::vector<DType> kFloatTypes = {kFloat32, kFloat64};

// Logits with +-1e4: row 0 two close winners (1e4, 9999) and a loser, row 1 one winner, row 2
// all equal at -1e4. Weights w make sum(w * y) depend on every output.
const std::vector<double> kLogits = {1e4, 9999.0, -1e4, -1e4, -1e4, 1e4, -1e4, -1e4, -1e4};
const std::vector<double> kWeights = {1.0, 2.0, 3.0, 0.5, -1.0, 2.0, 1.0, -2.0, 4.0};

// softmax of kLogits by hand: row 0 [s(1), s(-1), 0] (e^-20000 underflows to exactly 0),
// row 1 [0, 0, 1], row 2 [1/3, 1/3, 1/3]; s = the logistic function.
std::vector<double> softmax_by_hand() {
  const double s1 = 1.0 / (1.0 + std::exp(-1.0)), sm1 = 1.0 - s1;
  return {s1, sm1, 0.0, 0.0, 0.0, 1.0, 1.0 / 3, 1.0 / 3, 1.0 / 3};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(numerical_edges)

BOOST_AUTO_TEST_CASE(softmax_at_plus_minus_1e4) {
  const std::vector<double> y = softmax_by_hand();
  // d/dx sum(w y) = y (w - sum_j w_j y_j) per row.
  std::vector<double> dx(9);
  for (int r = 0; r < 3; ++r) {
    double wy = 0;
    for (int j = 0; j < 3; ++j) wy += kWeights[3 * r + j] * y[3 * r + j];
    for (int j = 0; j < 3; ++j) dx[3 * r + j] = y[3 * r + j] * (kWeights[3 * r + j] - wy);
  }
  // torch float32: y row 0 = [0.7310586, 0.2689414, 0], dx row 0 = [-0.1966119, 0.1966119, 0].
  for (DType dt : kFloatTypes) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Variable x = leaf(kLogits, {3, 3}, dt);
      Variable out = softmax(x, -1);
      sum(out * Variable(Tensor::from_vector(kWeights, {3, 3}).to(dt))).backward();
      BOOST_TEST(all_finite(out.value()));
      BOOST_TEST(all_finite(x.grad()));
      check_close(out.value(), y, tolerance(dt), tolerance(dt), "softmax");
      check_close(x.grad(), dx, tolerance(dt), tolerance(dt), "softmax grad");
    }
  }
}

BOOST_AUTO_TEST_CASE(log_softmax_at_plus_minus_1e4) {
  const std::vector<double> y = softmax_by_hand();
  const double l1 = std::log1p(std::exp(-1.0));  // log(1 + e^-1)
  // log softmax by hand: row 0 [-l1, -1 - l1, -20000 - l1], row 1 [-2e4, -2e4, 0], row 2 -log 3.
  const std::vector<double> logy = {-l1, -1 - l1, -2e4 - l1, -2e4, -2e4, 0.0, -std::log(3.0), -std::log(3.0), -std::log(3.0)};
  // d/dx sum(w log y) = w - y sum_j w_j per row.
  std::vector<double> dx(9);
  for (int r = 0; r < 3; ++r) {
    const double wsum = kWeights[3 * r] + kWeights[3 * r + 1] + kWeights[3 * r + 2];
    for (int j = 0; j < 3; ++j) dx[3 * r + j] = kWeights[3 * r + j] - y[3 * r + j] * wsum;
  }
  // torch float32: row 0 = [-0.31326166, -1.3132616, -20000.3125], dx row 1 = [0.5, -1, 0.5].
  for (DType dt : kFloatTypes) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Variable x = leaf(kLogits, {3, 3}, dt);
      Variable out = log_softmax(x, -1);
      sum(out * Variable(Tensor::from_vector(kWeights, {3, 3}).to(dt))).backward();
      BOOST_TEST(all_finite(out.value()));
      BOOST_TEST(all_finite(x.grad()));
      check_close(out.value(), logy, tolerance(dt), tolerance(dt), "log_softmax");
      check_close(x.grad(), dx, tolerance(dt), tolerance(dt), "log_softmax grad");
    }
  }
}

BOOST_AUTO_TEST_CASE(softmax_at_plus_minus_1e4_along_a_leading_axis) {
  // The same rows as columns: softmax over axis 0 of the transpose.
  const std::vector<double> y = softmax_by_hand();
  for (DType dt : kFloatTypes) {
    Variable x = Variable(Tensor::from_vector(kLogits, {3, 3}).to(dt).transpose(0, 1).contiguous(), true);
    Variable out = softmax(x, 0);
    sum(out).backward();  // the gradient of sum(softmax) is exactly 0 per column
    check_close(out.value().transpose(0, 1), y, tolerance(dt), tolerance(dt), "softmax axis 0");
    check_close(x.grad(), std::vector<double>(9, 0.0), 0.0, tolerance(dt), "softmax axis 0 grad");
  }
}

BOOST_AUTO_TEST_CASE(cross_entropy_at_plus_minus_1e4) {
  const std::vector<double> y = softmax_by_hand();
  const double l1 = std::log1p(std::exp(-1.0));
  for (DType dt : kFloatTypes) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      // Targets at the likely classes: mean of (1 + l1, 0, log 3); torch (first two rows) 0.65663.
      {
        Variable x = leaf(kLogits, {3, 3}, dt);
        Variable loss = cross_entropy(x, Tensor::from_vector<int64_t>({1, 2, 0}, {3}));
        loss.backward();
        check_close(loss.value(), {(1 + l1 + 0 + std::log(3.0)) / 3}, tolerance(dt), 0, "loss");
        // (softmax - onehot) / 3
        std::vector<double> dx(9);
        for (int i = 0; i < 9; ++i) dx[i] = y[i] / 3;
        dx[1] -= 1.0 / 3;
        dx[5] -= 1.0 / 3;
        dx[6] -= 1.0 / 3;
        check_close(x.grad(), dx, tolerance(dt), tolerance(dt), "grad");
      }
      // Targets at the impossible classes: a loss of about 2e4 per row, finite, and the same
      // gradient formula (no NaN from 0 * inf).
      {
        Variable x = leaf(kLogits, {3, 3}, dt);
        Variable loss = cross_entropy(x, Tensor::from_vector<int64_t>({2, 0, 1}, {3}), Reduction::None);
        sum(loss).backward();
        check_close(loss.value(), {2e4 + l1, 2e4, std::log(3.0)}, tolerance(dt), 0, "loss");
        std::vector<double> dx = y;
        dx[2] -= 1;
        dx[3] -= 1;
        dx[7] -= 1;
        check_close(x.grad(), dx, tolerance(dt), tolerance(dt), "grad");
      }
      // Label smoothing eps = 0.1: el = (1 - eps) nll + eps/C sum_c -log p_c; torch (first two
      // rows, targets 2 and 0) 19000.1733, dx row 0 = [0.3488626, 0.1178040, -0.4666667].
      {
        const double eps = 0.1, C = 3;
        Variable x = leaf(std::vector<double>(kLogits.begin(), kLogits.begin() + 6), {2, 3}, dt);
        Variable loss = cross_entropy(x, Tensor::from_vector<int64_t>({2, 0}, {2}), Reduction::Mean, -100, eps);
        loss.backward();
        const double row0 = (1 - eps) * (2e4 + l1) + eps / C * (l1 + 1 + l1 + 2e4 + l1);
        const double row1 = (1 - eps) * 2e4 + eps / C * (2e4 + 2e4 + 0);
        check_close(loss.value(), {(row0 + row1) / 2}, tolerance(dt), 0, "smoothed loss");
        // d el / dx = y - (1 - eps) onehot - eps / C, halved by the mean.
        std::vector<double> dx(6);
        for (int i = 0; i < 6; ++i) dx[i] = (y[i] - eps / C) / 2;
        dx[2] -= (1 - eps) / 2;
        dx[3] -= (1 - eps) / 2;
        check_close(x.grad(), dx, tolerance(dt), tolerance(dt), "smoothed grad");
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(binary_cross_entropy_with_logits_at_plus_minus_1e4) {
  // l = max(x, 0) - x t + log(1 + e^-|x|): [1e4, 1e4, 0, 0]; dl/dx = sigmoid(x) - t = [1, -1, 0, 0];
  // dl/dt = -x. torch gives the same values in float32 and float64.
  for (DType dt : kFloatTypes) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Variable x = leaf({1e4, -1e4, 1e4, -1e4}, {4}, dt);
      Variable t = leaf({0, 1, 1, 0}, {4}, dt);
      Variable loss = binary_cross_entropy_with_logits(x, t, Reduction::None);
      sum(loss).backward();
      check_close(loss.value(), {1e4, 1e4, 0, 0}, tolerance(dt), 0, "loss");
      check_close(x.grad(), {1, -1, 0, 0}, 0, 0, "grad logits");
      check_close(t.grad(), {-1e4, 1e4, -1e4, 1e4}, 0, 0, "grad targets");
    }
  }
}

BOOST_AUTO_TEST_CASE(binary_cross_entropy_at_probabilities_0_and_1) {
  // l = -(t max(log p, -100) + (1 - t) max(log(1 - p), -100)) at p in {0, 1}: 100 for a wrong
  // certainty, 0 for a right one, 50 for p = 0 at t = 0.5. PyTorch's dl/dp is
  // (p - t) / max(p (1 - p), 1e-12): -1e12, 1e12, 0, 0, -5e11 (torch float32: -999999995904, ...).
  // dl/dt is the derivative of the clamped loss, max(log(1 - p), -100) - max(log p, -100) =
  // +-100; PyTorch 1.13 returns +-inf there (it differentiates the unclamped logs).
  for (DType dt : kFloatTypes) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Variable p = leaf({0, 1, 0, 1, 0}, {5}, dt);
      Variable t = leaf({1, 0, 0, 1, 0.5}, {5}, dt);
      Variable loss = binary_cross_entropy(p, t, Reduction::None);
      sum(loss).backward();
      BOOST_TEST(all_finite(loss.value()));
      BOOST_TEST(all_finite(p.grad()));
      BOOST_TEST(all_finite(t.grad()));
      check_close(loss.value(), {100, 100, 0, 0, 50}, tolerance(dt), 0, "loss");
      // 1e-12 is not a float32 number: the float32 denominator is 1e-12 rounded, 1e-7 off.
      check_close(p.grad(), {-1e12, 1e12, 0, 0, -5e11}, dt == kFloat32 ? 1e-7 : 1e-12, 0, "grad probs");
      check_close(t.grad(), {100, -100, 100, -100, 100}, tolerance(dt), 0, "grad targets");
      // Mean reduction: 250 / 5.
      check_close(binary_cross_entropy(p, t).value(), {50}, tolerance(dt), 0, "mean");
    }
  }
}

BOOST_AUTO_TEST_CASE(matrix_exp_of_a_rotation_generator_with_norm_50) {
  // exp([[0, a], [-a, 0]]) = [[cos a, sin a], [-sin a, cos a]] for a = 50 (1-norm 50: six
  // squarings). Orthogonal to 1e-5 in float32 (Q^T Q = I), and the value by hand.
  const double a = 50;
  for (DType dt : kFloatTypes) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Variable x = leaf({0, a, -a, 0}, {2, 2}, dt);
      Variable e = matrix_exp(x);
      const Tensor q = e.value();
      check_close(q, {std::cos(a), std::sin(a), -std::sin(a), std::cos(a)}, 0, dt == kFloat32 ? 2e-5 : 1e-12, "exp");
      const Tensor qtq = matmul(q.transpose(0, 1), q);
      check_close(qtq, {1, 0, 0, 1}, 0, dt == kFloat32 ? 1e-5 : 1e-13, "Q^T Q");
      // d/da of sum(W e^x) along x = a J is finite; its gradient must be finite everywhere.
      sum(e * Variable(Tensor::from_vector<double>({1, -2, 0.5, 3}, {2, 2}).to(dt))).backward();
      BOOST_TEST(all_finite(x.grad()));
    }
  }
}

BOOST_AUTO_TEST_CASE(matrix_exp_of_a_skew_generator_with_norm_50) {
  // A 4x4 skew-symmetric generator with 1-norm (largest absolute column sum) exactly 50.
  const std::vector<double> A = {0, 20, -15, 15, -20, 0, 10, -5, 15, -10, 0, 25, -15, 5, -25, 0};
  const std::vector<double> W = {1, -2, 0.5, 3, 0, 1, -1, 2, 2, 0.25, 1, -1, -0.5, 1, 1.5, 0};
  // torch.matrix_exp(A) and the gradient of sum(W * matrix_exp(A)) in float64 (torch 1.13).
  const std::vector<double> want_exp = {
      -0.10258791240343616, -0.5182311561723344, 0.727223562805841,    0.4382443139402519,
      -0.1446266270883986,  -0.5813185336472996, -0.684765710751949,   0.4150274961415926,
      -0.2116675091586032,  -0.5672989909627698, 0.04471381721006065,  -0.7945875628083489,
      0.9611221173879634,   -0.267725766528096,  -0.015571950065880847, -0.06576248000006202};
  const std::vector<double> want_grad = {
      0.6932201782804728,   0.7191209829752573,   -0.2525547989260438, 1.065530031338899,
      -1.1898413348500172,  0.5311334025483929,   0.019574224135765508, 0.024555347602023214,
      0.4141929450168119,   -0.9167667741077118,  0.9879841091797019,  0.7242424293985295,
      -0.035017875243148575, -0.11364082103872898, -1.2119260078539928, 0.8358804661837814};
  for (DType dt : kFloatTypes) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Variable x = leaf(A, {4, 4}, dt);
      Variable e = matrix_exp(x);
      check_close(e.value(), want_exp, 0, dt == kFloat32 ? 5e-5 : 1e-11, "exp");
      const Tensor qtq = matmul(e.value().transpose(0, 1), e.value());
      check_close(qtq, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 0, dt == kFloat32 ? 1e-5 : 1e-13, "Q^T Q");
      sum(e * Variable(Tensor::from_vector(W, {4, 4}).to(dt))).backward();
      BOOST_TEST(all_finite(x.grad()));
      check_close(x.grad(), want_grad, 0, dt == kFloat32 ? 5e-4 : 1e-10, "grad");
    }
  }
}

BOOST_AUTO_TEST_CASE(losses_of_an_empty_batch) {
  // B = 0: Mean is 0 (documented deviation from PyTorch's NaN), Sum is 0, None is empty; the
  // gradient is an empty tensor of the input's shape. Never NaN, never a crash.
  for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
    BOOST_TEST_CONTEXT("reduction " << static_cast<int>(r)) {
      const Tensor no_targets = Tensor::zeros({0}, kInt64);
      auto check = [&](const Variable& loss, const Variable& input, const Shape& none_shape) {
        if (r == Reduction::None) {
          BOOST_TEST(loss.shape() == none_shape);
          sum(loss).backward();
        } else {
          BOOST_TEST(loss.numel() == 1);
          BOOST_TEST(loss.item() == 0.0);
          loss.backward();
        }
        BOOST_TEST(input.grad().shape() == input.shape());
      };
      Variable logits(Tensor::zeros({0, 5}), true);
      check(cross_entropy(logits, no_targets, r), logits, {0});
      Variable smoothed(Tensor::zeros({0, 5}), true);
      check(cross_entropy(smoothed, no_targets, r, -100, 0.1), smoothed, {0});
      Variable log_probs(Tensor::zeros({0, 5}), true);
      check(nll_loss(log_probs, no_targets, r), log_probs, {0});
      Variable seq(Tensor::zeros({0, 7, 5}), true);  // [B = 0, N, C]
      check(cross_entropy(seq, Tensor::zeros({0, 7}, kInt64), r), seq, {0, 7});
      Variable p(Tensor::zeros({0}), true), t(Tensor::zeros({0}), true);
      check(binary_cross_entropy(p, t, r), p, {0});
      Variable x(Tensor::zeros({0, 3}), true), xt(Tensor::zeros({0, 3}), true);
      check(binary_cross_entropy_with_logits(x, xt, r), x, {0, 3});
      Variable m(Tensor::zeros({0, 3}), true), mt(Tensor::zeros({0, 3}));
      check(mse_loss(m, mt, r), m, {0, 3});
    }
  }
}

BOOST_AUTO_TEST_CASE(losses_of_one_token) {
  // [B, N = 1, C] with extreme logits: the same values as [B, C].
  for (DType dt : kFloatTypes) {
    Variable x = leaf(kLogits, {3, 1, 3}, dt);
    Variable loss = cross_entropy(x, Tensor::from_vector<int64_t>({1, 2, 0}, {3, 1}), Reduction::None);
    BOOST_TEST(loss.shape() == (Shape{3, 1}));
    sum(loss).backward();
    const double l1 = std::log1p(std::exp(-1.0));
    check_close(loss.value(), {1 + l1, 0, std::log(3.0)}, tolerance(dt), tolerance(dt), "loss");
    BOOST_TEST(all_finite(x.grad()));
  }
  // A single class: log_softmax is 0, the loss 0 and its gradient exactly 0.
  Variable one(Tensor::full({2, 1}, 1e4), true);
  Variable loss = cross_entropy(one, Tensor::zeros({2}, kInt64));
  loss.backward();
  BOOST_TEST(loss.item() == 0.0);
  check_close(one.grad(), {0, 0}, 0, 0, "single class grad");
}

BOOST_AUTO_TEST_SUITE_END()
