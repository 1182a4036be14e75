// The arguments of one cuBLAS strided-batched GEMM that computes posgrad's row-major
// out[p] = a[p] @ b[p] (a [M, K], b [K, N], out [M, N] contiguous, p < batch).
//
// cuBLAS is column-major: it computes C = op(A) op(B) with C m x n. Row-major out [M, N] is the
// column-major matrix out^T [N, M] = b^T a^T, so cuBLAS's A is posgrad's b, its B is posgrad's
// a, m = N, n = M, k = K. A row-major operand read column-major is already the transpose it
// needs (op N); a column-major operand (a transposed view) needs op T. The leading dimensions
// come from MatrixLayout (tensor/matrix_layout.h).
//
// Plain host arithmetic with no CUDA types, so tests/tensor/test_cuda_host_logic.cpp checks it on
// the CPU against a reference implementation of cuBLAS's documented semantics.
// Sizes are BLAS's names (M, K, N for posgrad's operands; m, n, k for cuBLAS's), not the letters
// of shape_legend.h.
#pragma once

#include <cstdint>

#include "tensor/matrix_layout.h"

namespace posgrad::cuda {

struct GemmPlan {
  bool trans_a = false, trans_b = false;  // cuBLAS's op(A), op(B): true = transposed
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between batch matrices
  int64_t batch = 0;
};

// la/lb: layouts of posgrad's a [M, K] and b [K, N]; batch_stride_a/b: their batch strides
// (0 for a broadcast batch).
inline GemmPlan plan_gemm(const MatrixLayout& la, const MatrixLayout& lb, int64_t batch, int64_t M,
                          int64_t K, int64_t N, int64_t batch_stride_a, int64_t batch_stride_b) {
  GemmPlan p;
  p.trans_a = lb.trans;
  p.trans_b = la.trans;
  p.m = N;
  p.n = M;
  p.k = K;
  p.lda = lb.ld;
  p.ldb = la.ld;
  p.ldc = N;
  p.stride_a = batch_stride_b;
  p.stride_b = batch_stride_a;
  p.stride_c = M * N;
  p.batch = batch;
  return p;
}

}  // namespace posgrad::cuda
