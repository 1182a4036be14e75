// CPU GEMM. sgemm: a packed, cache-blocked matrix multiply in the Goto/BLIS style, threaded with
// OpenMP; dgemm: a simple, correct loop for float64 gradient checks.
//
// What sgemm does (C = alpha * op(A) @ op(B) + beta * C, all row-major), per thread block of C:
//
//   for jc in N, step NC                        5th loop: a column block of C and of B
//     for pc in K, step KC                      4th loop: a slice of the shared dimension
//       pack op(B)[pc:pc+KC, jc:jc+NC] -> Bp    (KC x NC, lives in L3)
//       for ic in M, step MC                    3rd loop: a row block of C and of A
//         pack op(A)[ic:ic+MC, pc:pc+KC] -> Ap  (MC x KC, lives in L2)
//         for jr in NC, step NR                 2nd loop: one B micro-panel (KC x NR, L1/L2)
//           for ir in MC, step MR               1st loop: one A micro-panel (MR x KC)
//             micro-kernel: C[ir:ir+MR, jr:jr+NR] (+)= Ap panel @ Bp panel  (in registers)
//
// Packing copies each block once into the exact order the micro-kernel reads it (contiguous,
// 64-byte aligned, zero-padded to whole MR/NR panels), which is also where the transposes are
// absorbed: the micro-kernel never sees a stride. beta is applied on the first KC slice only
// (later slices accumulate with beta = 1), alpha in the micro-kernel's final store. Ragged edge
// tiles are computed whole into a scratch tile and only the valid part is written to C.
//
// Threading: the T threads split C into a tm x tn grid of blocks (tm * tn = T, whole micro-tiles,
// picked so the largest block is smallest and blocks are square-ish) and each runs the loops
// above on its own block with its own packing buffers. Threads share nothing and never wait for
// each other inside the call, at the price of packing some of A or B twice (a few percent of the
// time at most; see docs/benchmarks.md). This matters on a shared or oversubscribed machine: a
// barrier every KC slice turns one descheduled thread into a stall of the whole team. Inside an
// OpenMP parallel region the whole call runs on the calling thread.
//
// What it deliberately does not do: run-time CPU dispatch (the micro-kernel is chosen at compile
// time, see gemm_microkernel.h), special GEMV kernels for M == 1 or N == 1 (those go through the
// packed path with padding, or the direct path when small), and multi-socket/NUMA awareness.
//
// Sizes are BLAS's names (M x K times K x N; blocks MC, KC, NC; register tile MR x NR), not the
// letters of shape_legend.h; T is the thread count.
#include "tensor/cpu/gemm.h"

#include <algorithm>
#include <cstddef>
#include <new>
#include <type_traits>
#include <vector>

#include "tensor/cpu/gemm_microkernel.h"

#ifdef POSGRAD_OPENMP
#include <omp.h>
#endif

namespace posgrad::cpu {

namespace {

// The micro-tile, fixed by the micro-kernel: kMR rows x kNR columns of C.
constexpr int64_t kMR = gemm_detail::kMR;
constexpr int64_t kNR = gemm_detail::kNR;
using gemm_detail::micro_kernel;

// ------------------------------------------------------------------ blocking parameters
// Each micro-kernel comes with its own blocking (gemm_microkernel.h), tuned by measurement
// (docs/benchmarks.md, "SGEMM (CPU)"):
//   KC: depth of one slice. Each micro-kernel call runs KC steps between touching its C tile, so a
//       large KC amortises loading and storing C; the B micro-panel (KC x NR), re-read by every A
//       micro-panel of the block, should stay in L1 or stream from L2 fast enough.
//       AVX-512 8 x 32: KC = 512 (a 64 KiB B panel, from L2; KC = 256 measured a few percent
//       slower). AVX 6 x 16: KC = 256 (a 16 KiB B panel, which fits a 32 KiB L1 with the A panel).
//   MC: rows of the packed A block (MC x KC), which stays in L2 next to the B micro-panel in use.
//   NC: columns of the packed B block (KC x NC, about 2 MiB per thread), which lives in L3.
// KC and NC are upper bounds: K and each thread's N range are cut into equal slices no bigger
// than them. MC is rounded to a multiple of kMR and NC to a multiple of kNR. The -D overrides
// exist for tuning sweeps only.
#ifndef POSGRAD_GEMM_KC
#define POSGRAD_GEMM_KC gemm_detail::kBlockKC
#endif
#ifndef POSGRAD_GEMM_MC
#define POSGRAD_GEMM_MC gemm_detail::kBlockMC
#endif
#ifndef POSGRAD_GEMM_NC
#define POSGRAD_GEMM_NC gemm_detail::kBlockNC
#endif
constexpr int64_t kKC = POSGRAD_GEMM_KC;
constexpr int64_t kMC = (POSGRAD_GEMM_MC + kMR - 1) / kMR * kMR;
constexpr int64_t kNC = (POSGRAD_GEMM_NC + kNR - 1) / kNR * kNR;

// Below this many multiply-adds the direct loop beats packing.
constexpr int64_t kDirectMaxWork = 32 * 32 * 32;
// Each extra thread should get at least this many multiply-adds, or waking it costs more.
constexpr int64_t kMinWorkPerThread = 1 << 17;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ------------------------------------------------------------------ packing buffers
// A grow-only, 64-byte aligned float buffer, one per thread for A and one for B (thread_local),
// kept between calls so steady-state GEMMs never allocate. Freed when the thread exits.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { release(); }
  float* get(size_t n) {
    if (n > capacity_) {
      release();
      data_ = static_cast<float*>(::operator new[](n * sizeof(float), std::align_val_t{64}));
      capacity_ = n;
    }
    return data_;
  }

 private:
  void release() {
    if (data_) ::operator delete[](data_, std::align_val_t{64});
    data_ = nullptr;
    capacity_ = 0;
  }
  float* data_ = nullptr;
  size_t capacity_ = 0;
};

thread_local AlignedBuffer tls_pack_a;
thread_local AlignedBuffer tls_pack_b;

// ------------------------------------------------------------------ packing
// Packing A and packing B are the same operation. Both cut a block into panels of R "items"
// (R = kMR rows of op(A), or R = kNR columns of op(B)) along `len` steps of the shared dimension
// k, and lay each panel out k-major, which is the order the micro-kernel reads:
//
//     dst[p * R * len + k * R + r] = X(item p * R + r, step k),   zero for items past `width`,
//
// where X(item, k) = src[item * item_stride + k * k_stride] and one of the two strides is 1:
//   item_stride == 1: op(A) transposed, or op(B) not transposed. Each step k is a contiguous run
//                     of items: walk the source row by row (sequential reads that the hardware
//                     prefetcher follows), dealing R-wide pieces out to the panels.
//   k_stride == 1   : op(A) not transposed, or op(B) transposed. Each item is contiguous along k,
//                     so this is a transpose: do it in slices of 16 steps, so the 16 panel rows
//                     being written stay in L1 while each source row is read 64 bytes at a time.
template <int64_t R>
void pack_panels(const float* src, int64_t item_stride, int64_t k_stride, int64_t width,
                 int64_t len, float* __restrict dst) {
  const int64_t full = width / R * R;  // items in whole panels
  if (item_stride == 1) {
    for (int64_t k = 0; k < len; ++k) {
      const float* s = src + k * k_stride;
      float* d = dst + k * R;
      for (int64_t j = 0; j < full; j += R, d += R * len)
        for (int64_t r = 0; r < R; ++r) d[r] = s[j + r];
      if (full < width)
        for (int64_t r = 0; r < R; ++r) d[r] = full + r < width ? s[full + r] : 0.0f;
    }
  } else {
    constexpr int64_t kSlice = 16;
    for (int64_t p = 0; p < width; p += R, dst += R * len) {
      const int64_t n = std::min(R, width - p);
      for (int64_t k0 = 0; k0 < len; k0 += kSlice) {
        const int64_t k1 = std::min(len, k0 + kSlice);
        for (int64_t r = 0; r < R; ++r) {
          const float* s = src + (p + r) * item_stride;
          if (r < n) {
            for (int64_t k = k0; k < k1; ++k) dst[k * R + r] = s[k];
          } else {
            for (int64_t k = k0; k < k1; ++k) dst[k * R + r] = 0.0f;
          }
        }
      }
    }
  }
}

// op(A)[i0:i0+mc, k0:k0+kc] into panels of kMR rows (op(A)(i, k) = A[i*lda + k], or A[k*lda + i]).
void pack_a(bool trans, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t k0,
            int64_t kc, float* dst) {
  if (!trans)
    pack_panels<kMR>(A + i0 * lda + k0, lda, 1, mc, kc, dst);
  else
    pack_panels<kMR>(A + k0 * lda + i0, 1, lda, mc, kc, dst);
}

// op(B)[k0:k0+kc, j0:j0+nc] into panels of kNR columns (op(B)(k, j) = B[k*ldb + j], or B[j*ldb + k]).
void pack_b(bool trans, const float* B, int64_t ldb, int64_t k0, int64_t kc, int64_t j0,
            int64_t nc, float* dst) {
  if (!trans)
    pack_panels<kNR>(B + k0 * ldb + j0, 1, ldb, nc, kc, dst);
  else
    pack_panels<kNR>(B + j0 * ldb + k0, ldb, 1, nc, kc, dst);
}

// ------------------------------------------------------------------ simple paths
// C = beta * C (beta == 0: C = 0 without reading it).
template <typename T>
void scale_c(int64_t M, int64_t N, T beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    T* c = C + i * ldc;
    if (beta == T(0)) {
      std::fill(c, c + N, T(0));
    } else if (beta != T(1)) {
      for (int64_t j = 0; j < N; ++j) c[j] *= beta;
    }
  }
}

// c = alpha * sum + beta * c (beta == 0: c is not read).
template <typename T>
void write_c(T& c, T alpha, T sum, T beta) {
  c = beta == T(0) ? alpha * sum : alpha * sum + beta * c;
}

// Rows [i0, i1) of a matrix-vector product (N == 1): c_i = alpha op(A)(i, :) . op(B)(:, 0) + beta c_i,
// with op(A)(i, k) = A[i sai + k sak] and op(B)(k, 0) = b[k sbk]. The i-k-j loop would run its
// inner loop one step per (i, k) here, and per-token maps applied to one vector each (the tree
// encoding's q and k) make millions of such products of 16 x 16 by 16. A contiguous row of op(A)
// and a contiguous b: a dot product in kLanes partial sums; otherwise kBlock rows at a time, each
// column of op(A) added to their sums (contiguous along i when op(A) is A^T).
template <typename T>
void direct_matrix_vector(int64_t i0, int64_t i1, int64_t K, T alpha, const T* A, int64_t sai, int64_t sak,
                          const T* b, int64_t sbk, T beta, T* C, int64_t ldc) {
  if (sak == 1 && sbk == 1) {
    constexpr int kLanes = 8;
    for (int64_t i = i0; i < i1; ++i) {
      const T* __restrict a = A + i * sai;
      T part[kLanes] = {};
      int64_t k = 0;
      for (; k + kLanes <= K; k += kLanes)
        for (int l = 0; l < kLanes; ++l) part[l] += a[k + l] * b[k + l];
      T sum = 0;
      for (; k < K; ++k) sum += a[k] * b[k];
      for (int l = 0; l < kLanes; ++l) sum += part[l];
      write_c(C[i * ldc], alpha, sum, beta);
    }
    return;
  }
  constexpr int64_t kBlock = 64;
  for (int64_t i = i0; i < i1; i += kBlock) {
    const int64_t rows = std::min(kBlock, i1 - i);
    T sum[kBlock] = {};
    for (int64_t k = 0; k < K; ++k) {
      const T bk = b[k * sbk];
      const T* __restrict a = A + i * sai + k * sak;
      if (sai == 1) {
        for (int64_t r = 0; r < rows; ++r) sum[r] += a[r] * bk;
      } else {
        for (int64_t r = 0; r < rows; ++r) sum[r] += a[r * sai] * bk;
      }
    }
    for (int64_t r = 0; r < rows; ++r) write_c(C[(i + r) * ldc], alpha, sum[r], beta);
  }
}

// Rows [i0, i1) of C for an op(B) of contiguous rows (sbj == 1) small enough to stay in cache:
// each row of C in blocks of kCols columns (one 512-bit vector) summed in registers over the
// whole of K, and written once. The i-k-j loop below reads and writes C's row at every k, each
// write waiting on the one before, which dominates the small products of attention heads (a
// [N, Dh] by [Dh, N] per head and batch row).
template <typename T>
void direct_register_rows(int64_t i0, int64_t i1, int64_t N, int64_t K, T alpha, const T* A, int64_t sai,
                          int64_t sak, const T* B, int64_t sbk, T beta, T* C, int64_t ldc) {
  constexpr int64_t kCols = 64 / sizeof(T);
  for (int64_t i = i0; i < i1; ++i) {
    const T* a = A + i * sai;
    T* __restrict c = C + i * ldc;
    // Columns [j0, j0 + cols) of the row; `cols` is a compile-time constant for whole blocks, so
    // their loops over j unroll into vector registers.
    auto columns = [&](int64_t j0, auto cols) {
      T sum[kCols] = {};
      for (int64_t k = 0; k < K; ++k) {
        const T ak = a[k * sak];
        const T* __restrict b = B + k * sbk + j0;
        for (int64_t j = 0; j < cols; ++j) sum[j] += ak * b[j];
      }
      for (int64_t j = 0; j < cols; ++j) write_c(c[j0 + j], alpha, sum[j], beta);
    };
    int64_t j0 = 0;
    for (; j0 + kCols <= N; j0 += kCols) columns(j0, std::integral_constant<int64_t, kCols>{});
    if (j0 < N) columns(j0, N - j0);  // the last N % kCols columns
  }
}

// Rows [i0, i1) of C by the plain i-k-j loop: the inner loop runs along a row of C and, when B
// is not transposed, of B, so it vectorises. K is walked in slices of about 128 KiB of B, so each
// slice is reused from cache by all the rows. Used for small problems and by dgemm. A single
// column (N == 1) and a small op(B) of contiguous rows (an outer product, K == 1, among them) go
// to the loops above, where this loop's inner loop would be one step long or its reads and writes
// of C (and its clearing pass) would dominate.
template <typename T>
void direct_rows(bool trans_a, bool trans_b, int64_t i0, int64_t i1, int64_t N, int64_t K, T alpha,
                 const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  const int64_t sak = trans_a ? lda : 1, sai = trans_a ? 1 : lda;  // op(A)(i, k) strides
  const int64_t sbk = trans_b ? 1 : ldb, sbj = trans_b ? ldb : 1;  // op(B)(k, j) strides
  if (N == 1) return direct_matrix_vector(i0, i1, K, alpha, A, sai, sak, B, sbk, beta, C, ldc);
  if (sbj == 1 && K * N * static_cast<int64_t>(sizeof(T)) <= (int64_t{128} << 10))
    return direct_register_rows(i0, i1, N, K, alpha, A, sai, sak, B, sbk, beta, C, ldc);
  scale_c<T>(i1 - i0, N, beta, C + i0 * ldc, ldc);
  const int64_t k_slice = std::max<int64_t>(1, (int64_t{128} << 10) / static_cast<int64_t>(sizeof(T) * N));
  for (int64_t k0 = 0; k0 < K; k0 += k_slice) {
    const int64_t k1 = std::min(K, k0 + k_slice);
    for (int64_t i = i0; i < i1; ++i) {
      T* __restrict c = C + i * ldc;
      for (int64_t k = k0; k < k1; ++k) {
        const T a = alpha * A[i * sai + k * sak];
        const T* __restrict b = B + k * sbk;
        if (sbj == 1) {
          for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
        } else {
          for (int64_t j = 0; j < N; ++j) c[j] += a * b[j * sbj];
        }
      }
    }
  }
}

int available_threads() {
#ifdef POSGRAD_OPENMP
  return omp_in_parallel() ? 1 : omp_get_max_threads();
#else
  return 1;
#endif
}

// ------------------------------------------------------------------ the blocked sgemm
struct Problem {
  bool trans_a, trans_b;
  int64_t M, N, K;
  float alpha;
  const float* A;
  int64_t lda;
  const float* B;
  int64_t ldb;
  float beta;
  float* C;
  int64_t ldc;
};

// The five loops over the block C[m_begin:m_end, n_begin:n_end], on the calling thread, with
// that thread's own packing buffers.
void gemm_block(const Problem& P, int64_t m_begin, int64_t m_end, int64_t n_begin, int64_t n_end) {
  if (m_begin >= m_end || n_begin >= n_end) return;
  // Slice K and N into equal parts no bigger than KC and NC (K = 768 as 384 + 384, not 512 + 256:
  // a short last slice would pay the C-tile traffic for little work).
  const int64_t kc_step = ceil_div(P.K, ceil_div(P.K, kKC));
  const int64_t n_range = n_end - n_begin;
  const int64_t nc_step = ceil_div(ceil_div(n_range, ceil_div(n_range, kNC)), kNR) * kNR;
  float* packed_a = tls_pack_a.get(static_cast<size_t>(std::min(kMC, m_end - m_begin + kMR) * kc_step));
  float* packed_b = tls_pack_b.get(static_cast<size_t>(nc_step * kc_step));
  alignas(64) float edge_tile[kMR * kNR];

  for (int64_t jc = n_begin; jc < n_end; jc += nc_step) {            // 5th loop
    const int64_t nc = std::min(nc_step, n_end - jc);
    for (int64_t pc = 0; pc < P.K; pc += kc_step) {                   // 4th loop
      const int64_t kc = std::min(kc_step, P.K - pc);
      // Later K slices add onto what the earlier ones wrote.
      const float beta = pc == 0 ? P.beta : 1.0f;
      pack_b(P.trans_b, P.B, P.ldb, pc, kc, jc, nc, packed_b);

      for (int64_t ic = m_begin; ic < m_end; ic += kMC) {             // 3rd loop
        const int64_t mc = std::min(kMC, m_end - ic);
        pack_a(P.trans_a, P.A, P.lda, ic, mc, pc, kc, packed_a);
        for (int64_t jr = 0; jr < nc; jr += kNR) {                    // 2nd loop
          const int64_t nr = std::min(kNR, nc - jr);
          const float* bp = packed_b + jr * kc;
          for (int64_t ir = 0; ir < mc; ir += kMR) {                  // 1st loop
            const int64_t mr = std::min(kMR, mc - ir);
            const float* ap = packed_a + ir * kc;
            float* c = P.C + (ic + ir) * P.ldc + jc + jr;
            if (mr == kMR && nr == kNR) {
              micro_kernel(kc, ap, bp, c, P.ldc, P.alpha, beta);
              continue;
            }
            // Ragged edge: the full tile into scratch, then only its valid part into C.
            micro_kernel(kc, ap, bp, edge_tile, kNR, 1.0f, 0.0f);
            for (int64_t i = 0; i < mr; ++i) {
              float* ci = c + i * P.ldc;
              const float* t = edge_tile + i * kNR;
              if (beta == 0.0f) {
                for (int64_t j = 0; j < nr; ++j) ci[j] = P.alpha * t[j];
              } else {
                for (int64_t j = 0; j < nr; ++j) ci[j] = P.alpha * t[j] + beta * ci[j];
              }
            }
          }
        }
      }
    }
  }
}

// Splits nt threads into a tm x tn grid over C: the grid whose largest per-thread block (in whole
// micro-tiles) is smallest, then whose blocks are most square (each thread packs the A rows and
// B columns of its own block, so a smaller perimeter means less packing).
void thread_grid(int nt, int64_t M, int64_t N, int& tm, int& tn) {
  const int64_t units_m = ceil_div(M, kMR), units_n = ceil_div(N, kNR);
  int64_t best_work = -1, best_perimeter = 0;
  for (int d = 1; d <= nt; ++d) {
    if (nt % d != 0) continue;
    const int64_t bm = ceil_div(units_m, d) * kMR, bn = ceil_div(units_n, nt / d) * kNR;
    const int64_t work = bm * bn, perimeter = bm + bn;
    if (best_work < 0 || work < best_work || (work == best_work && perimeter < best_perimeter)) {
      best_work = work;
      best_perimeter = perimeter;
      tm = d;
      tn = nt / d;
    }
  }
}

// Thread tid of nt: its block of C (whole micro-tiles, split as evenly as the grid allows).
void sgemm_thread(const Problem& P, int tid, int nt) {
  int tm = 1, tn = 1;
  thread_grid(nt, P.M, P.N, tm, tn);
  const int64_t ti = tid / tn, tj = tid % tn;
  const int64_t units_m = ceil_div(P.M, kMR), units_n = ceil_div(P.N, kNR);
  gemm_block(P, std::min(P.M, units_m * ti / tm * kMR), std::min(P.M, units_m * (ti + 1) / tm * kMR),
             std::min(P.N, units_n * tj / tn * kNR), std::min(P.N, units_n * (tj + 1) / tn * kNR));
}

}  // namespace

SgemmKernelInfo sgemm_kernel_info() {
  return {gemm_detail::kMicroKernelName, kMR, kNR, kKC, kMC, kNC};
}

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
           int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.0f) {
    scale_c(M, N, beta, C, ldc);
    return;
  }
  const int64_t work = M * N * K;
  if (work <= kDirectMaxWork) {
    direct_rows(trans_a, trans_b, 0, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  [[maybe_unused]] const int nt = static_cast<int>(
      std::clamp<int64_t>(work / kMinWorkPerThread, 1, available_threads()));
  const Problem P{trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc};
#ifdef POSGRAD_OPENMP
  if (nt > 1) {
#pragma omp parallel num_threads(nt)
    sgemm_thread(P, omp_get_thread_num(), omp_get_num_threads());
    return;
  }
#endif
  sgemm_thread(P, 0, 1);
}

// dgemm: the i-k-j loop, rows of C split over threads. op(B) is first copied to a contiguous
// K x N buffer when transposed, so the inner loop always runs along contiguous memory.
void dgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
           const double* A, int64_t lda, const double* B, int64_t ldb, double beta, double* C,
           int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.0) {
    scale_c(M, N, beta, C, ldc);
    return;
  }
  std::vector<double> bt;
  if (trans_b && M > 1) {
    bt.resize(static_cast<size_t>(K * N));
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) bt[k * N + j] = B[j * ldb + k];
    B = bt.data();
    ldb = N;
    trans_b = false;
  }
  const int64_t work = M * N * K;
  [[maybe_unused]] const int nt = static_cast<int>(std::clamp<int64_t>(
      std::min(work / kMinWorkPerThread, M), 1, available_threads()));
#ifdef POSGRAD_OPENMP
  if (nt > 1) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t t = 0; t < nt; ++t)
      direct_rows(trans_a, trans_b, M * t / nt, M * (t + 1) / nt, N, K, alpha, A, lda, B, ldb, beta,
                  C, ldc);
    return;
  }
#endif
  direct_rows(trans_a, trans_b, 0, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace posgrad::cpu
