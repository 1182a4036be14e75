// The CUDA backend's host-side arithmetic, checked on the CPU (no GPU needed, runs in every
// build): the cuBLAS GEMM plan (tensor/cuda/gemm_plan.h) against a reference implementation of
// cuBLAS's documented column-major strided-batched semantics, including the argument rules
// cuBLAS enforces; and the kernels' strided indexing (tensor/cuda/strided.h: make_strided +
// the very strided_offsets the kernels call) against naive offsets over the original view.
// What it cannot check: the kernels' arithmetic on a GPU (tests/tensor/test_cuda_parity.cpp).
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "posgrad.h"
#include "tensor/cuda/gemm_plan.h"
#include "tensor/cuda/strided.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::throws_with;

namespace {

// cublas<t>gemmStridedBatched as documented: for every p < batch,
//   C_p = op(A_p) op(B_p), A_p = A + p * stride_a (column-major, leading dimension lda), ...
// op(A) is m x k: A(i, l) = A[i + l * lda] for op N, A[l + i * lda] for op T; op(B) is k x n.
void reference_cublas_gemm(const cuda::GemmPlan& p, const double* A, const double* B, double* C) {
  for (int64_t b = 0; b < p.batch; ++b) {
    const double* Ab = A + b * p.stride_a;
    const double* Bb = B + b * p.stride_b;
    double* Cb = C + b * p.stride_c;
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < p.k; ++l) {
          const double a = p.trans_a ? Ab[l + i * p.lda] : Ab[i + l * p.lda];
          const double bv = p.trans_b ? Bb[j + l * p.ldb] : Bb[l + j * p.ldb];
          acc += a * bv;
        }
        Cb[i + j * p.ldc] = acc;
      }
  }
}

// The argument checks cuBLAS makes (CUBLAS_STATUS_INVALID_VALUE otherwise).
void check_cublas_rules(const cuda::GemmPlan& p) {
  BOOST_TEST(p.m >= 1);
  BOOST_TEST(p.n >= 1);
  BOOST_TEST(p.k >= 1);
  BOOST_TEST(p.lda >= std::max<int64_t>(1, p.trans_a ? p.k : p.m));
  BOOST_TEST(p.ldb >= std::max<int64_t>(1, p.trans_b ? p.n : p.k));
  BOOST_TEST(p.ldc >= std::max<int64_t>(1, p.m));
}

// How an operand of the test is laid out before it reaches the backend.
enum class View { RowMajor, Transposed, PaddedRows, PaddedTransposed, BroadcastBatch };
const char* view_name(View v) {
  switch (v) {
    case View::RowMajor: return "row-major";
    case View::Transposed: return "transposed";
    case View::PaddedRows: return "row-major with padded rows";
    case View::PaddedTransposed: return "transposed with padded columns";
    case View::BroadcastBatch: return "one matrix broadcast over the batch";
  }
  return "?";
}

// A [batch, rows, cols] float64 operand with the given layout (random values, never zero).
Tensor make_operand(int64_t batch, int64_t rows, int64_t cols, View view, Generator& gen) {
  auto values = [&](const Shape& s) { return uniform(s, 0.5, 1.5, gen, kFloat64); };
  switch (view) {
    case View::RowMajor: return values({batch, rows, cols});
    case View::Transposed: return values({batch, cols, rows}).transpose(1, 2);
    case View::PaddedRows: return values({batch, rows, cols + 3}).narrow(2, 1, cols);
    case View::PaddedTransposed: return values({batch, cols, rows + 2}).narrow(2, 2, rows).transpose(1, 2);
    case View::BroadcastBatch: return values({1, rows, cols}).expand({batch, rows, cols});
  }
  return {};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cuda_host_logic)

BOOST_AUTO_TEST_CASE(gemm_plan_computes_row_major_matmul_through_column_major_cublas) {
  Generator gen(11);
  const std::vector<View> views{View::RowMajor, View::Transposed, View::PaddedRows,
                                View::PaddedTransposed, View::BroadcastBatch};
  const std::vector<std::array<int64_t, 3>> sizes{{5, 7, 3}, {1, 4, 6}, {6, 4, 1}, {3, 1, 5},
                                                  {1, 1, 1}, {8, 2, 9}};
  int cases = 0;
  for (const auto& [M, K, N] : sizes)
    for (View va : views)
      for (View vb : views) {
        const int64_t batch = 3;
        Tensor a = make_operand(batch, M, K, va, gen), b = make_operand(batch, K, N, vb, gen);
        // What the CUDA backend does: copy operands with no GEMM layout, then plan.
        const MatrixLayout la = gemm_operand(a), lb = gemm_operand(b);
        const cuda::GemmPlan plan = cuda::plan_gemm(la, lb, batch, M, K, N, a.stride(0), b.stride(0));
        BOOST_TEST_CONTEXT("M=" << M << " K=" << K << " N=" << N << ", a " << view_name(va) << ", b "
                                << view_name(vb)) {
          check_cublas_rules(plan);
          Tensor out = Tensor::full({batch, M, N}, -12345.0, kFloat64);  // every element must be written
          // cuBLAS's A is posgrad's b, its B is posgrad's a.
          reference_cublas_gemm(plan, b.data<double>(), a.data<double>(), out.data<double>());
          const Tensor expected = matmul(a.contiguous(), b.contiguous());
          BOOST_TEST(max_abs_diff(out, expected) < 1e-12);
        }
        ++cases;
      }
  BOOST_TEST(cases == 150);
}

BOOST_AUTO_TEST_CASE(matrix_layout_reads_transposes_and_refuses_overlapping_rows) {
  const MatrixLayout row = matrix_layout(4, 3, 3, 1), col = matrix_layout(4, 3, 1, 4);
  BOOST_TEST((row.ok && !row.trans && row.ld == 3));
  BOOST_TEST((col.ok && col.trans && col.ld == 4));
  BOOST_TEST(matrix_layout(4, 3, 5, 1).ld == 5);   // padded rows
  BOOST_TEST(!matrix_layout(4, 3, 0, 1).ok);       // a row broadcast over rows: copy first
  BOOST_TEST(!matrix_layout(4, 3, 2, 1).ok);       // overlapping rows
  BOOST_TEST(!matrix_layout(4, 3, 6, 2).ok);       // no unit stride
  BOOST_TEST(matrix_layout(1, 3, 0, 1).ok);        // a single row may have any row stride
}

BOOST_AUTO_TEST_CASE(strided_offsets_match_the_original_view) {
  Generator gen(3);
  // Views of one [2, 3, 4, 5] tensor (and broadcasts into that shape) in many stride patterns.
  const Tensor base = uniform({2, 3, 4, 5}, 0, 1, gen, kFloat64);
  const Tensor big = uniform({4, 6, 8, 10}, 0, 1, gen, kFloat64);
  const std::vector<std::pair<std::string, Tensor>> views{
      {"contiguous", base},
      {"permuted", uniform({5, 4, 3, 2}, 0, 1, gen, kFloat64).permute({3, 2, 1, 0})},
      {"strided slice", big.slice(0, 0, 4, 2).slice(1, 1, 6, 2).slice(2, 0, 8, 2).slice(3, 1, 10, 2)},
      {"broadcast row", uniform({1, 3, 1, 5}, 0, 1, gen, kFloat64).expand({2, 3, 4, 5})},
      {"broadcast scalar", Tensor::scalar(2.0, kFloat64).reshape({1, 1, 1, 1}).expand({2, 3, 4, 5})},
      {"transposed inner", uniform({2, 3, 5, 4}, 0, 1, gen, kFloat64).transpose(2, 3)},
      {"narrowed", big.narrow(0, 1, 2).narrow(1, 2, 3).narrow(2, 0, 4).narrow(3, 3, 5)},
  };
  const Shape shape{2, 3, 4, 5};
  auto naive_offset = [&](const Shape& strides, int64_t i) {
    int64_t off = 0;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      off += (i % shape[d]) * strides[d];
      i /= shape[d];
    }
    return off;
  };
  for (const auto& [na, a] : views)
    for (const auto& [nb, b] : views)
      for (const auto& [nc, c] : views) {
        const auto s = cuda::make_strided<3>(shape, {a.strides(), b.strides(), c.strides()}, "test");
        BOOST_TEST_CONTEXT(na << " / " << nb << " / " << nc) {
          BOOST_TEST(s.numel == 120);
          bool all_equal = true;
          for (int64_t i = 0; i < s.numel; ++i) {
            int64_t off[3];
            cuda::strided_offsets<3>(s, i, off);
            all_equal = all_equal && off[0] == naive_offset(a.strides(), i) &&
                        off[1] == naive_offset(b.strides(), i) && off[2] == naive_offset(c.strides(), i);
          }
          BOOST_TEST(all_equal);
        }
      }
  // Coalescing: a contiguous operand pair is one axis; a transposed one keeps what it needs.
  BOOST_TEST(cuda::make_strided<2>(shape, {base.strides(), base.strides()}, "test").ndim == 1);
  BOOST_TEST(cuda::make_strided<2>(shape, {views[5].second.strides(), base.strides()}, "test").ndim == 3);
}

BOOST_AUTO_TEST_CASE(strided_scalar_and_too_many_axes) {
  const auto scalar = cuda::make_strided<2>({}, {Shape{}, Shape{}}, "test");
  BOOST_TEST(scalar.ndim == 1);
  BOOST_TEST(scalar.numel == 1);
  int64_t off[2];
  cuda::strided_offsets<2>(scalar, 0, off);
  BOOST_TEST((off[0] == 0 && off[1] == 0));
  // Eleven axes of size 2, reversed in one operand: nothing merges, which the kernels cannot take.
  Shape shape(11, 2), forward(11), reversed(11);
  for (int d = 0; d < 11; ++d) {
    forward[d] = int64_t{1} << (10 - d);
    reversed[d] = int64_t{1} << d;
  }
  BOOST_TEST(throws_with([&] { cuda::make_strided<2>(shape, {forward, reversed}, "unary"); },
                         "unary: a view with more than 10 axes"));
}

BOOST_AUTO_TEST_SUITE_END()
