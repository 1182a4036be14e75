// Dense matrix multiply on the CPU: the one kernel that decides CPU training speed.
//
// sgemm is a packed, cache-blocked GEMM in the Goto/BLIS style (blocking, packing and threading in
// gemm.cpp; the register-tiled SIMD micro-kernel in gemm_microkernel.h). dgemm is a plain,
// correct, cache-friendly loop: posgrad uses float64 only for gradient checks.
//
// Deliberately not here: other BLAS levels, complex or half types, column-major entry points, a
// run-time CPU dispatcher (the micro-kernel is picked at compile time from -march flags), and any
// dependency on an external BLAS.
//
// Contract (both functions):
//   * Row-major. C[M,N] = alpha * op(A)[M,K] @ op(B)[K,N] + beta * C.
//   * op(A) = A (stored M x K, row stride lda) or A^T when trans_a (A stored K x M, row stride lda).
//   * op(B) = B (stored K x N, row stride ldb) or B^T when trans_b (B stored N x K, row stride ldb).
//   * C has row stride ldc. beta == 0 means C is overwritten and never read (NaN in C is fine).
//     K == 0 or alpha == 0 means C = beta * C (A and B are not read).
//   * No alignment requirement on A, B or C; C must not overlap A or B.
//   * Threading: called outside an OpenMP parallel region, it uses up to omp_get_max_threads()
//     threads (OMP_NUM_THREADS), fewer for small problems. Called inside one (omp_in_parallel()),
//     it runs on the calling thread only, so callers can parallelise over a batch themselves.
//     Reentrant: its packing buffers are per thread (thread_local, 64-byte aligned, kept for reuse
//     and freed at thread exit; at most a few MiB per thread).
//
// Matrix sizes M, K, N are BLAS's names, not the letters of shape_legend.h.
#pragma once

#include <cstdint>

namespace posgrad::cpu {

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
           int64_t ldc);

// What sgemm was compiled with (the micro-kernel is picked from -march at build time), for
// benchmarks, logs and tests that aim at the tile and block edges.
struct SgemmKernelInfo {
  const char* name;    // e.g. "avx+fma 6x16"
  int64_t mr, nr;      // register tile: rows x columns of C per micro-kernel call
  int64_t kc, mc, nc;  // cache blocking: slice of K, rows of the A block, columns of the B block
};
SgemmKernelInfo sgemm_kernel_info();

void dgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
           const double* A, int64_t lda, const double* B, int64_t ldb, double beta, double* C,
           int64_t ldc);

}  // namespace posgrad::cpu
