// CPU kernels of the fast attention path (see window_kernels.h for the band picture). Each work
// item is one block of consecutive queries (or keys) of one row of one (batch, head); for every
// leading-dim offset combination it runs one GEMM against the contiguous run of keys (or
// queries) the block shares, through a per-thread scratch tile.
//
// Deliberately not here: per-element dot loops (all arithmetic goes through sgemm/dgemm), and
// any allocation inside the work loop other than the one scratch tile per thread.
#include "attention/window_kernels.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "tensor/cpu/gemm.h"
#include "tensor/cpu/parallel.h"

namespace posgrad::window_detail {

namespace {

template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
          int64_t ldb, T beta, T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>)
    cpu::sgemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
  else
    cpu::dgemm(ta, tb, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
}

template <typename T>
void zero(T* p, int64_t n) {
  if (n > 0) std::memset(p, 0, static_cast<size_t>(n) * sizeof(T));
}

template <typename T>
void copy(T* dst, const T* src, int64_t n) {
  if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
}

// Calls fn(item, tile) for item in [0, items), in parallel when the work is large enough, with
// one scratch tile of `tile_size` elements per thread.
template <typename T, typename Fn>
void for_each_block(int64_t items, int64_t cost_per_item, int64_t tile_size, Fn&& fn) {
#ifdef POSGRAD_OPENMP
  const bool parallel = items > 1 && items * cost_per_item >= cpu::kParallelGrain && !omp_in_parallel();
  if (parallel) {
#pragma omp parallel
    {
      std::vector<T> tile(static_cast<size_t>(tile_size));
#pragma omp for schedule(dynamic, 1)
      for (int64_t it = 0; it < items; ++it) fn(it, tile.data());
    }
    return;
  }
#endif
  std::vector<T> tile(static_cast<size_t>(tile_size));
  for (int64_t it = 0; it < items; ++it) fn(it, tile.data());
}

// Slots j in [j0, j1) of query position i (along its row) have keys i + lo + j inside [0, S).
struct SlotRange {
  int64_t j0, j1;
};
inline SlotRange valid_slots(const BandPlan& P, int64_t i) {
  return {std::max<int64_t>(0, -(i + P.lo)), std::min<int64_t>(P.width, P.S - i - P.lo)};
}

}  // namespace

// Default block: the GEMM computes block x (block + width - 1) dots for block x width useful ones,
// so the block should not be much wider than the window's last-dim width; GEMM efficiency wants
// it not too small either (below 32^3 multiply-adds sgemm falls back to plain loops). Measured
// with `bench_window_ops --blocks --cpu-time` (one thread, Dh = 32, AVX-512): width 512 and 128
// are best at 32-64 (64 within noise of the best), width 32 at 32, and a 9 x 9 box on a 64 x 64
// grid at 32-64. Hence the width rounded up to 16, clamped to [32, 64].
BandPlan make_band_plan(const KeyWindow& window, int64_t block) {
  window.validate();
  const int64_t n = window.dims();
  BandPlan P;
  P.S = window.structure[n - 1];
  P.rows = window.tokens() / P.S;
  P.lo = window.lo[n - 1];
  P.width = window.hi[n - 1] - window.lo[n - 1] + 1;
  P.combos = window.slots() / P.width;
  if (block <= 0) block = std::clamp<int64_t>((P.width + 15) / 16 * 16, 32, 64);
  P.block = std::min(block, P.S);
  P.key_row.assign(static_cast<size_t>(P.rows * P.combos), -1);
  P.query_row.assign(static_cast<size_t>(P.rows * P.combos), -1);
  std::vector<int64_t> coord(static_cast<size_t>(n)), off(static_cast<size_t>(n));
  for (int64_t r = 0; r < P.rows; ++r) {
    int64_t rest = r;  // leading coordinates of row r
    for (int64_t d = n - 2; d >= 0; --d) {
      coord[d] = rest % window.structure[d];
      rest /= window.structure[d];
    }
    for (int64_t c = 0; c < P.combos; ++c) {
      int64_t cr = c;  // leading offsets of combination c
      for (int64_t d = n - 2; d >= 0; --d) {
        const int64_t extent = window.hi[d] - window.lo[d] + 1;
        off[d] = window.lo[d] + cr % extent;
        cr /= extent;
      }
      int64_t fwd = 0, back = 0;
      for (int64_t d = 0; d < n - 1; ++d) {
        const int64_t f = coord[d] + off[d], b = coord[d] - off[d], s = window.structure[d];
        fwd = (fwd < 0 || f < 0 || f >= s) ? -1 : fwd * s + f;
        back = (back < 0 || b < 0 || b >= s) ? -1 : back * s + b;
      }
      P.key_row[r * P.combos + c] = fwd;
      P.query_row[r * P.combos + c] = back;
    }
  }
  return P;
}

// out[i, w] = a[i] . b[key(i, w)]: per (block, combo) Tile[bn, kw] = A_blk B_run^T, then each
// query's slots are one contiguous stretch of its tile row.
template <typename T>
void band_dots(const BandPlan& P, int64_t BH, int64_t D, const T* a, const T* b, T* out) {
  const int64_t N = P.tokens(), W = P.slots(), bq = P.block, nb = (P.S + bq - 1) / bq;
  const int64_t tile_size = bq * (bq + P.width - 1);
  for_each_block<T>(BH * P.rows * nb, P.combos * tile_size * D, tile_size, [&](int64_t item, T* tile) {
    const int64_t bh = item / (P.rows * nb), r = item / nb % P.rows, i0 = item % nb * bq;
    const int64_t bn = std::min(bq, P.S - i0);
    const T* A = a + (bh * N + r * P.S + i0) * D;
    T* O = out + (bh * N + r * P.S + i0) * W;
    for (int64_t c = 0; c < P.combos; ++c) {
      const int64_t kr = P.key_row[r * P.combos + c];
      const int64_t ks = std::max<int64_t>(0, i0 + P.lo), ke = std::min(P.S, i0 + bn + P.lo + P.width - 1);
      if (kr < 0 || ke <= ks) {
        for (int64_t i = 0; i < bn; ++i) zero(O + i * W + c * P.width, P.width);
        continue;
      }
      const int64_t kw = ke - ks;
      gemm<T>(false, true, bn, kw, D, A, D, b + (bh * N + kr * P.S + ks) * D, D, T(0), tile, kw);
      for (int64_t i = 0; i < bn; ++i) {
        const int64_t qi = i0 + i;
        const auto [j0, j1] = valid_slots(P, qi);
        T* row = O + i * W + c * P.width;
        if (j1 <= j0) {
          zero(row, P.width);
          continue;
        }
        zero(row, j0);
        copy(row + j0, tile + i * kw + (qi + P.lo + j0 - ks), j1 - j0);
        zero(row + j1, P.width - j1);
      }
    }
  });
}

// out[i] = sum_w p[i, w] b[key(i, w)]: the block's slots are spread onto a zeroed wide tile
// [bn, kw] (each query's stretch at its diagonal), then out_blk (+)= Tile B_run.
template <typename T>
void band_apply(const BandPlan& P, int64_t BH, int64_t D, const T* p, const T* b, T* out) {
  const int64_t N = P.tokens(), W = P.slots(), bq = P.block, nb = (P.S + bq - 1) / bq;
  const int64_t tile_size = bq * (bq + P.width - 1);
  for_each_block<T>(BH * P.rows * nb, P.combos * tile_size * D, tile_size, [&](int64_t item, T* tile) {
    const int64_t bh = item / (P.rows * nb), r = item / nb % P.rows, i0 = item % nb * bq;
    const int64_t bn = std::min(bq, P.S - i0);
    const T* Pb = p + (bh * N + r * P.S + i0) * W;
    T* O = out + (bh * N + r * P.S + i0) * D;
    bool first = true;
    for (int64_t c = 0; c < P.combos; ++c) {
      const int64_t kr = P.key_row[r * P.combos + c];
      const int64_t ks = std::max<int64_t>(0, i0 + P.lo), ke = std::min(P.S, i0 + bn + P.lo + P.width - 1);
      if (kr < 0 || ke <= ks) continue;
      const int64_t kw = ke - ks;
      for (int64_t i = 0; i < bn; ++i) {
        const int64_t qi = i0 + i;
        const auto [j0, j1] = valid_slots(P, qi);
        T* row = tile + i * kw;
        if (j1 <= j0) {
          zero(row, kw);
          continue;
        }
        const int64_t s = qi + P.lo + j0 - ks, len = j1 - j0;
        zero(row, s);
        copy(row + s, Pb + i * W + c * P.width + j0, len);
        zero(row + s + len, kw - s - len);
      }
      gemm<T>(false, false, bn, D, kw, tile, kw, b + (bh * N + kr * P.S + ks) * D, D, first ? T(0) : T(1), O, D);
      first = false;
    }
    if (first) zero(O, bn * D);
  });
}

// out[j] = sum over the (i, w) whose key is j of p[i, w] a[i]: per block of keys [k0, k0 + bn)
// and combo, the queries that see them are the run [qs, qe) of one query row; Tile[qn, bn] holds
// p at (query, key), and out_blk (+)= Tile^T A_run.
template <typename T>
void band_apply_transposed(const BandPlan& P, int64_t BH, int64_t D, const T* p, const T* a, T* out) {
  const int64_t N = P.tokens(), W = P.slots(), bk = P.block, nb = (P.S + bk - 1) / bk;
  const int64_t tile_size = bk * (bk + P.width - 1);
  for_each_block<T>(BH * P.rows * nb, P.combos * tile_size * D, tile_size, [&](int64_t item, T* tile) {
    const int64_t bh = item / (P.rows * nb), rk = item / nb % P.rows, k0 = item % nb * bk;
    const int64_t bn = std::min(bk, P.S - k0);
    T* O = out + (bh * N + rk * P.S + k0) * D;
    bool first = true;
    for (int64_t c = 0; c < P.combos; ++c) {
      const int64_t qr = P.query_row[rk * P.combos + c];
      // Query i sees key j under this combo when lo <= j - i <= lo + width - 1.
      const int64_t qs = std::max<int64_t>(0, k0 - P.lo - P.width + 1), qe = std::min(P.S, k0 + bn - P.lo);
      if (qr < 0 || qe <= qs) continue;
      const int64_t qn = qe - qs;
      const T* Pr = p + (bh * N + qr * P.S) * W + c * P.width;
      for (int64_t i = 0; i < qn; ++i) {
        const int64_t qi = qs + i;
        // Keys j in [max(k0, qi + lo), min(k0 + bn, qi + lo + width)), slot j - qi - lo.
        const int64_t js = std::max(k0, qi + P.lo), je = std::min(k0 + bn, qi + P.lo + P.width);
        T* row = tile + i * bn;
        if (je <= js) {
          zero(row, bn);
          continue;
        }
        zero(row, js - k0);
        copy(row + (js - k0), Pr + qi * W + (js - qi - P.lo), je - js);
        zero(row + (je - k0), bn - (je - k0));
      }
      gemm<T>(true, false, bn, D, qn, tile, bn, a + (bh * N + qr * P.S + qs) * D, D, first ? T(0) : T(1), O, D);
      first = false;
    }
    if (first) zero(O, bn * D);
  });
}

template void band_dots<float>(const BandPlan&, int64_t, int64_t, const float*, const float*, float*);
template void band_dots<double>(const BandPlan&, int64_t, int64_t, const double*, const double*, double*);
template void band_apply<float>(const BandPlan&, int64_t, int64_t, const float*, const float*, float*);
template void band_apply<double>(const BandPlan&, int64_t, int64_t, const double*, const double*, double*);
template void band_apply_transposed<float>(const BandPlan&, int64_t, int64_t, const float*, const float*, float*);
template void band_apply_transposed<double>(const BandPlan&, int64_t, int64_t, const double*, const double*,
                                            double*);

}  // namespace posgrad::window_detail
