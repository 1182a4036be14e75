// The SGEMM micro-kernel: the innermost, register-tiled piece of gemm.cpp. A reader who wants the
// algorithm can stop at the contract below; the rest is SIMD intrinsics.
//
// Contract. Given a packed A micro-panel `a` (kc columns of kMR rows: a[k * kMR + i]) and a packed
// B micro-panel `b` (kc rows of kNR columns: b[k * kNR + j]), compute the kMR x kNR tile
//
//     c[i * ldc + j] = alpha * sum_k a[k * kMR + i] * b[k * kNR + j] + beta * c[i * ldc + j]
//
// where beta == 0 means c is written without being read. The whole tile is always computed; the
// caller handles ragged edges (it zero-pads the panels and passes a scratch tile). `b` is 64-byte
// aligned (the packing buffer is, and every B micro-panel is a multiple of 64 bytes long); `a` is
// only read by scalar broadcasts and `c` by unaligned loads, so they may have any alignment.
//
// How it works (outer-product form). The kMR x kNR tile of C lives in SIMD registers for the whole
// k loop. Each step k loads one row of the B panel (kNR floats = a few vectors), broadcasts each of
// the kMR values of the A column in turn, and does kMR x (kNR / lanes) fused multiply-adds. Only at
// the end is C touched, once. The tile must fit the register file (accumulators + B vectors + one
// broadcast register <= 16 ymm or 32 zmm registers); a bigger tile reads less memory per flop.
//
// Variants, chosen at compile time from the -march flags (define POSGRAD_GEMM_NO_AVX512 to get
// the AVX variant on an AVX-512 machine):
//   AVX-512F     : kMR = 8, kNR = 32 (2 zmm per row): 16 accumulators + 2 B + 1 A of 32 zmm.
//   AVX + FMA3   : kMR = 6, kNR = 16 (2 ymm per row): 12 accumulators + 2 B + 1 A of 16 ymm.
//   anything else: kMR = 4, kNR = 16, plain C++ that the compiler auto-vectorises.
// The accumulators must outnumber FMA latency x FMA throughput (4 cycles x 2 ymm or 1 zmm per
// cycle on Zen 4) so the FMA units never wait: 16 and 12 independent chains are plenty. On a core
// with two 256-bit FMA pipes (e.g. AMD Zen 4, where one zmm FMA occupies both) the AVX-512 and
// AVX variants have the same peak, 32 flops per cycle; AVX-512 needs half the instructions. On
// the Zen 4 we tuned on (docs/benchmarks.md), 8x32 measured a few percent faster than 12x32,
// 14x32 and 6x64 (which use more of the 32 zmm registers) and than the 6x16 AVX kernel.
#pragma once

#include <cstdint>

#if defined(__AVX512F__) || (defined(__AVX__) && defined(__FMA__))
#include <immintrin.h>
#endif

namespace posgrad::cpu::gemm_detail {

#if defined(__AVX512F__) && !defined(POSGRAD_GEMM_NO_AVX512)

inline constexpr int kMR = 8;
inline constexpr int kNR = 32;
inline constexpr const char* kMicroKernelName = "avx512 8x32";
// Cache blocking for this tile (gemm.cpp explains the three numbers): B micro-panel KC x NR =
// 64 KiB, A block MC x KC = 256 KiB, B block KC x NC = 2 MiB.
inline constexpr int64_t kBlockKC = 512, kBlockMC = 128, kBlockNC = 1024;

inline void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b,
                         float* __restrict c, int64_t ldc, float alpha, float beta) {
  constexpr int V = kNR / 16;  // zmm vectors per tile row
  __m512 acc[kMR][V];
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[i][v] = _mm512_setzero_ps();
  // Touch the C tile early so its lines are on their way while the k loop runs.
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + kNR - 1), _MM_HINT_T0);
  }
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    __m512 bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = _mm512_load_ps(b + v * 16);
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
    a += kMR;
    b += kNR;
  }
  const __m512 va = _mm512_set1_ps(alpha);
  if (beta == 0.0f) {
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) _mm512_storeu_ps(c + i * ldc + v * 16, _mm512_mul_ps(va, acc[i][v]));
  } else {
    const __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        float* p = c + i * ldc + v * 16;
        _mm512_storeu_ps(p, _mm512_fmadd_ps(va, acc[i][v], _mm512_mul_ps(vb, _mm512_loadu_ps(p))));
      }
  }
}

#elif defined(__AVX__) && defined(__FMA__)

inline constexpr int kMR = 6;
inline constexpr int kNR = 16;
inline constexpr const char* kMicroKernelName = "avx+fma 6x16";
// Cache blocking for AVX2-class cores, whose L1d is 32 KiB and L2 256 KiB to 1 MiB (Haswell to
// Zen 4): the B micro-panel KC x NR = 16 KiB stays in L1 next to the streaming A micro-panel
// (6 KiB), the A block MC x KC = 144 KiB in L2, the B block KC x NC = 2 MiB in L3.
inline constexpr int64_t kBlockKC = 256, kBlockMC = 144, kBlockNC = 2048;

inline void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b,
                         float* __restrict c, int64_t ldc, float alpha, float beta) {
  constexpr int V = kNR / 8;  // ymm vectors per tile row
  __m256 acc[kMR][V];
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[i][v] = _mm256_setzero_ps();
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + kNR - 1), _MM_HINT_T0);
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    __m256 bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = _mm256_load_ps(b + v * 8);
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);  // AVX (not AVX2): broadcast from memory
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[i][v] = _mm256_fmadd_ps(ai, bv[v], acc[i][v]);
    }
    a += kMR;
    b += kNR;
  }
  const __m256 va = _mm256_set1_ps(alpha);
  if (beta == 0.0f) {
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) _mm256_storeu_ps(c + i * ldc + v * 8, _mm256_mul_ps(va, acc[i][v]));
  } else {
    const __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        float* p = c + i * ldc + v * 8;
        _mm256_storeu_ps(p, _mm256_fmadd_ps(va, acc[i][v], _mm256_mul_ps(vb, _mm256_loadu_ps(p))));
      }
  }
}

#else  // portable fallback: the same outer-product loop in plain C++

inline constexpr int kMR = 4;
inline constexpr int kNR = 16;
inline constexpr const char* kMicroKernelName = "portable 4x16";
inline constexpr int64_t kBlockKC = 512, kBlockMC = 128, kBlockNC = 1024;  // as AVX-512

inline void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b,
                         float* __restrict c, int64_t ldc, float alpha, float beta) {
  float acc[kMR][kNR] = {};
  for (int64_t k = 0; k < kc; ++k) {
    for (int i = 0; i < kMR; ++i)
      for (int j = 0; j < kNR; ++j) acc[i][j] += a[i] * b[j];
    a += kMR;
    b += kNR;
  }
  for (int i = 0; i < kMR; ++i)
    for (int j = 0; j < kNR; ++j)
      c[i * ldc + j] = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * c[i * ldc + j];
}

#endif

}  // namespace posgrad::cpu::gemm_detail
