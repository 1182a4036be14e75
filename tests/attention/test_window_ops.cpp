// The fast attention path's building blocks: KeyWindow tables written out by hand (1-D, causal,
// boxes past the grid, 2-D), the three band kernels against plain loops at many block sizes,
// window_scores / window_weighted_sum against a gather-and-mask reference (forward and
// backward, float32), float64 gradchecks, full windows against dense q k^T and p v, and errors.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>

#include "attention/window_attention_ops.h"
#include "attention/window_kernels.h"
#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_error;
using posgrad::test::throws_with;

namespace {

KeyWindow make_window(std::vector<int64_t> structure, std::vector<int64_t> lo, std::vector<int64_t> hi) {
  return KeyWindow{std::move(structure), std::move(lo), std::move(hi)};
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<int64_t> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

// Reference scores: gather every slot's key with index_select, dot, then zero blocked slots.
Variable reference_scores(const Variable& q, const Variable& k, const KeyWindow& win) {
  const int64_t B = q.size(0), H = q.size(1), N = win.tokens(), W = win.slots(), Dh = q.size(3);
  const Tensor keys = maximum(win.key_index(), Tensor::zeros({}, kInt64)).reshape({N * W});
  Variable kg = reshape(index_select(k, 2, keys), {B, H, N, W, Dh});   // [B, H, N, W, Dh]
  Variable s = sum(mul(unsqueeze(q, 3), kg), {4});                      // [B, H, N, W]
  return masked_fill(s, win.blocked_mask(q.dtype()), 0.0);
}

// Reference weighted sum: blocked slots of p zeroed, values gathered per slot, summed over W.
Variable reference_weighted_sum(const Variable& p, const Variable& v, const KeyWindow& win) {
  const int64_t B = v.size(0), H = v.size(1), N = win.tokens(), W = win.slots(), Dv = v.size(3);
  const Tensor keys = maximum(win.key_index(), Tensor::zeros({}, kInt64)).reshape({N * W});
  Variable vg = reshape(index_select(v, 2, keys), {B, H, N, W, Dv});   // [B, H, N, W, Dv]
  Variable pm = masked_fill(p, win.blocked_mask(p.dtype()), 0.0);
  return sum(mul(unsqueeze(pm, 4), vg), {3});                           // [B, H, N, Dv]
}

double max_abs(const Tensor& t) { return amax(abs(t)).item(); }

// |a - b| <= tol * (1 + max|b|): float32 sums of a few dozen products.
void check_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  BOOST_TEST_CONTEXT(what) {
    BOOST_TEST((a.shape() == b.shape()));
    const double err = max_abs_diff(a, b), scale = 1.0 + max_abs(b);
    BOOST_TEST(err <= tol * scale, "max |diff| " << err << " > " << tol << " * " << scale);
  }
}

// Both ops against the references, forward and backward, float32, for one window and shape.
void compare_with_reference(const KeyWindow& win, int64_t B, int64_t H, int64_t Dh, int64_t Dv, uint64_t seed) {
  const double tol = 2e-5;
  const int64_t N = win.tokens(), W = win.slots();
  Generator gen(seed);
  const std::string name = win.describe() + fmt::format(" B={} H={} Dh={} Dv={}", B, H, Dh, Dv);
  {
    Variable q(normal({B, H, N, Dh}, 0, 1, gen), true), k(normal({B, H, N, Dh}, 0, 1, gen), true);
    Variable qr(q.value(), true), kr(k.value(), true);
    const Tensor g = normal({B, H, N, W}, 0, 1, gen);
    Variable s = window_scores(q, k, win), sr = reference_scores(qr, kr, win);
    check_close(s.value(), sr.value(), tol, "window_scores forward, " + name);
    s.backward(g);
    sr.backward(g);
    check_close(q.grad(), qr.grad(), tol, "window_scores dq, " + name);
    check_close(k.grad(), kr.grad(), tol, "window_scores dk, " + name);
  }
  {
    // p is random at every slot, outside ones included: the op must ignore those.
    Variable p(normal({B, H, N, W}, 0, 1, gen), true), v(normal({B, H, N, Dv}, 0, 1, gen), true);
    Variable pr(p.value(), true), vr(v.value(), true);
    const Tensor g = normal({B, H, N, Dv}, 0, 1, gen);
    Variable o = window_weighted_sum(p, v, win), orf = reference_weighted_sum(pr, vr, win);
    check_close(o.value(), orf.value(), tol, "window_weighted_sum forward, " + name);
    o.backward(g);
    orf.backward(g);
    check_close(p.grad(), pr.grad(), tol, "window_weighted_sum dp, " + name);
    check_close(v.grad(), vr.grad(), tol, "window_weighted_sum dv, " + name);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(key_window)

BOOST_AUTO_TEST_CASE(one_dim_box_and_blocked_mask) {
  const KeyWindow win = make_window({5}, {-1}, {1});
  BOOST_TEST(win.dims() == 1);
  BOOST_TEST(win.tokens() == 5);
  BOOST_TEST(win.slots() == 3);
  BOOST_TEST(win.slot_offset(0) == std::vector<int64_t>{-1}, boost::test_tools::per_element());
  BOOST_TEST(win.slot_offset(2) == std::vector<int64_t>{1}, boost::test_tools::per_element());
  const Tensor keys = win.key_index();
  BOOST_TEST((keys.dtype() == kInt64));
  BOOST_TEST(keys.shape() == (Shape{5, 3}));
  const std::vector<int64_t> expected = flat({{-1, 0, 1}, {0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, -1}});
  BOOST_TEST(keys.to_vector<int64_t>() == expected, boost::test_tools::per_element());
  const Tensor mask = win.blocked_mask(kFloat64);
  BOOST_TEST((mask.dtype() == kFloat64));
  BOOST_TEST(mask.to_vector<double>() == (std::vector<double>{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}),
             boost::test_tools::per_element());
  BOOST_TEST((win.blocked_mask(kFloat32).dtype() == kFloat32));
}

BOOST_AUTO_TEST_CASE(causal_box) {
  const KeyWindow win = make_window({5}, {-3}, {0});
  BOOST_TEST(win.slots() == 4);
  const std::vector<int64_t> expected =
      flat({{-1, -1, -1, 0}, {-1, -1, 0, 1}, {-1, 0, 1, 2}, {0, 1, 2, 3}, {1, 2, 3, 4}});
  BOOST_TEST(win.key_index().to_vector<int64_t>() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(box_wider_than_the_grid) {
  const KeyWindow win = make_window({3}, {-4}, {4});
  BOOST_TEST(win.slots() == 9);
  const std::vector<int64_t> expected = flat({{-1, -1, -1, -1, 0, 1, 2, -1, -1},
                                              {-1, -1, -1, 0, 1, 2, -1, -1, -1},
                                              {-1, -1, 0, 1, 2, -1, -1, -1, -1}});
  BOOST_TEST(win.key_index().to_vector<int64_t>() == expected, boost::test_tools::per_element());
  // A box entirely beside the grid: every slot is blocked.
  const KeyWindow off = make_window({3}, {5}, {6});
  BOOST_TEST(sum(off.blocked_mask(kFloat32)).item() == 6.0);
}

BOOST_AUTO_TEST_CASE(two_dim_5x5_with_box_minus1_to_1) {
  const KeyWindow win = make_window({5, 5}, {-1, -1}, {1, 1});
  BOOST_TEST(win.tokens() == 25);
  BOOST_TEST(win.slots() == 9);
  BOOST_TEST(win.slot_offset(0) == (std::vector<int64_t>{-1, -1}), boost::test_tools::per_element());
  BOOST_TEST(win.slot_offset(5) == (std::vector<int64_t>{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(win.slot_offset(7) == (std::vector<int64_t>{1, 0}), boost::test_tools::per_element());
  const Tensor keys = win.key_index();
  BOOST_TEST(keys.shape() == (Shape{25, 9}));
  auto row = [&](int64_t i) { return keys.select(0, i).to_vector<int64_t>(); };
  BOOST_TEST(row(0) == (std::vector<int64_t>{-1, -1, -1, -1, 0, 1, -1, 5, 6}), boost::test_tools::per_element());
  BOOST_TEST(row(4) == (std::vector<int64_t>{-1, -1, -1, 3, 4, -1, 8, 9, -1}), boost::test_tools::per_element());
  BOOST_TEST(row(12) == (std::vector<int64_t>{6, 7, 8, 11, 12, 13, 16, 17, 18}), boost::test_tools::per_element());
  BOOST_TEST(row(24) == (std::vector<int64_t>{18, 19, -1, 23, 24, -1, -1, -1, -1}), boost::test_tools::per_element());
  // Per dim the coordinates 0..4 have 2, 3, 3, 3, 2 neighbours in the box: 13^2 = 169 valid slots.
  BOOST_TEST(sum(win.blocked_mask(kFloat32)).item() == 225.0 - 169.0);
}

BOOST_AUTO_TEST_CASE(two_dim_asymmetric_box_written_out) {
  // 2 x 3 grid, box rows 0..1, cols -2..0: slots (0,-2) (0,-1) (0,0) (1,-2) (1,-1) (1,0).
  const KeyWindow win = make_window({2, 3}, {0, -2}, {1, 0});
  const std::vector<int64_t> expected = flat({{-1, -1, 0, -1, -1, 3},
                                              {-1, 0, 1, -1, 3, 4},
                                              {0, 1, 2, 3, 4, 5},
                                              {-1, -1, 3, -1, -1, -1},
                                              {-1, 3, 4, -1, -1, -1},
                                              {3, 4, 5, -1, -1, -1}});
  BOOST_TEST(win.key_index().to_vector<int64_t>() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(validate_errors) {
  BOOST_TEST(throws_with([] { make_window({}, {}, {}).validate(); }, "empty structure"));
  BOOST_TEST(throws_with([] { make_window({4, 4}, {-1}, {1}).validate(); }, "one entry per grid dim"));
  BOOST_TEST(throws_with([] { make_window({4}, {-1}, {1, 1}).validate(); }, "one entry per grid dim"));
  check_error([] { make_window({4}, {2}, {1}).validate(); }, {"lo 2 > hi 1"});
  check_error([] { make_window({4, 0}, {0, 0}, {1, 1}).validate(); }, {"structure [4, 0]", "< 1"});
  BOOST_TEST(throws_with([] { make_window({4}, {2}, {1}).key_index(); }, "lo 2 > hi 1"));
  BOOST_TEST(throws_with([] { make_window({4}, {-1}, {1}).slot_offset(3); }, "slot 3"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(window_ops)

// The three band kernels against plain loops over key_index, float64, at block sizes from 1 (one
// query per GEMM) to larger than the row: exercises every clipping case of the runs.
BOOST_AUTO_TEST_CASE(band_kernels_match_plain_loops_at_every_block_size) {
  const std::vector<KeyWindow> windows = {
      make_window({13}, {-3}, {2}),           make_window({13}, {-5}, {0}),   make_window({13}, {-20}, {20}),
      make_window({13}, {4}, {9}),            make_window({13}, {-12}, {-11}), make_window({4, 6}, {-1, -2}, {2, 1}),
      make_window({3, 2, 5}, {-1, 0, -1}, {0, 1, 3}), make_window({6}, {7}, {9})};
  for (const KeyWindow& win : windows) {
    const int64_t BH = 3, D = 5, N = win.tokens(), W = win.slots();
    Generator gen(7);
    const std::vector<double> a = normal({BH * N * D}, 0, 1, gen, kFloat64).to_vector<double>();
    const std::vector<double> b = normal({BH * N * D}, 0, 1, gen, kFloat64).to_vector<double>();
    const std::vector<double> p = normal({BH * N * W}, 0, 1, gen, kFloat64).to_vector<double>();
    const std::vector<int64_t> key = win.key_index().to_vector<int64_t>();
    std::vector<double> dots(BH * N * W, 0.0), apply(BH * N * D, 0.0), applyt(BH * N * D, 0.0);
    for (int64_t bh = 0; bh < BH; ++bh)
      for (int64_t i = 0; i < N; ++i)
        for (int64_t w = 0; w < W; ++w) {
          const int64_t j = key[i * W + w];
          if (j < 0) continue;
          const double pw = p[(bh * N + i) * W + w];
          for (int64_t d = 0; d < D; ++d) {
            dots[(bh * N + i) * W + w] += a[(bh * N + i) * D + d] * b[(bh * N + j) * D + d];
            apply[(bh * N + i) * D + d] += pw * b[(bh * N + j) * D + d];
            applyt[(bh * N + j) * D + d] += pw * a[(bh * N + i) * D + d];
          }
        }
    for (int64_t block : {1, 2, 3, 5, 8, 64}) {
      BOOST_TEST_CONTEXT(win.describe() << ", block " << block) {
        const window_detail::BandPlan plan = window_detail::make_band_plan(win, block);
        std::vector<double> o1(BH * N * W, 99.0), o2(BH * N * D, 99.0), o3(BH * N * D, 99.0);
        window_detail::band_dots<double>(plan, BH, D, a.data(), b.data(), o1.data());
        window_detail::band_apply<double>(plan, BH, D, p.data(), b.data(), o2.data());
        window_detail::band_apply_transposed<double>(plan, BH, D, p.data(), a.data(), o3.data());
        double e1 = 0, e2 = 0, e3 = 0;
        for (size_t x = 0; x < o1.size(); ++x) e1 = std::max(e1, std::abs(o1[x] - dots[x]));
        for (size_t x = 0; x < o2.size(); ++x) e2 = std::max(e2, std::abs(o2[x] - apply[x]));
        for (size_t x = 0; x < o3.size(); ++x) e3 = std::max(e3, std::abs(o3[x] - applyt[x]));
        BOOST_TEST(e1 < 1e-12);
        BOOST_TEST(e2 < 1e-12);
        BOOST_TEST(e3 < 1e-12);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(ops_match_the_gather_reference_in_1d) {
  compare_with_reference(make_window({37}, {-5}, {3}), 2, 3, 12, 7, 11);     // N not a multiple of the block
  compare_with_reference(make_window({150}, {-70}, {70}), 1, 2, 13, 16, 12); // several blocks, wide window
  compare_with_reference(make_window({100}, {-20}, {0}), 2, 1, 7, 9, 13);    // causal window
  compare_with_reference(make_window({10}, {-15}, {12}), 1, 2, 5, 3, 14);    // box past the grid on both sides
  compare_with_reference(make_window({200}, {3}, {40}), 1, 1, 9, 4, 15);     // keys only ahead; late queries see none
  compare_with_reference(make_window({6}, {10}, {12}), 1, 1, 4, 4, 16);      // no valid key at all
}

BOOST_AUTO_TEST_CASE(ops_match_the_gather_reference_in_2d_and_3d) {
  compare_with_reference(make_window({5, 5}, {-1, -1}, {1, 1}), 2, 2, 6, 5, 21);
  compare_with_reference(make_window({7, 9}, {-2, -3}, {1, 2}), 1, 3, 5, 11, 22);
  compare_with_reference(make_window({12, 70}, {-3, -33}, {0, 30}), 1, 2, 8, 8, 23);  // rows of 70: two blocks
  compare_with_reference(make_window({4, 6}, {-5, -9}, {5, 9}), 1, 1, 3, 3, 24);       // box past the grid
  compare_with_reference(make_window({3, 4, 5}, {-1, 0, -2}, {1, 2, 1}), 2, 1, 7, 6, 25);
}

BOOST_AUTO_TEST_CASE(non_contiguous_inputs) {
  const KeyWindow win = make_window({9, 11}, {-2, -3}, {2, 1});
  const int64_t B = 2, H = 3, N = 99, Dh = 6, W = win.slots();
  Generator gen(31);
  // Views with the head and token axes swapped, and p transposed in its last two axes.
  const Tensor qt = normal({B, N, H, Dh}, 0, 1, gen), kt = normal({B, N, H, Dh}, 0, 1, gen);
  const Tensor pt = normal({B, H, W, N}, 0, 1, gen);
  Variable q(qt.permute({0, 2, 1, 3})), k(kt.permute({0, 2, 1, 3})), p(pt.transpose(2, 3));
  BOOST_TEST(!q.value().is_contiguous());
  check_close(window_scores(q, k, win).value(), window_scores(q.value().contiguous(), k.value().contiguous(), win).value(),
              0.0, "scores of views");
  check_close(window_weighted_sum(p, k, win).value(),
              window_weighted_sum(p.value().contiguous(), k.value().contiguous(), win).value(), 0.0,
              "weighted sum of views");
  // Gradients flow back through the views.
  Variable qv(qt, true);
  Variable s = window_scores(permute(qv, {0, 2, 1, 3}), k, win);
  sum(square(s)).backward();
  BOOST_TEST((qv.grad().shape() == qt.shape()));
  BOOST_TEST(max_abs(qv.grad()) > 0.0);
}

BOOST_AUTO_TEST_CASE(gradcheck_float64_1d) {
  Generator gen(41);
  const KeyWindow win = make_window({7}, {-2}, {3});
  auto scores = [win](const std::vector<Variable>& x) { return window_scores(x[0], x[1], win); };
  auto r1 = gradcheck(scores, {normal({2, 1, 7, 3}, 0, 1, gen, kFloat64), normal({2, 1, 7, 3}, 0, 1, gen, kFloat64)});
  BOOST_TEST(r1.ok, r1.message);
  auto wsum = [win](const std::vector<Variable>& x) { return window_weighted_sum(x[0], x[1], win); };
  auto r2 = gradcheck(wsum, {normal({2, 1, 7, 6}, 0, 1, gen, kFloat64), normal({2, 1, 7, 4}, 0, 1, gen, kFloat64)});
  BOOST_TEST(r2.ok, r2.message);
  const KeyWindow causal = make_window({6}, {-3}, {0});
  auto cs = [causal](const std::vector<Variable>& x) {
    return window_weighted_sum(softmax(window_scores(x[0], x[1], causal), -1), x[2], causal);
  };
  auto r3 = gradcheck(cs, {normal({1, 2, 6, 3}, 0, 1, gen, kFloat64), normal({1, 2, 6, 3}, 0, 1, gen, kFloat64),
                           normal({1, 2, 6, 2}, 0, 1, gen, kFloat64)});
  BOOST_TEST(r3.ok, r3.message);
}

BOOST_AUTO_TEST_CASE(gradcheck_float64_2d) {
  Generator gen(42);
  const KeyWindow win = make_window({3, 4}, {-1, 0}, {1, 2});  // W = 9
  auto scores = [win](const std::vector<Variable>& x) { return window_scores(x[0], x[1], win); };
  auto r1 = gradcheck(scores, {normal({1, 2, 12, 3}, 0, 1, gen, kFloat64), normal({1, 2, 12, 3}, 0, 1, gen, kFloat64)});
  BOOST_TEST(r1.ok, r1.message);
  auto wsum = [win](const std::vector<Variable>& x) { return window_weighted_sum(x[0], x[1], win); };
  auto r2 = gradcheck(wsum, {normal({1, 2, 12, 9}, 0, 1, gen, kFloat64), normal({1, 2, 12, 2}, 0, 1, gen, kFloat64)});
  BOOST_TEST(r2.ok, r2.message);
}

BOOST_AUTO_TEST_CASE(full_window_reproduces_dense_attention_products) {
  for (const KeyWindow& win : {make_window({11}, {-10}, {10}), make_window({3, 4}, {-2, -3}, {2, 3})}) {
    BOOST_TEST_CONTEXT(win.describe()) {
      const int64_t B = 2, H = 2, N = win.tokens(), W = win.slots(), Dh = 5;
      Generator gen(51);
      const Tensor q = normal({B, H, N, Dh}, 0, 1, gen), k = normal({B, H, N, Dh}, 0, 1, gen);
      const Tensor P = normal({B, H, N, N}, 0, 1, gen);
      // slot[i, j]: the slot of query i that holds key j (a full window holds every key once).
      const std::vector<int64_t> key = win.key_index().to_vector<int64_t>();
      std::vector<int64_t> slot(static_cast<size_t>(N * N), -1), to_slot(static_cast<size_t>(N * W), 0);
      for (int64_t i = 0; i < N; ++i)
        for (int64_t w = 0; w < W; ++w)
          if (key[i * W + w] >= 0) slot[i * N + key[i * W + w]] = w;
      BOOST_TEST(*std::min_element(slot.begin(), slot.end()) >= 0);
      // Gathered back to [B, H, N, N], the window scores are q k^T.
      const Tensor idx = Tensor::from_vector(slot, {1, 1, N, N}).expand({B, H, N, N}).contiguous();
      const Tensor scores = window_scores(q, k, win).value();
      check_close(gather(scores, 3, idx), matmul(q, k.transpose(-1, -2)), 2e-6, "scores vs q k^T");
      // Dense P scattered onto the slots gives P v.
      const Tensor pw = scatter_add({B, H, N, W}, 3, idx, P);
      check_close(window_weighted_sum(pw, k, win).value(), matmul(P, k), 2e-6, "weighted sum vs P v");
    }
  }
}

BOOST_AUTO_TEST_CASE(errors_name_the_op_and_the_shapes) {
  const KeyWindow win = make_window({4, 5}, {-1, -1}, {1, 1});
  Variable q(Tensor::zeros({1, 2, 20, 4})), k5(Tensor::zeros({1, 2, 20, 5})), k19(Tensor::zeros({1, 2, 19, 4}));
  check_error([&] { window_scores(q, k5, win); }, {"window_scores", "[1, 2, 20, 4]", "[1, 2, 20, 5]"});
  check_error([&] { window_scores(q, k19, win); }, {"window_scores", "[1, 2, 19, 4]"});
  Variable q19(Tensor::zeros({1, 2, 19, 4}));
  check_error([&] { window_scores(q19, k19, win); }, {"window_scores", "N = 19", "structure [4, 5]"});
  check_error([&] { window_scores(Variable(Tensor::zeros({2, 20, 4})), Variable(Tensor::zeros({2, 20, 4})), win); },
              {"window_scores", "[B, H, N, *]", "[2, 20, 4]"});
  check_error([&] { window_scores(q, Variable(Tensor::zeros({1, 2, 20, 4}, kFloat64)), win); },
              {"window_scores", "float32", "float64"});
  check_error([&] { window_scores(Variable(Tensor::zeros({1, 2, 20, 4}, kInt64)), Variable(Tensor::zeros({1, 2, 20, 4}, kInt64)), win); },
              {"window_scores", "int64"});
  check_error([&] { window_scores(q, q, make_window({20}, {1}, {0})); }, {"window_scores", "lo 1 > hi 0"});
  Variable p8(Tensor::zeros({1, 2, 20, 8})), v(Tensor::zeros({1, 2, 20, 3}));
  check_error([&] { window_weighted_sum(p8, v, win); }, {"window_weighted_sum", "W = 9", "[1, 2, 20, 8]"});
  check_error([&] { window_weighted_sum(Variable(Tensor::zeros({1, 2, 20, 9})), Variable(Tensor::zeros({1, 3, 20, 3})), win); },
              {"window_weighted_sum", "[1, 2, 20, 9]", "[1, 3, 20, 3]"});
}

BOOST_AUTO_TEST_SUITE_END()
