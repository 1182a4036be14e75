// The fused op's kernels for the one case the row kernels are slowest at: no table at all and
// every query seeing every key (full attention, with padded keys at most; no positional term, span
// or window). The formula is fused_kernels.h's with the tables absent:
//   s(i, j) = scale q_i . k_j (-inf at padded keys),   out_i = sum_j e(i, j) v_j / sum_j e(i, j).
// A query's run is then the whole key range, so blocks of queries share their keys and the work
// is FlashAttention-2's, written on the CPU GEMM (tensor/cpu/gemm.h) instead of key loops:
//   forward   per (batch, head, block of Bq queries): S = scale Q K^T [Bq, N] (one GEMM), each
//             row's max m and e = exp(S - m) in place, out = (E V) / rowsum(E) (one GEMM), and
//             lse = m + log rowsum(E) kept per row, as the row kernels do;
//   backward  per block: S again and P = exp(S - lse), dP = dO V^T, dS = P (dP - D) with
//             D_i = dout_i . out_i, then dQ = scale dS K, dK += scale dS^T Q, dV += P^T dO (four
//             GEMMs), dK and dV summed in per-thread copies and added up at the end.
// Memory: two [Bq, N] buffers per thread (Bq shrinks as N grows: at most 4 MiB each), never
// [B, H, N, N]. Blocks run in parallel (OpenMP), each GEMM on its own thread.
// The row kernels (fused_kernels_impl.h) stay the reference of this file: the fused tests compare
// both with the dense reference, and this case is measured in bench_attention_paths at fraction 1.
// Deliberately not here: tables, key boxes, row masks, the probabilities for figures (the row
// kernels do those).
// Shapes: letters of shape_legend.h; Bq queries per block.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention/fused/fused_kernels_impl.h"  // row_max, Lanes (the vector exp)
#include "tensor/cpu/gemm.h"
#include "tensor/cpu/parallel.h"
#include "tensor/tensor.h"

#ifdef POSGRAD_OPENMP
#include <omp.h>
#endif

namespace posgrad::fused_detail::tiled {

// Whether a call is this file's case: no table, no row window, and a key box that holds every key
// for every query (or no grid at all: tree positions without a box).
template <typename T>
bool applies(const Problem& P, const Tables<T>& tables) {
  for (const T* t : tables.of)
    if (t) return false;
  if (tables.logit_offset || P.W > 0) return false;
  const RowGeometry& g = P.geometry;
  for (size_t d = 0; d < g.structure.size(); ++d) {
    const int64_t first = g.query_first[d], last = first + g.query_structure[d] - 1;
    if (g.lo[d] > -last || g.hi[d] < g.structure[d] - 1 - first) return false;
  }
  return true;
}

namespace detail {

// C = alpha op(A) op(B) + beta C in T (sgemm or dgemm: same contract).
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, T beta, T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>)
    cpu::sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  else
    cpu::dgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Queries per block: 256, fewer for long key ranges so that a [Bq, N] buffer stays within 4 MiB.
inline int64_t block_rows(int64_t N, size_t bytes) {
  const int64_t fit = static_cast<int64_t>((size_t{4} << 20) / (bytes * static_cast<size_t>(std::max<int64_t>(N, 1))));
  return std::clamp<int64_t>(fit, 16, 256);
}

// The logits of queries [i0, i0 + rows) of batch-head bh: S = scale Q K^T, -inf at padded keys.
template <typename T>
void block_logits(const Problem& P, int64_t bh, int64_t i0, int64_t rows, const T* q, const T* k, T* S) {
  const int64_t N = P.N, Dh = P.Dh;
  gemm<T>(false, true, rows, N, Dh, static_cast<T>(P.scale), q + (bh * P.Nq + i0) * Dh, Dh, k + bh * N * Dh, Dh, T(0),
          S, N);
  if (!P.padded) return;
  const uint8_t* pad = P.padded + (bh / P.H) * N;
  for (int64_t j = 0; j < N; ++j)
    if (pad[j])
      for (int64_t r = 0; r < rows; ++r) S[r * N + j] = -std::numeric_limits<T>::infinity();
}

// s[j] = exp(s[j] - shift) for j < N, in the row kernels' vector exp; returns their sum. A shift of
// +-inf (a row that sees no key) gives zeros.
template <typename T>
T exp_row(T* s, int64_t N, T shift) {
  using L = row_kernels::Lanes<T>;
  if (!std::isfinite(shift)) {
    std::fill(s, s + N, T(0));
    return T(0);
  }
  typename L::Vec sum = L::splat(T(0));
  row_kernels::for_each_vector<T>(N, [&](const auto& lanes, int64_t t) {
    const auto e = L::exp(lanes.load(s + t, -std::numeric_limits<T>::infinity()) - shift);  // 0 past the row
    lanes.store(s + t, e);
    sum += e;
  });
  T total = 0;
  for (int l = 0; l < L::kCount; ++l) total += sum[l];
  return total;
}

// The work items: every (batch-head, block of queries).
struct Blocks {
  int64_t rows, per_head, count;
  Blocks(const Problem& P, size_t bytes)
      : rows(block_rows(P.N, bytes)), per_head((P.Nq + rows - 1) / rows), count(P.B * P.H * per_head) {}
};

inline int thread_count() { return cpu::max_threads(); }
inline int thread_id() {
#ifdef POSGRAD_OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

}  // namespace detail

// The row kernels' forward (fused_kernels.h) for this case; dense_probs is not supported (the
// caller routes it to the row kernels).
template <typename T>
void forward(const Problem& P, const T* q, const T* k, const T* v, T* out, T* lse) {
  const int64_t N = P.N, Dh = P.Dh;
  const detail::Blocks blocks(P, sizeof(T));
#pragma omp parallel if (blocks.count > 1 && detail::thread_count() > 1)
  {
    std::vector<T> S(static_cast<size_t>(blocks.rows * N));
#pragma omp for schedule(dynamic)
    for (int64_t item = 0; item < blocks.count; ++item) {
      const int64_t bh = item / blocks.per_head, i0 = (item % blocks.per_head) * blocks.rows;
      const int64_t rows = std::min(blocks.rows, P.Nq - i0);
      detail::block_logits(P, bh, i0, rows, q, k, S.data());
      std::vector<T> sums(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) {  // e = exp(s - m) in place, its sum
        T* s = S.data() + r * N;
        const T m = row_kernels::row_max(s, N);
        const T total = detail::exp_row(s, N, m);
        sums[static_cast<size_t>(r)] = total;
        lse[bh * P.Nq + i0 + r] = total > 0 ? m + std::log(total) : std::numeric_limits<T>::infinity();
      }
      T* o = out + (bh * P.Nq + i0) * Dh;
      detail::gemm<T>(false, false, rows, Dh, N, T(1), S.data(), N, v + bh * N * Dh, Dh, T(0), o, Dh);
      for (int64_t r = 0; r < rows; ++r) {
        const T total = sums[static_cast<size_t>(r)];
        for (int64_t d = 0; d < Dh; ++d) o[r * Dh + d] = total > 0 ? o[r * Dh + d] / total : T(0);  // no key: 0
      }
    }
  }
}

// The row kernels' backward for this case: dq, dk, dv (no table has a gradient).
template <typename T>
void backward(const Problem& P, const T* q, const T* k, const T* v, const T* out, const T* lse, const T* dout,
              const Grads<T>& grads) {
  const int64_t N = P.N, Dh = P.Dh, head = N * Dh, BH = P.B * P.H;
  const detail::Blocks blocks(P, sizeof(T));
  const int threads = blocks.count > 1 ? detail::thread_count() : 1;
  // dk and dv: one copy per thread, summed at the end (blocks of one head run on several threads).
  std::vector<T> dk_copies(static_cast<size_t>(threads * BH * head), T(0)), dv_copies(dk_copies.size(), T(0));
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<T> S(static_cast<size_t>(blocks.rows * N)), dS(S.size());
    T* dk_mine = dk_copies.data() + detail::thread_id() * BH * head;
    T* dv_mine = dv_copies.data() + detail::thread_id() * BH * head;
#pragma omp for schedule(dynamic)
    for (int64_t item = 0; item < blocks.count; ++item) {
      const int64_t bh = item / blocks.per_head, i0 = (item % blocks.per_head) * blocks.rows;
      const int64_t rows = std::min(blocks.rows, P.Nq - i0), first = bh * P.Nq + i0;
      detail::block_logits(P, bh, i0, rows, q, k, S.data());
      for (int64_t r = 0; r < rows; ++r)  // P = exp(s - lse): 0 in a row that sees no key (lse = +inf)
        detail::exp_row(S.data() + r * N, N, lse[first + r]);
      const T* dO = dout + first * Dh;
      detail::gemm<T>(false, true, rows, N, Dh, T(1), dO, Dh, v + bh * head, Dh, T(0), dS.data(), N);  // dP = dO V^T
      for (int64_t r = 0; r < rows; ++r) {  // dS = P (dP - D), D = dout_i . out_i
        T D = 0;
        for (int64_t d = 0; d < Dh; ++d) D += dO[r * Dh + d] * out[(first + r) * Dh + d];
        const T* p = S.data() + r * N;
        T* ds = dS.data() + r * N;
        for (int64_t j = 0; j < N; ++j) ds[j] = p[j] * (ds[j] - D);
      }
      const T scale = static_cast<T>(P.scale);
      detail::gemm<T>(false, false, rows, Dh, N, scale, dS.data(), N, k + bh * head, Dh, T(0), grads.dq + first * Dh,
                      Dh);  // dQ = scale dS K
      detail::gemm<T>(true, false, N, Dh, rows, scale, dS.data(), N, q + first * Dh, Dh, T(1), dk_mine + bh * head,
                      Dh);  // dK += scale dS^T Q
      detail::gemm<T>(true, false, N, Dh, rows, T(1), S.data(), N, dO, Dh, T(1), dv_mine + bh * head,
                      Dh);  // dV += P^T dO
    }
  }
  cpu::parallel_for(BH * head, threads, [&](int64_t x) {
    T dk = 0, dv = 0;
    for (int th = 0; th < threads; ++th) dk += dk_copies[th * BH * head + x], dv += dv_copies[th * BH * head + x];
    grads.dk[x] = dk;
    grads.dv[x] = dv;
  });
}

}  // namespace posgrad::fused_detail::tiled
