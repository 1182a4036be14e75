// OrthogonalGenerators and matrix_powers: W^T W = I in float32, the rope_like init against the
// closed-form block rotations, the other inits, the doubling table against repeated products
// (and its number of matmul rounds), float64 gradchecks of matrices() and matrix_powers(), errors,
// and the PyTorch golden file of tools/golden_matrix_exp.py (matrix_exp, its gradient and the
// power table), printing the worst errors.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "nn/matrix_exp.h"
#include "nn/orthogonal.h"
#include "nn/safetensors.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_error;

namespace {

Tensor eye(int64_t n, DType dtype) {
  std::vector<double> v(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i * n + i)] = 1.0;
  return Tensor::from_vector(v, {n, n}).to(dtype);
}

// max over generators of |W^T W - I|.
double orthogonality_error(const Tensor& w) {
  return max_abs_diff(matmul(w.transpose(-1, -2), w), eye(w.size(-1), w.dtype()).expand(w.shape()));
}

// [I, W, W^2, ..., W^size] by repeated multiplication (the reference for the doubling table).
Tensor powers_by_products(const Tensor& w, int64_t size) {
  std::vector<Tensor> table{eye(w.size(-1), w.dtype()).expand(w.shape()).contiguous()};
  for (int64_t k = 0; k < size; ++k) table.push_back(matmul(table.back(), w));
  return stack(table, 0);
}

// Number of distinct "matmul" nodes in the graph behind v.
int count_matmuls(const Variable& v) {
  std::set<const Node*> seen;
  std::vector<const Node*> pending{v.grad_fn().get()};
  int count = 0;
  while (!pending.empty()) {
    const Node* n = pending.back();
    pending.pop_back();
    if (n == nullptr || !seen.insert(n).second) continue;
    if (n->name == "matmul") ++count;
    for (const auto& in : n->inputs) pending.push_back(in->grad_fn.get());
  }
  return count;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(orthogonal)

BOOST_AUTO_TEST_CASE(module_shape_and_parameter) {
  Generator gen(1);
  OrthogonalGenerators m(8, 64, GeneratorInit::RopeLike, gen);
  BOOST_TEST(m.parameters().size() == 1u);
  BOOST_TEST(m.named_parameters()[0].first == "generators");
  BOOST_TEST(m.generators().shape() == (Shape{8, 64, 64}), boost::test_tools::per_element());
  BOOST_TEST(m.matrices().shape() == (Shape{8, 64, 64}), boost::test_tools::per_element());
  BOOST_TEST(m.powers(5).shape() == (Shape{6, 8, 64, 64}), boost::test_tools::per_element());
  BOOST_TEST(m.to_string().find("count=8, dim=64, init=rope_like") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(orthogonal_to_float32_epsilon) {
  // max |W^T W - I| for d = 64 (eps32 = 1.19e-7, eps64 = 2.2e-16). The generators APE uses
  // (rope_like: ||A - A^T||_1 = 1; near_identity: ~2; no or one squaring) stay within 8 eps.
  // Large generators need s squarings (4 and 7 here), and the rounding error grows with them:
  // measured 31 and 68 eps32 (34 and 71 eps64), so the bound there is 128 eps. For comparison,
  // torch.matrix_exp in float32 measures 42 and 55 eps32 on such matrices.
  Generator gen(2);
  const double eps32 = 1.1920929e-7, eps64 = 2.220446e-16;
  struct Case {
    const char* init;
    double stddev, tol_eps32;
  };
  for (const Case& c : {Case{"rope_like", 0.0, 8}, Case{"near_identity", 0.0, 8}, Case{"normal", 0.1, 128},
                        Case{"normal", 1.0, 128}}) {
    OrthogonalGenerators m(4, 64, c.init, gen, c.stddev);
    const Tensor w = m.matrices().value();
    BOOST_TEST((w.dtype() == kFloat32));
    const double norm = amax(sum(abs(m.skew().value()), {1})).item();
    const double err = orthogonality_error(w);
    m.to(kFloat64);
    const double err64 = orthogonality_error(m.matrices().value());
    BOOST_TEST_MESSAGE("orthogonal " << c.init << " (stddev " << c.stddev << ", ||A - A^T||_1 = " << norm
                                     << "): max |W^T W - I| = " << err / eps32 << " eps32 (float32), "
                                     << err64 / eps64 << " eps64 (float64)");
    BOOST_TEST(err <= c.tol_eps32 * eps32);
    BOOST_TEST(err64 <= c.tol_eps32 * eps64);
  }
  // det W = +1 (SO(d), since det exp(B) = e^trace(B) = 1 for skew B), checked on a 2x2.
  OrthogonalGenerators small(1, 2, "normal", gen, 3.0);
  const Tensor w = small.matrices().value();
  const double det = w.at<float>({0, 0, 0}) * w.at<float>({0, 1, 1}) - w.at<float>({0, 0, 1}) * w.at<float>({0, 1, 0});
  BOOST_TEST(std::abs(det - 1.0) <= 4 * eps32);
}

BOOST_AUTO_TEST_CASE(rope_like_is_the_closed_form_block_rotations) {
  Generator gen(3);
  for (int64_t d : {8, 64}) {
    OrthogonalGenerators m(3, d, GeneratorInit::RopeLike, gen);
    m.to(kFloat64);
    const Tensor w = m.matrices().value();
    const int64_t n = d / 2;
    std::vector<double> ref(static_cast<size_t>(d * d), 0.0);
    for (int64_t j = 0; j < n; ++j) {
      const double theta = std::pow(10000.0, -2.0 * static_cast<double>(j / 2) / static_cast<double>(n));
      const auto at = [&](int64_t r, int64_t c) -> double& { return ref[static_cast<size_t>(r * d + c)]; };
      at(2 * j, 2 * j) = std::cos(theta);
      at(2 * j, 2 * j + 1) = std::sin(theta);
      at(2 * j + 1, 2 * j) = -std::sin(theta);
      at(2 * j + 1, 2 * j + 1) = std::cos(theta);
    }
    const Tensor r = Tensor::from_vector(ref, {d, d}).expand({3, d, d});
    // A was stored as float32, so theta carries float32 rounding (<= 6e-8 relative).
    const double err = max_abs_diff(w, r);
    BOOST_TEST_MESSAGE("rope_like d=" << d << ": max |W - block rotations| = " << err);
    BOOST_TEST(err <= 1e-7);
  }
  // Duplicated frequencies (d = 64, n = 32): theta_0 = theta_1 = 1, theta_2 = theta_3 = 10000^(-1/16).
  OrthogonalGenerators m(1, 64, GeneratorInit::RopeLike, gen);
  const Tensor a = m.generators().value();
  BOOST_TEST(a.at<float>({0, 0, 1}) == 1.0f);
  BOOST_TEST(a.at<float>({0, 2, 3}) == 1.0f);
  BOOST_TEST(a.at<float>({0, 4, 5}) == static_cast<float>(std::pow(10000.0, -1.0 / 16.0)));
  BOOST_TEST(a.at<float>({0, 6, 7}) == static_cast<float>(std::pow(10000.0, -1.0 / 16.0)));
  BOOST_TEST(a.at<float>({0, 1, 0}) == 0.0f);
  BOOST_TEST(sum(abs(a)).item() == sum(abs(a.narrow(1, 0, 64))).item());  // nothing but A[2j, 2j+1]
}

BOOST_AUTO_TEST_CASE(near_identity_and_normal_inits) {
  Generator gen(4);
  OrthogonalGenerators m(4, 32, GeneratorInit::NearIdentity, gen);
  const auto a = m.generators().value().to_vector<double>();
  double upper = 0.0, mean_lower = 0.0;
  int64_t lower_count = 0;
  for (int64_t g = 0; g < 4; ++g)
    for (int64_t i = 0; i < 32; ++i)
      for (int64_t j = 0; j < 32; ++j) {
        const double v = a[static_cast<size_t>((g * 32 + i) * 32 + j)];
        if (i > j) {
          mean_lower += v;
          ++lower_count;
          BOOST_TEST((v > 0 && v < 1));
        } else {
          upper = std::max(upper, std::abs(v));
        }
      }
  mean_lower /= static_cast<double>(lower_count);
  BOOST_TEST(upper == 0.0);                                        // strict lower triangle only
  BOOST_TEST((mean_lower > 0.3 / 32 && mean_lower < 3.0 / 32));    // entries about 1/d
  const double dist = amax(abs(m.matrices().value() - eye(32, kFloat32))).item();
  BOOST_TEST_MESSAGE("near_identity d=32: max |W - I| = " << dist << ", mean lower entry " << mean_lower);
  BOOST_TEST(dist < 0.5);

  OrthogonalGenerators n(8, 32, GeneratorInit::Normal, gen, 0.1);
  const double sd = std::sqrt(var(n.generators().value()).item());
  BOOST_TEST(std::abs(sd - 0.1) < 0.01);
  // Same seed, same generators.
  Generator g1(9), g2(9);
  OrthogonalGenerators p(2, 6, "near_identity", g1), q(2, 6, "near_identity", g2);
  BOOST_TEST(max_abs_diff(p.generators().value(), q.generators().value()) == 0.0);
}

BOOST_AUTO_TEST_CASE(doubling_equals_repeated_products) {
  Generator gen(5);
  OrthogonalGenerators m(3, 6, GeneratorInit::Normal, gen, 0.5);
  m.to(kFloat64);
  const Tensor w = m.matrices().value();
  for (int64_t size : {0, 1, 2, 3, 5, 8, 13, 64}) {
    const Variable table = matrix_powers(Variable(w, true), size);
    BOOST_TEST(table.shape() == (Shape{size + 1, 3, 6, 6}), boost::test_tools::per_element());
    const double err = max_abs_diff(table.value(), powers_by_products(w, size));
    BOOST_TEST_INFO("size " << size << ": max |doubling - products| " << err);
    BOOST_TEST(err <= 1e-13);
    // ceil(log2 size) rounds, one batched matmul each.
    const int rounds = size <= 1 ? 0 : static_cast<int>(std::ceil(std::log2(static_cast<double>(size))));
    BOOST_TEST(count_matmuls(table) == rounds);
  }
  // Any batch shape [..., d, d]; the first entry is exactly I.
  const Tensor w2 = normal({2, 2, 3, 3}, 0, 0.5, gen, kFloat64);
  const Variable t2 = matrix_powers(Variable(w2), 6);
  BOOST_TEST(t2.shape() == (Shape{7, 2, 2, 3, 3}), boost::test_tools::per_element());
  BOOST_TEST(max_abs_diff(t2.value(), powers_by_products(w2, 6)) <= 1e-14);
  BOOST_TEST(max_abs_diff(t2.value().select(0, 0), eye(3, kFloat64).expand({2, 2, 3, 3})) == 0.0);
}

BOOST_AUTO_TEST_CASE(gradcheck_matrices_and_powers) {
  Generator gen(6);
  GradcheckOptions o;
  o.rtol = 1e-5;
  // matrices(): W = exp(A - A^T) with respect to A, as the module computes it.
  const auto matrices = [](const std::vector<Variable>& v) { return matrix_exp(v[0] - transpose(v[0], -1, -2)); };
  for (double scale : {0.1, 1.0}) {
    const GradcheckResult r = gradcheck(matrices, {normal({3, 5, 5}, 0, scale, gen, kFloat64)}, o);
    BOOST_TEST_INFO("matrices scale " << scale << ": " << r.message);
    BOOST_TEST(r.ok);
    BOOST_TEST_MESSAGE("gradcheck matrices() scale " << scale << ": worst error " << r.max_abs_error);
  }
  // matrix_powers with respect to a general W, and the whole chain A -> W -> table.
  for (int64_t size : {1, 4, 7}) {
    const GradcheckResult r = gradcheck([size](const std::vector<Variable>& v) { return matrix_powers(v[0], size); },
                                        {normal({2, 4, 4}, 0, 0.5, gen, kFloat64)}, o);
    BOOST_TEST_INFO("matrix_powers size " << size << ": " << r.message);
    BOOST_TEST(r.ok);
  }
  const GradcheckResult r = gradcheck(
      [&](const std::vector<Variable>& v) { return matrix_powers(matrices(v), 9); },
      {normal({2, 4, 4}, 0, 0.7, gen, kFloat64)}, o);
  BOOST_TEST_INFO("A -> powers: " << r.message);
  BOOST_TEST(r.ok);
  BOOST_TEST_MESSAGE("gradcheck A -> [I, W, ..., W^9]: worst error " << r.max_abs_error);

  // The module itself: the gradient lands on `generators` and is skew (symmetric part gets none).
  OrthogonalGenerators m(2, 4, GeneratorInit::Normal, gen, 0.5);
  m.to(kFloat64);
  sum(m.powers(5) * Variable(normal({6, 2, 4, 4}, 0, 1, gen, kFloat64))).backward();
  const Tensor ga = m.generators().grad();
  BOOST_TEST(max_abs_diff(ga, -ga.transpose(-1, -2)) <= 1e-12);
}

BOOST_AUTO_TEST_CASE(errors) {
  Generator gen(7);
  check_error([&] { OrthogonalGenerators(2, 5, GeneratorInit::RopeLike, gen); }, {"rope_like", "even", "5"});
  check_error([&] { OrthogonalGenerators(2, 4, "cayley", gen); }, {"cayley", "rope_like", "near_identity", "normal"});
  check_error([&] { OrthogonalGenerators(0, 4, "normal", gen); }, {"OrthogonalGenerators", "count=0"});
  check_error([] { matrix_powers(Variable(Tensor::zeros({2, 3, 4})), 3); }, {"matrix_powers", "[2, 3, 4]"});
  check_error([] { matrix_powers(Variable(Tensor::zeros({3, 3})), -1); }, {"matrix_powers", "-1"});
}

// ------------------------------------------------------------ PyTorch golden file

BOOST_AUTO_TEST_CASE(golden_matches_pytorch) {
  const auto golden = load_safetensors(std::string(POSGRAD_SOURCE_DIR) + "/tests/golden/matrix_exp.safetensors");
  const int64_t size = std::stoll(golden.metadata.at("powers"));
  std::vector<std::string> cases;
  {
    std::string list = golden.metadata.at("cases"), item;
    std::stringstream ss(list);
    while (std::getline(ss, item, ',')) cases.push_back(item);
  }
  BOOST_REQUIRE(cases.size() == 4u);
  // Normwise: max |ours - torch| / max(1, max |torch|) over the tensor. float64 within 1e-12;
  // float32 within 1e-5 for values and 5e-5 for gradients (both sides carry float32 rounding,
  // amplified by up to 5 squarings and, for the table, by products up to W^9).
  const auto check = [](const std::string& what, const Tensor& ours, const Tensor& ref, double tol) {
    BOOST_REQUIRE(ours.shape() == ref.shape());
    const double worst = max_abs_diff(ours, ref) / std::max(1.0, amax(abs(ref)).item());
    BOOST_TEST_MESSAGE(fmt::format("  golden {:26s} max |ours - torch| / max(1, max |torch|) = {:.3g} (tolerance {:.0e})",
                                   what, worst, tol));
    BOOST_TEST(worst <= tol, what << ": worst error " << worst << " exceeds " << tol);
  };
  for (const std::string& c : cases) {
    const Tensor a = golden.at(c + ".A");
    const bool f64 = a.dtype() == kFloat64;
    const double tol = f64 ? 1e-12 : 1e-5, gtol = f64 ? 1e-12 : 5e-5;
    Variable av(a.clone(), true);
    const Variable w = matrix_exp(av - transpose(av, -1, -2));
    check(c + ".W", w.value(), golden.at(c + ".W"), tol);
    sum(w * Variable(golden.at(c + ".R"))).backward();
    check(c + ".grad_W", av.grad(), golden.at(c + ".grad_W"), gtol);
    av.zero_grad();
    const Variable table = matrix_powers(matrix_exp(av - transpose(av, -1, -2)), size);
    check(c + ".powers", table.value(), golden.at(c + ".powers"), tol);
    sum(table * Variable(golden.at(c + ".Rp"))).backward();
    check(c + ".grad_powers", av.grad(), golden.at(c + ".grad_powers"), gtol);
  }
  // A general (non-skew) matrix: forward and backward of matrix_exp itself.
  Variable g(golden.at("general.A").clone(), true);
  const Variable w = matrix_exp(g);
  check("general.W", w.value(), golden.at("general.W"), 1e-12);
  sum(w * Variable(golden.at("general.R"))).backward();
  check("general.grad_W", g.grad(), golden.at("general.grad_W"), 1e-12);
}

BOOST_AUTO_TEST_SUITE_END()
