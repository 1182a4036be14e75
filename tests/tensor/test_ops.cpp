// Forward values of the tensor op set: views, broadcasting, reductions, matmul, softmax,
// layernorm, indexing, joining, random numbers, and the errors bad input gets.
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "tensor/cpu/parallel.h"
#include "tensor/ops.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::throws_with;

namespace {
Tensor T(std::vector<float> v, Shape s) { return Tensor::from_vector(v, s); }
std::vector<float> V(const Tensor& t) { return t.to_vector<float>(); }
}  // namespace

BOOST_AUTO_TEST_SUITE(views)

BOOST_AUTO_TEST_CASE(views_share_storage) {
  Tensor a = Tensor::arange(12).to(kFloat32).reshape({3, 4});
  Tensor t = a.transpose(0, 1);
  BOOST_TEST(!t.is_contiguous());
  BOOST_TEST(t.storage() == a.storage());
  BOOST_TEST(t.at<float>({3, 1}) == 7.0f);
  Tensor s = a.slice(1, 1, 4, 2);  // columns 1 and 3
  BOOST_TEST((V(s) == std::vector<float>{1, 3, 5, 7, 9, 11}));
  s.fill_(-1.0);  // writes through to a
  BOOST_TEST(a.at<float>({2, 3}) == -1.0f);
  BOOST_TEST((V(a.narrow(0, 1, 1)) == std::vector<float>{4, -1, 6, -1}));
  BOOST_TEST((a.select(1, 0).shape() == Shape{3}));
  BOOST_TEST((a.unsqueeze(1).shape() == Shape{3, 1, 4}));
  BOOST_TEST((a.unsqueeze(1).squeeze(1).shape() == Shape{3, 4}));
  BOOST_TEST((a.permute({1, 0}).contiguous().shape() == Shape{4, 3}));
}

BOOST_AUTO_TEST_CASE(reshape_views_when_it_can_and_copies_when_it_must) {
  Tensor a = Tensor::arange(24).to(kFloat32).reshape({2, 3, 4});
  BOOST_TEST(a.reshape({6, 4}).storage() == a.storage());
  BOOST_TEST((a.reshape({-1, 12}).shape() == Shape{2, 12}));
  Tensor t = a.transpose(1, 2);  // [2, 4, 3], not mergeable
  BOOST_TEST(throws_with([&] { t.view({8, 3}); }, "without a copy"));
  Tensor r = t.reshape({8, 3});
  BOOST_TEST(r.storage() != a.storage());
  BOOST_TEST(r.at<float>({1, 0}) == 1.0f);  // t[0][1][0] = a[0][0][1]
  BOOST_TEST(throws_with([&] { a.reshape({5, 5}); }, "cannot reshape"));
  BOOST_TEST(throws_with([&] { a.reshape({-1, -1}); }, "only one -1"));
}

BOOST_AUTO_TEST_CASE(strided_copies_and_ops_over_many_short_rows) {
  // Rows of 16 (the innermost axis, contiguous on both sides) in tasks of 256 rows that start
  // inside an axis and step across every outer axis (strided_loop.h), on one and two threads:
  // a [6, 7, 9, 16] tensor permuted to [6, 9, 7, 16] has 378 rows; a [5, 3, 7, 16] one broadcast
  // over a [5, 1, 7, 16] one has 105; and a transposed [37, 41] has rows of one element.
  for (const int threads : {1, 2}) {
#ifdef POSGRAD_OPENMP
    const int previous = cpu::max_threads();
    omp_set_num_threads(threads);
#endif
    const Tensor a = Tensor::arange(6 * 7 * 9 * 16).to(kFloat32).reshape({6, 7, 9, 16});
    const Tensor p = a.permute({0, 2, 1, 3}).contiguous();
    bool same = true;
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 9; ++j)
        for (int64_t k = 0; k < 7; ++k)
          for (int64_t d = 0; d < 16; ++d) same = same && p.at<float>({i, j, k, d}) == a.at<float>({i, k, j, d});
    BOOST_TEST(same, "permute copy, " << threads << " thread(s)");
    const Tensor x = Tensor::arange(5 * 3 * 7 * 16).to(kFloat32).reshape({5, 3, 7, 16});
    const Tensor y = Tensor::arange(5 * 7 * 16).to(kFloat32).reshape({5, 1, 7, 16});
    const Tensor sum = add(x.permute({0, 2, 1, 3}), y.permute({0, 2, 1, 3}));  // [5, 7, 3, 16]
    same = true;
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 7; ++j)
        for (int64_t k = 0; k < 3; ++k)
          for (int64_t d = 0; d < 16; ++d)
            same = same && sum.at<float>({i, j, k, d}) == x.at<float>({i, k, j, d}) + y.at<float>({i, 0, j, d});
    BOOST_TEST(same, "broadcast add of permuted views, " << threads << " thread(s)");
    const Tensor m = Tensor::arange(37 * 41).to(kFloat32).reshape({37, 41});
    const Tensor t = m.transpose(0, 1).contiguous();
    same = true;
    for (int64_t i = 0; i < 41; ++i)
      for (int64_t j = 0; j < 37; ++j) same = same && t.at<float>({i, j}) == m.at<float>({j, i});
    BOOST_TEST(same, "transpose copy, " << threads << " thread(s)");
#ifdef POSGRAD_OPENMP
    omp_set_num_threads(previous);
#endif
  }
}

BOOST_AUTO_TEST_CASE(expand_uses_stride_zero) {
  Tensor a = T({1, 2, 3}, {3, 1});
  Tensor e = a.expand({2, 3, 4});
  BOOST_TEST(e.stride(0) == 0);
  BOOST_TEST(e.stride(2) == 0);
  BOOST_TEST(e.at<float>({1, 2, 3}) == 3.0f);
  BOOST_TEST(throws_with([&] { a.expand({2, 2}); }, "cannot become"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(elementwise)

BOOST_AUTO_TEST_CASE(broadcasting_binary_ops) {
  Tensor a = T({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = T({10, 20, 30}, {3});
  BOOST_TEST((V(a + b) == std::vector<float>{11, 22, 33, 14, 25, 36}));
  Tensor c = T({1, 2}, {2, 1});
  BOOST_TEST((V(a * c) == std::vector<float>{1, 2, 3, 8, 10, 12}));
  BOOST_TEST((V(a.transpose(0, 1) - T({1, 1}, {2})) == std::vector<float>{0, 3, 1, 4, 2, 5}));
  BOOST_TEST((V(maximum(a, T({3}, {1}))) == std::vector<float>{3, 3, 3, 4, 5, 6}));
  BOOST_TEST((V(gt(a, T({3}, {1}))) == std::vector<float>{0, 0, 0, 1, 1, 1}));
  BOOST_TEST(throws_with([&] { a + T({1, 2}, {2}); }, "cannot be broadcast"));
  BOOST_TEST(throws_with([&] { a + Tensor::ones({3}, kFloat64); }, "dtypes differ"));
}

BOOST_AUTO_TEST_CASE(unary_ops_match_libm) {
  Tensor x = T({-2.0f, -0.5f, 0.0f, 0.7f, 3.0f}, {5});
  const auto e = V(exp(x)), th = V(tanh(x)), sg = V(sigmoid(x)), r = V(relu(x)), g = V(gelu(x));
  const auto xs = V(x);
  for (size_t i = 0; i < xs.size(); ++i) {
    BOOST_CHECK_CLOSE(e[i], std::exp(xs[i]), 1e-4);
    BOOST_CHECK_SMALL(th[i] - std::tanh(xs[i]), 1e-6f);
    BOOST_CHECK_SMALL(sg[i] - 1.0f / (1.0f + std::exp(-xs[i])), 1e-6f);
    BOOST_TEST(r[i] == std::max(xs[i], 0.0f));
    BOOST_CHECK_SMALL(g[i] - 0.5f * xs[i] * (1.0f + std::erf(xs[i] / std::sqrt(2.0f))), 1e-6f);
  }
  BOOST_TEST((V(clamp(x, -1, 1)) == std::vector<float>{-1, -0.5f, 0, 0.7f, 1}));
  BOOST_TEST(throws_with([] { exp(Tensor::ones({2}, kInt64)); }, "int64"));
}

BOOST_AUTO_TEST_CASE(large_arrays_take_the_parallel_path) {
  Tensor a = Tensor::full({1000, 300}, 2.0);
  Tensor b = Tensor::full({300}, 0.5);
  Tensor c = a * b;
  BOOST_TEST(sum(c).item() == 300000.0);
  Tensor big = Tensor::arange(100000).to(kFloat64);
  BOOST_TEST(sum(big).item() == 99999.0 * 100000.0 / 2.0);
}

BOOST_AUTO_TEST_CASE(where_and_masked_fill) {
  Tensor x = T({1, 2, 3, 4}, {2, 2});
  Tensor m = T({1, 0}, {2});
  BOOST_TEST((V(masked_fill(x, m, -9)) == std::vector<float>{-9, 2, -9, 4}));
  BOOST_TEST((V(where(m, x, T({0}, {1}))) == std::vector<float>{1, 0, 3, 0}));
  BOOST_TEST(throws_with([&] { masked_fill(x, T({1, 0, 1}, {3}), 0); }, "cannot be broadcast"));
}

BOOST_AUTO_TEST_CASE(copy_and_cast) {
  Tensor x = T({1.5f, -2.5f}, {2});
  BOOST_TEST((x.to(kInt64).to_vector<int64_t>() == std::vector<int64_t>{1, -2}));
  Tensor y = Tensor::zeros({2, 2});
  y.copy_(x);  // broadcast rows
  BOOST_TEST((V(y) == std::vector<float>{1.5f, -2.5f, 1.5f, -2.5f}));
  BOOST_TEST(throws_with([&] { y.copy_(T({1, 2, 3}, {3})); }, "cannot be broadcast"));
}

BOOST_AUTO_TEST_CASE(copy_from_an_overlapping_view_reads_the_source_first) {
  // A shift within one storage: every element must receive the value from before the copy.
  Tensor x = T({0, 1, 2, 3, 4}, {5});
  x.narrow(0, 1, 4).copy_(x.narrow(0, 0, 4));
  BOOST_TEST((V(x) == std::vector<float>{0, 0, 1, 2, 3}));
  Tensor m = T({1, 2, 3, 4}, {2, 2});
  m.copy_(m.transpose(0, 1));  // in-place transpose
  BOOST_TEST((V(m) == std::vector<float>{1, 3, 2, 4}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reductions)

BOOST_AUTO_TEST_CASE(reduce_along_any_axes) {
  Tensor a = Tensor::arange(24).to(kFloat32).reshape({2, 3, 4});
  BOOST_TEST(sum(a).item() == 276.0);
  BOOST_TEST((V(sum(a, {0, 2})) == std::vector<float>{60, 92, 124}));
  BOOST_TEST((sum(a, {1}, true).shape() == Shape{2, 1, 4}));
  BOOST_TEST((V(mean(a, {-1})) == std::vector<float>{1.5f, 5.5f, 9.5f, 13.5f, 17.5f, 21.5f}));
  BOOST_TEST((V(amax(a, {1})) == std::vector<float>{8, 9, 10, 11, 20, 21, 22, 23}));
  BOOST_TEST((V(amin(a.transpose(0, 2), {2})) == std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  BOOST_TEST((argmax(T({1, 5, 2, 7, 0, 3}, {2, 3}), 1).to_vector<int64_t>() == std::vector<int64_t>{1, 0}));
  BOOST_CHECK_CLOSE(var(T({1, 2, 3, 4}, {4})).item(), 5.0 / 3.0, 1e-4);
  BOOST_CHECK_CLOSE(var(T({1, 2, 3, 4}, {4}), {}, false, 0).item(), 1.25, 1e-4);
  BOOST_TEST(throws_with([&] { sum(a, {3}); }, "out of range"));
  BOOST_TEST(throws_with([&] { sum(a, {1, 1}); }, "repeated"));
}

BOOST_AUTO_TEST_CASE(sum_to_inverts_broadcasting) {
  Tensor g = Tensor::ones({2, 3, 4});
  BOOST_TEST((V(sum_to(g, {3, 1})) == std::vector<float>{8, 8, 8}));
  BOOST_TEST(sum_to(g, {}).item() == 24.0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(linalg_and_normalisation)

BOOST_AUTO_TEST_CASE(matmul_batched_broadcast_and_transposed) {
  Generator gen(3);
  Tensor a = normal({2, 5, 7}, 0, 1, gen, kFloat64);
  Tensor b = normal({7, 3}, 0, 1, gen, kFloat64);
  Tensor c = matmul(a, b);
  BOOST_TEST((c.shape() == Shape{2, 5, 3}));
  double s = 0;
  for (int k = 0; k < 7; ++k) s += a.at<double>({1, 4, k}) * b.at<double>({k, 2});
  BOOST_CHECK_CLOSE(c.at<double>({1, 4, 2}), s, 1e-10);
  // A transposed view goes to GEMM without a copy and gives the same product.
  Tensor bt = b.transpose(0, 1).contiguous().transpose(0, 1);
  BOOST_TEST(max_abs_diff(matmul(a, bt), c) < 1e-12);
  Tensor af = a.to(kFloat32), bf = b.to(kFloat32);
  BOOST_TEST(max_abs_diff(matmul(af, bf).to(kFloat64), c) < 1e-5);
  BOOST_TEST(throws_with([&] { matmul(a, a); }, "inner sizes differ"));
  BOOST_TEST(throws_with([&] { matmul(Tensor::ones({3}), Tensor::ones({3, 1})); }, "at least 2-D"));
}

BOOST_AUTO_TEST_CASE(matmul_with_broadcast_rows_is_correct) {
  // Stride-0 rows must not be mistaken for a matrix with a leading dimension.
  Tensor row = T({1, 2, 3}, {1, 3}).expand({4, 3});
  Tensor b = Tensor::arange(6).to(kFloat32).reshape({3, 2});
  BOOST_TEST((V(matmul(row, b)) == std::vector<float>{16, 22, 16, 22, 16, 22, 16, 22}));
}

BOOST_AUTO_TEST_CASE(softmax_rows_sum_to_one_and_are_stable) {
  Tensor x = T({1000, 1001, 1002, -5, 0, 5}, {2, 3});
  Tensor y = softmax(x, -1);
  const auto v = V(y);
  BOOST_CHECK_CLOSE(v[0] + v[1] + v[2], 1.0f, 1e-4);
  BOOST_CHECK_CLOSE(v[2], 1.0f / (1.0f + std::exp(-1.0f) + std::exp(-2.0f)), 1e-3);
  BOOST_TEST(std::isfinite(V(log_softmax(x, -1))[0]));
  Tensor col = softmax(x, 0);
  BOOST_CHECK_CLOSE(V(col)[0] + V(col)[3], 1.0f, 1e-4);
  Tensor masked = T({-INFINITY, -INFINITY}, {1, 2});
  BOOST_TEST((V(softmax(masked, -1)) == std::vector<float>{0, 0}));  // no NaN from a fully masked row
}

BOOST_AUTO_TEST_CASE(layer_norm_normalises_rows) {
  Tensor x = T({1, 2, 3, 4, 2, 2, 2, 2}, {2, 4});
  LayerNormResult r = layer_norm(x, Tensor::full({4}, 2.0), Tensor::full({4}, 1.0), 1e-5);
  const auto y = V(r.y);
  const float s = 1.0f / std::sqrt(1.25f + 1e-5f);
  BOOST_CHECK_CLOSE(y[0], 2.0f * (-1.5f * s) + 1.0f, 1e-3);
  BOOST_CHECK_SMALL(y[5] - 1.0f, 1e-4f);  // a constant row maps to the bias
  BOOST_TEST(throws_with([&] { layer_norm(x, Tensor::ones({3}), Tensor(), 1e-5); }, "weight/bias"));
}

BOOST_AUTO_TEST_CASE(normalisation_backward_rejects_mixed_or_integer_dtypes) {
  // Checked in the front-end, so every backend (the CUDA kernels read raw pointers) gets them.
  Tensor x = T({1, 2, 3, 4, 2, 2, 2, 2}, {2, 4});
  const LayerNormResult r = layer_norm(x, Tensor(), Tensor(), 1e-5);
  BOOST_TEST(throws_with([&] { layer_norm(Tensor::zeros({2, 4}, kInt64), Tensor(), Tensor(), 1e-5); },
                         "layer_norm: floating-point input required"));
  BOOST_TEST(throws_with([&] { layer_norm_backward(x.to(kFloat64), x, Tensor(), r.mean, r.rstd); },
                         "layer_norm_backward: dtypes differ"));
  BOOST_TEST(throws_with([&] { layer_norm_backward(x, x, Tensor(), r.mean.to(kFloat64), r.rstd); },
                         "layer_norm_backward: dtypes differ"));
  const Tensor y = softmax(x, -1);
  BOOST_TEST(throws_with([&] { softmax_backward(y, x.to(kFloat64), -1, false); }, "softmax_backward: dtypes differ"));
  BOOST_TEST(throws_with([&] { softmax_backward(y.to(kInt64), y.to(kInt64), -1, false); },
                         "softmax_backward: floating-point input required"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(indexing_and_joining)

BOOST_AUTO_TEST_CASE(index_select_gather_scatter) {
  Tensor x = Tensor::arange(12).to(kFloat32).reshape({3, 4});
  Tensor idx = Tensor::from_vector<int64_t>({2, 0}, {2});
  BOOST_TEST((V(index_select(x, 0, idx)) == std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3}));
  BOOST_TEST((V(index_select(x, 1, idx)) == std::vector<float>{2, 0, 6, 4, 10, 8}));
  Tensor emb = index_select(x, 0, Tensor::from_vector<int64_t>({0, 1, 2, 0}, {2, 2}));
  BOOST_TEST((emb.shape() == Shape{2, 2, 4}));
  Tensor g = Tensor::from_vector<int64_t>({3, 0, 1, 1, 2, 2}, {3, 2});
  BOOST_TEST((V(gather(x, 1, g)) == std::vector<float>{3, 0, 5, 5, 10, 10}));
  Tensor sc = scatter_add({3, 4}, 1, g, Tensor::ones({3, 2}));
  BOOST_TEST((V(sc) == std::vector<float>{1, 0, 0, 1, 0, 2, 0, 0, 0, 0, 2, 0}));
  Tensor ia = index_add({3, 2}, 0, Tensor::from_vector<int64_t>({1, 1, 0}, {3}), Tensor::ones({3, 2}));
  BOOST_TEST((V(ia) == std::vector<float>{1, 1, 2, 2, 0, 0}));
  BOOST_TEST(throws_with([&] { index_select(x, 0, Tensor::from_vector<int64_t>({3}, {1})); }, "index 3 is out of range"));
  BOOST_TEST(throws_with([&] { index_select(x, 0, Tensor::ones({1})); }, "expected int64"));
}

BOOST_AUTO_TEST_CASE(cat_and_stack) {
  Tensor a = T({1, 2}, {1, 2}), b = T({3, 4, 5, 6}, {2, 2});
  BOOST_TEST((V(cat({a, b}, 0)) == std::vector<float>{1, 2, 3, 4, 5, 6}));
  BOOST_TEST((V(cat({b, b.slice(1, 0, 1)}, 1)) == std::vector<float>{3, 4, 3, 5, 6, 5}));
  BOOST_TEST((stack({a, a}, 0).shape() == Shape{2, 1, 2}));
  BOOST_TEST(throws_with([&] { cat({a, T({1, 2, 3}, {1, 3})}, 0); }, "differ on axis 1"));
  BOOST_TEST(throws_with([&] { stack({a, b}, 0); }, "shapes differ"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(random_numbers)

BOOST_AUTO_TEST_CASE(philox_known_answers) {
  // Known-answer vectors of Philox4x32-10 published with the Random123 library.
  auto r = philox4x32_10(0, 0, 0);
  BOOST_TEST(r[0] == 0x6627e8d5u);
  BOOST_TEST(r[3] == 0x9b00dbd8u);
  r = philox4x32_10(~0ull, ~0ull, ~0ull);
  BOOST_TEST(r[0] == 0x408f276du);
  BOOST_TEST(r[3] == 0x6d5451fdu);
  r = philox4x32_10(0x85a308d3243f6a88ull, 0x0370734413198a2eull, 0x299f31d0a4093822ull);
  BOOST_TEST(r[0] == 0xd16cfe09u);
  BOOST_TEST(r[3] == 0x24126ea1u);
}

BOOST_AUTO_TEST_CASE(philox_chunk_equals_block_by_block) {
  // philox4x32_10_chunk (the CPU fill's 16 blocks at once) against philox4x32_10, with counters
  // that carry into the high word and keys of both halves.
  for (const uint64_t key : {uint64_t{0}, uint64_t{77}, ~uint64_t{0}, uint64_t{0x299f31d0a4093822ull}}) {
    for (const uint64_t first : {uint64_t{0}, uint64_t{5}, uint64_t{0xFFFFFFF8ull}, ~uint64_t{0} - 3}) {
      uint32_t chunk[4 * kPhiloxChunk];
      philox4x32_10_chunk(first, key, chunk);
      for (int j = 0; j < kPhiloxChunk; ++j) {
        const PhiloxBlock one = philox4x32_10(first + static_cast<uint64_t>(j), 0, key);
        for (int lane = 0; lane < 4; ++lane) BOOST_TEST(chunk[4 * j + lane] == one[lane], "block " << j << " lane " << lane);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(same_seed_same_numbers_and_sane_statistics) {
  Generator g1(5), g2(5), g3(6);
  Tensor a = normal({100000}, 0, 1, g1), b = normal({100000}, 0, 1, g2), c = normal({100000}, 0, 1, g3);
  BOOST_TEST(max_abs_diff(a, b) == 0.0);
  BOOST_TEST(max_abs_diff(a, c) > 0.1);
  BOOST_CHECK_SMALL(mean(a).item(), 0.02);
  BOOST_CHECK_CLOSE(var(a).item(), 1.0, 2.0);
  Tensor u = uniform({100000}, -1, 3, g1);
  BOOST_TEST(amin(u).item() >= -1.0);
  BOOST_TEST(amax(u).item() < 3.0);
  BOOST_CHECK_CLOSE(mean(u).item(), 1.0, 2.0);
  BOOST_CHECK_CLOSE(mean(bernoulli({100000}, 0.3, g1)).item(), 0.3, 3.0);
  auto p = randperm(1000, g1).to_vector<int64_t>();
  std::sort(p.begin(), p.end());
  for (int64_t i = 0; i < 1000; ++i) BOOST_TEST(p[i] == i);
  // The generator advances: two draws differ.
  BOOST_TEST(max_abs_diff(normal({8}, 0, 1, g2), normal({8}, 0, 1, g2)) > 0.0);
}

BOOST_AUTO_TEST_CASE(fills_equal_the_element_by_element_definition) {
  // The CPU fill computes each Philox block once for its four lanes; element i must still be
  // philox_uniform / philox_normal(seed, offset, i) (the numbers the GPU draws), including the
  // last, partial block of an odd size and after the generator has advanced.
  // Sizes around the fill's chunks of 16 blocks (64 elements) too.
  for (const int64_t n : {1, 7, 13, 64, 65, 1000, 4099}) {
    Generator g(77);
    (void)uniform({5}, 0, 1, g);  // advance: offset 2
    const uint64_t seed = g.seed(), offset = g.offset();
    const std::vector<double> u = uniform({n}, -2, 3, g, kFloat64).to_vector<double>();
    const std::vector<double> z = normal({n}, 1, 2, g, kFloat64).to_vector<double>();
    const uint64_t offset_z = offset + static_cast<uint64_t>((n + 3) / 4);
    const std::vector<double> b = bernoulli({n}, 0.4, g, kFloat64).to_vector<double>();
    const uint64_t offset_b = offset_z + static_cast<uint64_t>((n + 3) / 4);
    for (int64_t i = 0; i < n; ++i) {
      const auto e = static_cast<uint64_t>(i);
      BOOST_TEST(u[i] == uniform_between(-2, 3, philox_uniform(seed, offset, e)));
      BOOST_TEST(z[i] == normal_with(1, 2, philox_normal(seed, offset_z, e)));
      BOOST_TEST(b[i] == (philox_uniform(seed, offset_b, e) < 0.4 ? 1.0 : 0.0));
    }
  }
}

BOOST_AUTO_TEST_CASE(printing_is_readable) {
  const std::string s = T({1, 2.5f}, {2}).to_string();
  BOOST_TEST(s.find("[1, 2.5]") != std::string::npos);
  BOOST_TEST(s.find("float32[2]") != std::string::npos);
  const std::string big = Tensor::zeros({100, 100}).to_string();
  BOOST_TEST(big.find("...") != std::string::npos);
  BOOST_TEST(big.size() < 2000u);
}

BOOST_AUTO_TEST_SUITE_END()
