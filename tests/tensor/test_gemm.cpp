// posgrad::cpu::sgemm and dgemm against a naive triple loop that accumulates in double: every
// transpose combination, empty/tiny/prime/larger-than-a-block shapes, alpha/beta (beta == 0 must
// not read C, so C starts as NaN there), leading dimensions wider than the matrix, and calls from
// inside an OpenMP parallel region (GEMM then runs single-threaded on each caller's thread).
//
// Tolerance: for each entry, |got - ref| <= tol * (|alpha| * sum_k |op(A)(i,k)| |op(B)(k,j)| +
// |beta| |C0(i,j)|) + tiny, with tol = 1e-5 for float (K up to 700; float's unit roundoff is 6e-8,
// so this allows about K/8 roundings of error, which blocked summation stays well under) and
// tol = 1e-12 for double.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tensor/cpu/gemm.h"

#ifdef POSGRAD_OPENMP
#include <omp.h>
#endif

namespace {

struct Case {
  bool ta, tb;
  int64_t M, N, K;
  double alpha, beta;
  int64_t pad = 0;  // extra columns in every leading dimension
};

template <typename T>
void gemm_call(const Case& c, const T* A, int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>)
    posgrad::cpu::sgemm(c.ta, c.tb, c.M, c.N, c.K, static_cast<float>(c.alpha), A, lda, B, ldb,
                        static_cast<float>(c.beta), C, ldc);
  else
    posgrad::cpu::dgemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A, lda, B, ldb, c.beta, C, ldc);
}

// Runs one case; returns an empty string on success or a description of the first bad entry.
template <typename T>
std::string check_case(const Case& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  // Stored shapes: A is M x K (or K x M when transposed), B is K x N (or N x K), C is M x N.
  const int64_t a_rows = c.ta ? c.K : c.M, a_cols = c.ta ? c.M : c.K;
  const int64_t b_rows = c.tb ? c.N : c.K, b_cols = c.tb ? c.K : c.N;
  const int64_t lda = a_cols + c.pad, ldb = b_cols + c.pad, ldc = c.N + c.pad;
  // Allocate at least one element so .data() is a valid pointer for empty matrices.
  std::vector<T> A(std::max<int64_t>(1, a_rows * lda)), B(std::max<int64_t>(1, b_rows * ldb));
  std::vector<T> C(std::max<int64_t>(1, c.M * ldc));
  for (auto& x : A) x = static_cast<T>(dist(rng));
  for (auto& x : B) x = static_cast<T>(dist(rng));
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (auto& x : C) x = c.beta == 0.0 ? nan : static_cast<T>(dist(rng));
  const std::vector<T> C0 = C;

  gemm_call<T>(c, A.data(), lda, B.data(), ldb, C.data(), ldc);

  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  for (int64_t i = 0; i < c.M; ++i) {
    for (int64_t j = 0; j < c.N; ++j) {
      double ref = 0.0, mag = 0.0;
      for (int64_t k = 0; k < c.K; ++k) {
        const double a = c.ta ? A[k * lda + i] : A[i * lda + k];
        const double b = c.tb ? B[j * ldb + k] : B[k * ldb + j];
        ref += a * b;
        mag += std::abs(a * b);
      }
      ref *= c.alpha;
      mag *= std::abs(c.alpha);
      if (c.beta != 0.0) {
        ref += c.beta * static_cast<double>(C0[i * ldc + j]);
        mag += std::abs(c.beta * static_cast<double>(C0[i * ldc + j]));
      }
      const double got = C[i * ldc + j];
      if (!(std::abs(got - ref) <= tol * mag + 1e-30))
        return "C(" + std::to_string(i) + "," + std::to_string(j) + ") = " + std::to_string(got) +
               ", expected " + std::to_string(ref);
    }
    // The padding columns of C must be untouched.
    for (int64_t j = c.N; j < ldc; ++j) {
      const T before = C0[i * ldc + j], after = C[i * ldc + j];
      if (!(before == after || (std::isnan(before) && std::isnan(after))))
        return "padding column " + std::to_string(j) + " of row " + std::to_string(i) + " changed";
    }
  }
  return {};
}

std::string describe(const Case& c) {
  return std::string(c.ta ? "T" : "N") + (c.tb ? "T" : "N") + " M=" + std::to_string(c.M) +
         " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) +
         " alpha=" + std::to_string(c.alpha) + " beta=" + std::to_string(c.beta) +
         " pad=" + std::to_string(c.pad);
}

struct Shape3 {
  int64_t M, N, K;
};

// Shapes: empty, 1, tiny, primes around the micro-tile sizes, larger than the cache blocks, and
// skinny ones (GEMV-like, outer-product-like). The direct path's special loops: matrix-vector
// products (N = 1) with K not a multiple of their 8 partial sums and with more rows than their
// 64-row blocks ({19, 1, 13}, {70, 1, 9}, {257, 1, 64}), and register blocks of 16 columns, whole
// and with a tail ({6, 16, 8}, {16, 16, 60}, {17, 31, 13}, {13, 33, 29}), outer products (K = 1:
// {64, 64, 1}, {3, 40, 1}) among them.
const std::vector<Shape3> kShapes = {
    {0, 0, 0},    {0, 5, 3},     {4, 0, 3},     {3, 5, 0},     {1, 1, 1},    {1, 1, 7},
    {2, 3, 4},    {17, 31, 13},  {6, 16, 8},    {12, 32, 5},   {13, 33, 29}, {37, 19, 300},
    {1, 257, 64}, {257, 1, 64},  {64, 64, 1},   {97, 101, 103}, {67, 129, 257},
    {300, 520, 700}, {19, 1, 13}, {70, 1, 9},   {3, 40, 1},    {16, 16, 60},
};

template <typename T>
void run_all(bool big) {
  uint64_t seed = 1;
  for (const Shape3& s : kShapes) {
    const bool is_big = s.M * s.N * s.K > 1000000;
    if (is_big != big) continue;
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const std::vector<std::pair<double, double>> ab =
          big ? std::vector<std::pair<double, double>>{{1.0, 0.0}, {0.5, 1.0}}
              : std::vector<std::pair<double, double>>{{1.0, 0.0}, {1.0, 1.0}, {0.5, 0.0},
                                                       {0.5, 1.0}, {-2.0, 0.25}, {0.0, 0.5}};
      for (auto [alpha, beta] : ab) {
        for (int64_t pad : {int64_t{0}, int64_t{3}}) {
          const Case c{ta, tb, s.M, s.N, s.K, alpha, beta, pad};
          const std::string err = check_case<T>(c, seed++);
          BOOST_TEST(err.empty(), describe(c) << ": " << err);
        }
      }
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gemm)

BOOST_AUTO_TEST_CASE(sgemm_matches_naive_small_shapes) { run_all<float>(false); }
BOOST_AUTO_TEST_CASE(sgemm_matches_naive_large_shapes) { run_all<float>(true); }
BOOST_AUTO_TEST_CASE(dgemm_matches_naive_small_shapes) { run_all<double>(false); }
BOOST_AUTO_TEST_CASE(dgemm_matches_naive_large_shapes) { run_all<double>(true); }

// Shapes that straddle the blocking: K over one KC slice (the second slice must accumulate with
// beta = 1) and N over the NC block, with a non-trivial beta.
BOOST_AUTO_TEST_CASE(sgemm_multiple_k_and_n_blocks) {
  for (int t = 0; t < 4; ++t) {
    const Case c{bool(t & 1), bool(t & 2), 23, 4200, 530, 0.75, -0.5, 1};
    const std::string err = check_case<float>(c, 1000 + t);
    BOOST_TEST(err.empty(), describe(c) << ": " << err);
  }
}

// Shapes one off the edges of whatever micro-kernel and blocking this build compiled (the AVX-512
// 8 x 32 or the AVX 6 x 16 tile, with their own KC and MC): M just under and over the tile and
// one row short of a second A block, N just under and over the tile and a ragged third tile, K
// one past a KC slice; every transpose, with and without beta.
BOOST_AUTO_TEST_CASE(sgemm_edges_of_the_compiled_tile_and_blocks) {
  const posgrad::cpu::SgemmKernelInfo info = posgrad::cpu::sgemm_kernel_info();
  BOOST_TEST_MESSAGE("sgemm kernel " << info.name << ", KC " << info.kc << ", MC " << info.mc);
  uint64_t seed = 5000;
  for (int64_t M : {info.mr - 1, info.mr + 1, info.mc + info.mr - 1})
    for (int64_t N : {info.nr - 1, info.nr + 1, 2 * info.nr + 3})
      for (int t = 0; t < 4; ++t)
        for (double beta : {0.0, 0.5}) {
          const Case c{bool(t & 1), bool(t & 2), M, N, info.kc + 1, 1.5, beta, 2};
          const std::string err = check_case<float>(c, seed++);
          BOOST_TEST(err.empty(), describe(c) << ": " << err);
        }
}

// Each thread of a parallel region calls GEMM on its own C (GEMM must then stay single-threaded
// and use its own packing buffers).
BOOST_AUTO_TEST_CASE(gemm_inside_parallel_region) {
  const std::vector<Case> cases = {
      {false, false, 67, 129, 257, 1.0, 0.0},  {true, false, 130, 70, 90, 0.5, 1.0},
      {false, true, 200, 150, 120, 1.0, 0.0},  {true, true, 33, 300, 65, -1.0, 0.5},
      {false, false, 5, 7, 3, 1.0, 0.0},       {false, false, 256, 256, 256, 1.0, 1.0},
  };
  const int n = static_cast<int>(cases.size());
  std::vector<std::string> errors(2 * n);
#ifdef POSGRAD_OPENMP
#pragma omp parallel for num_threads(2) schedule(dynamic)
#endif
  for (int i = 0; i < 2 * n; ++i) {
    const Case& c = cases[i % n];
    errors[i] = i < n ? check_case<float>(c, 77 + i) : check_case<double>(c, 77 + i);
  }
  for (int i = 0; i < 2 * n; ++i)
    BOOST_TEST(errors[i].empty(), (i < n ? "sgemm " : "dgemm ") << describe(cases[i % n]) << ": "
                                                                 << errors[i]);
}

// Ones in, exact integers out: checks the kernel's sums exactly on a block-straddling shape.
BOOST_AUTO_TEST_CASE(sgemm_exact_on_small_integers) {
  const int64_t M = 131, N = 75, K = 600;
  std::vector<float> A(M * K), B(K * N), C(M * N, -1.0f);
  for (int64_t i = 0; i < M * K; ++i) A[i] = static_cast<float>(i % 3);       // 0, 1, 2
  for (int64_t i = 0; i < K * N; ++i) B[i] = static_cast<float>((i % 5) - 2);  // -2 .. 2
  posgrad::cpu::sgemm(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N);
  bool exact = true;
  for (int64_t i = 0; i < M && exact; ++i)
    for (int64_t j = 0; j < N && exact; ++j) {
      int64_t ref = 0;
      for (int64_t k = 0; k < K; ++k) ref += int64_t(i * K + k) % 3 * ((int64_t(k * N + j) % 5) - 2);
      exact = C[i * N + j] == static_cast<float>(ref);
    }
  BOOST_TEST(exact);
}

BOOST_AUTO_TEST_SUITE_END()
