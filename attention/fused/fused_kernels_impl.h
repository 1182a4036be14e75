// The fused attention kernels' code (see fused_kernels.h), included by two translation units
// that compile it for different vector widths: fused_kernels_wide.cpp (the compiler's widest
// vectors, for long runs of keys: sequences) and fused_kernels_narrow.cpp (256-bit vectors, for
// the short runs of keys of 2-D grid rows).
// fused_kernels.cpp picks one per call. Each includer defines POSGRAD_FUSED_VARIANT, the
// namespace the code goes into, and POSGRAD_FUSED_VECTOR_BYTES, its vector width.
// Deliberately not here: the choice of variant.
// Shapes: letters of shape_legend.h.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#if defined(__AVX512F__) && defined(__AVX512VL__)
#include <immintrin.h>  // FirstLanes' masked loads and stores
#endif

#include "attention/fused/fused_kernels.h"
#include "tensor/cpu/parallel.h"
#include "tensor/tensor.h"

#ifndef POSGRAD_FUSED_VARIANT
#error "define POSGRAD_FUSED_VARIANT (the namespace of this copy of the kernels) before including fused_kernels_impl.h"
#endif
#ifndef POSGRAD_FUSED_VECTOR_BYTES
#error "define POSGRAD_FUSED_VECTOR_BYTES (the vector width this copy is compiled for) before including fused_kernels_impl.h"
#endif

namespace posgrad::fused_detail::POSGRAD_FUSED_VARIANT {


namespace {

constexpr double kMaskEpsilon = 1e-8;  // the reference pipeline's renormalisation epsilon

// exp for the row softmax. float: a branch-free Cody-Waite reduction and a degree-6 polynomial
// (relative error about 2e-7, inside float32's own rounding of the inputs), written so the
// compiler vectorises the key loops; -inf and anything below -87 give exactly 0. double: std::exp
// (the float64 path is the exact one, for tests and gradcheck).
// The shared steps, for a float or a vector of floats (Lanes<float>::exp): x (clamped to
// [-87, 88]) = n ln 2 + r with n an integer and |r| <= ln 2 / 2, and e^r by its polynomial.
template <typename F>
F exp_reduce(F x, F& n) {
  // Round to nearest by the 1.5 * 2^23 trick: std::floor would keep GCC 12 from vectorising.
  n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  return (x - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;
}
template <typename F>
F exp_polynomial(F r) {
  F p = r * (1.0f / 720.0f) + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  return p * r + 1.0f;
}
inline float exp_row(float x) {
  const bool underflow = x < -87.0f;
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  float n;
  const float p = exp_polynomial(exp_reduce(x, n));
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  return underflow ? 0.0f : p * scale;
}
inline double exp_row(double x) { return std::exp(x); }

// Reductions over a run of keys keep one partial result per vector lane and combine the lanes at
// the end. A single running scalar would chain every step on the one before: GCC 12 does not
// vectorise a float max reduction at all without -ffast-math, and a running sum waits on the FMA
// latency each step. The lanes are GCC/Clang vector types of POSGRAD_FUSED_VECTOR_BYTES (set by
// the includer), so the partial results stay in registers.
template <typename T>
struct Lanes {
  typedef T Vec __attribute__((vector_size(POSGRAD_FUSED_VECTOR_BYTES)));
  static constexpr int kCount = POSGRAD_FUSED_VECTOR_BYTES / static_cast<int>(sizeof(T));
  static Vec load(const T* p, T /*fill*/ = T(0)) {  // unaligned
    Vec x;
    std::memcpy(&x, p, sizeof x);
    return x;
  }
  static void store(T* p, Vec x) { std::memcpy(p, &x, sizeof x); }
  static Vec splat(T value) {
    Vec x;
    for (int l = 0; l < kCount; ++l) x[l] = value;
    return x;
  }
  // exp_row lane by lane: float in vector arithmetic (the same steps as exp_row(float)),
  // double through std::exp.
  static Vec exp(Vec x) {
    if constexpr (std::is_same_v<T, float>) {
      typedef int32_t Int __attribute__((vector_size(POSGRAD_FUSED_VECTOR_BYTES)));
      const Int underflow = x < -87.0f;
      x = x < -87.0f ? splat(-87.0f) : (x > 88.0f ? splat(88.0f) : x);
      Vec n;
      const Vec p = exp_polynomial(exp_reduce(x, n));
      const Vec scale = reinterpret_cast<Vec>((__builtin_convertvector(n, Int) + 127) << 23);
      return underflow ? splat(0.0f) : p * scale;
    } else {
      for (int l = 0; l < kCount; ++l) x[l] = std::exp(x[l]);
      return x;
    }
  }
};

// The first n < kCount lanes of a vector: a run's last len % kCount keys, done as one vector
// step instead of one scalar step per key (a 2-D grid row of 21 to 31 keys would otherwise spend
// more steps on its tail than on its body). Loads put `fill` in the other lanes and read no memory
// there; stores leave the memory there untouched. AVX-512 masked moves where the compiler
// targets AVX-512VL, element loops elsewhere. The vector-step code calls the same names on a
// Lanes<T> (whole vectors, static) or on a FirstLanes<T> (these).
template <typename T>
struct FirstLanes : Lanes<T> {
  using Vec = typename Lanes<T>::Vec;
  using Lanes<T>::kCount;
  int n;  // 0 < n < kCount

  Vec load(const T* p, T fill = T(0)) const {
#if defined(__AVX512F__) && defined(__AVX512VL__)
    const unsigned k = (1u << n) - 1;
    if constexpr (std::is_same_v<T, float> && sizeof(Vec) == 64)
      return (Vec)_mm512_mask_loadu_ps(_mm512_set1_ps(fill), static_cast<__mmask16>(k), p);
    else if constexpr (std::is_same_v<T, float> && sizeof(Vec) == 32)
      return (Vec)_mm256_mask_loadu_ps(_mm256_set1_ps(fill), static_cast<__mmask8>(k), p);
    else if constexpr (std::is_same_v<T, double> && sizeof(Vec) == 64)
      return (Vec)_mm512_mask_loadu_pd(_mm512_set1_pd(fill), static_cast<__mmask8>(k), p);
    else if constexpr (std::is_same_v<T, double> && sizeof(Vec) == 32)
      return (Vec)_mm256_mask_loadu_pd(_mm256_set1_pd(fill), static_cast<__mmask8>(k), p);
#endif
    Vec x = Lanes<T>::splat(fill);
    for (int l = 0; l < n; ++l) x[l] = p[l];
    return x;
  }
  void store(T* p, Vec x) const {
#if defined(__AVX512F__) && defined(__AVX512VL__)
    const unsigned k = (1u << n) - 1;
    if constexpr (std::is_same_v<T, float> && sizeof(Vec) == 64)
      return _mm512_mask_storeu_ps(p, static_cast<__mmask16>(k), (__m512)x);
    else if constexpr (std::is_same_v<T, float> && sizeof(Vec) == 32)
      return _mm256_mask_storeu_ps(p, static_cast<__mmask8>(k), (__m256)x);
    else if constexpr (std::is_same_v<T, double> && sizeof(Vec) == 64)
      return _mm512_mask_storeu_pd(p, static_cast<__mmask8>(k), (__m512d)x);
    else if constexpr (std::is_same_v<T, double> && sizeof(Vec) == 32)
      return _mm256_mask_storeu_pd(p, static_cast<__mmask8>(k), (__m256d)x);
#endif
    for (int l = 0; l < n; ++l) p[l] = x[l];
  }
};

// Runs step(lanes, t) over t = 0, kCount, 2 kCount, ... < len: whole vectors (Lanes<T>), then the
// last len % kCount keys as one FirstLanes<T> step.
template <typename T, class Step>
void for_each_vector(int64_t len, const Step& step) {
  constexpr int W = Lanes<T>::kCount;
  int64_t t = 0;
  for (; t + W <= len; t += W) step(Lanes<T>{}, t);
  if (t < len) {
    FirstLanes<T> first;
    first.n = static_cast<int>(len - t);
    step(first, t);
  }
}

// The largest of s[0, len) (-inf for an empty run).
template <typename T>
T row_max(const T* s, int64_t len) {
  constexpr T kLow = -std::numeric_limits<T>::infinity();
  typename Lanes<T>::Vec lane = Lanes<T>::splat(kLow);
  for_each_vector<T>(len, [&](const auto& lanes, int64_t t) {
    const auto x = lanes.load(s + t, kLow);
    lane = x > lane ? x : lane;
  });
  T m = kLow;
  for (int l = 0; l < Lanes<T>::kCount; ++l) m = std::max(m, lane[l]);
  return m;
}

// e[t] = exp(s[t] - m) for t < len; returns the sum of e (per-lane partial sums).
template <typename T>
T exp_and_sum(const T* s, T m, T* e, int64_t len) {
  typename Lanes<T>::Vec lane = Lanes<T>::splat(T(0));
  for_each_vector<T>(len, [&](const auto& lanes, int64_t t) {
    // -inf past the run: exp gives 0 there, so the sum is the run's.
    const auto x = Lanes<T>::exp(lanes.load(s + t, -std::numeric_limits<T>::infinity()) - m);
    lanes.store(e + t, x);
    lane += x;
  });
  T z = 0;
  for (int l = 0; l < Lanes<T>::kCount; ++l) z += lane[l];
  return z;
}

// Dh dot products summed over the runs of one query: sum over runs of sum_t w[t] rows[d stride + t]
// for d < Dh (the forward's e . v, dq from k or from the query table). One pass over each run
// computes all Dh sums; each keeps per-lane partial sums across the query's runs, and the lanes
// are combined once per query (finish), not once per run: a 2-D grid row is only S keys long.
// Dh 8 and 16 take that path; other widths sum per d (the float64 test sizes among them).
template <typename T>
class RowDotSums {
 public:
  static constexpr int kMaxFixed = 16;
  explicit RowDotSums(int64_t Dh) : Dh_(Dh), rest_(static_cast<size_t>(Dh)) { clear(); }
  void clear() {
    for (auto& x : part_) x = L::splat(T(0));
    std::fill(rest_.begin(), rest_.end(), T(0));
    weight_sum_ = L::splat(T(0));
    weight_rest_ = T(0);
  }
  void add(const T* w, const T* rows, int64_t stride, int64_t len) {
    if (Dh_ == 8) return add_fixed<8>(w, rows, stride, len);
    if (Dh_ == 16) return add_fixed<16>(w, rows, stride, len);
    for (int64_t d = 0; d < Dh_; ++d) {
      const T* __restrict r = rows + d * stride;
      T a = 0;
#pragma omp simd reduction(+ : a)
      for (int64_t t = 0; t < len; ++t) a += w[t] * r[t];
      rest_[d] += a;
    }
  }
  // add() with the weights w[t] = exp(s[t] - m) computed on the way (the forward's e . v without
  // a pass to store e and one to read it back); e gets them when not null. Their sum:
  // weight_sum().
  void add_exp(const T* s, T m, T* e, const T* rows, int64_t stride, int64_t len) {
    if (Dh_ == 8) return add_exp_fixed<8>(s, m, e, rows, stride, len);
    if (Dh_ == 16) return add_exp_fixed<16>(s, m, e, rows, stride, len);
    exp_buffer_.resize(static_cast<size_t>(len));
    T* w = e ? e : exp_buffer_.data();
    weight_rest_ += exp_and_sum(s, m, w, len);
    add(w, rows, stride, len);
  }
  // a.add(wa, ra, sa, len) and b.add(wb, rb, sb, len) in one pass over the run (the backward's dq
  // from the query table and from k): 2 Dh accumulators, one loop.
  static void add_both(RowDotSums& a, const T* wa, const T* ra, int64_t sa, RowDotSums& b, const T* wb, const T* rb,
                       int64_t sb, int64_t len) {
    if (a.Dh_ == 8 && b.Dh_ == 8) return add_both_fixed<8>(a, wa, ra, sa, b, wb, rb, sb, len);
    if (a.Dh_ == 16 && b.Dh_ == 16) return add_both_fixed<16>(a, wa, ra, sa, b, wb, rb, sb, len);
    a.add(wa, ra, sa, len);
    b.add(wb, rb, sb, len);
  }
  // The sum of add_exp's weights since the last finish.
  T weight_sum() const {
    T z = weight_rest_;
    for (int l = 0; l < L::kCount; ++l) z += weight_sum_[l];
    return z;
  }
  // The sums: out[d] = sum for d < Dh (and the state cleared for the next query).
  void finish(T* out) {
    for (int64_t d = 0; d < Dh_; ++d) {
      T a = rest_[d];
      if (d < kMaxFixed)
        for (int l = 0; l < L::kCount; ++l) a += part_[d][l];
      out[d] = a;
    }
    clear();
  }

 private:
  using L = Lanes<T>;
  template <int DH>
  void add_fixed(const T* w, const T* rows, int64_t stride, int64_t len) {
    typename L::Vec part[DH];
    for (int d = 0; d < DH; ++d) part[d] = part_[d];
    for_each_vector<T>(len, [&](const auto& lanes, int64_t t) {
      const auto wt = lanes.load(w + t);  // 0 past the run
      for (int d = 0; d < DH; ++d) part[d] += wt * lanes.load(rows + d * stride + t);
    });
    for (int d = 0; d < DH; ++d) part_[d] = part[d];
  }
  template <int DH>
  static void add_both_fixed(RowDotSums& a, const T* wa, const T* ra, int64_t sa, RowDotSums& b, const T* wb,
                             const T* rb, int64_t sb, int64_t len) {
    typename L::Vec pa[DH], pb[DH];
    for (int d = 0; d < DH; ++d) {
      pa[d] = a.part_[d];
      pb[d] = b.part_[d];
    }
    for_each_vector<T>(len, [&](const auto& lanes, int64_t t) {
      const auto xa = lanes.load(wa + t), xb = lanes.load(wb + t);  // 0 past the run
      for (int d = 0; d < DH; ++d) {
        pa[d] += xa * lanes.load(ra + d * sa + t);
        pb[d] += xb * lanes.load(rb + d * sb + t);
      }
    });
    for (int d = 0; d < DH; ++d) {
      a.part_[d] = pa[d];
      b.part_[d] = pb[d];
    }
  }
  template <int DH>
  void add_exp_fixed(const T* s, T m, T* e, const T* rows, int64_t stride, int64_t len) {
    typename L::Vec part[DH], z = weight_sum_;
    for (int d = 0; d < DH; ++d) part[d] = part_[d];
    for_each_vector<T>(len, [&](const auto& lanes, int64_t t) {
      // -inf past the run: its weights are 0 there.
      const auto wt = L::exp(lanes.load(s + t, -std::numeric_limits<T>::infinity()) - m);
      if (e) lanes.store(e + t, wt);
      z += wt;
      for (int d = 0; d < DH; ++d) part[d] += wt * lanes.load(rows + d * stride + t);
    });
    for (int d = 0; d < DH; ++d) part_[d] = part[d];
    weight_sum_ = z;
  }
  int64_t Dh_;
  typename L::Vec part_[kMaxFixed];
  std::vector<T> rest_;  // [Dh]: the widths without a fixed path
  typename L::Vec weight_sum_;
  T weight_rest_;
  std::vector<T> exp_buffer_;  // add_exp's weights for the widths without a fixed path
};

// out[t] = sum_d w[d] rows[d * stride + t] for t < len (dout_i . v_j for a run of keys): the d-sum
// stays in registers instead of a pass over out per d.
template <typename T, int DH>
void row_combination_fixed(const T* w, const T* rows, int64_t stride, int64_t len, T* __restrict out) {
  T wd[DH];
  const T* r[DH];
  for (int d = 0; d < DH; ++d) {
    wd[d] = w[d];
    r[d] = rows + d * stride;
  }
#pragma omp simd
  for (int64_t t = 0; t < len; ++t) {
    T a = 0;
    for (int d = 0; d < DH; ++d) a += wd[d] * r[d][t];
    out[t] = a;
  }
}

template <typename T>
void row_combination(int64_t Dh, const T* w, const T* rows, int64_t stride, int64_t len, T* __restrict out) {
  if (Dh == 8) return row_combination_fixed<T, 8>(w, rows, stride, len, out);
  if (Dh == 16) return row_combination_fixed<T, 16>(w, rows, stride, len, out);
#pragma omp simd
  for (int64_t t = 0; t < len; ++t) out[t] = T(0);
  for (int64_t d = 0; d < Dh; ++d) {
    const T wd = w[d];
    const T* __restrict r = rows + d * stride;
#pragma omp simd
    for (int64_t t = 0; t < len; ++t) out[t] += wd * r[t];
  }
}

#ifdef POSGRAD_OPENMP
int thread_count() { return cpu::max_threads(); }
int thread_id() { return omp_get_thread_num(); }
#else
int thread_count() { return 1; }
int thread_id() { return 0; }
#endif

struct Segment {
  int64_t j0, r0, len;
};

// Everything one (batch, head) reads: k and v transposed to [Dh, N], the key-bias dots, the
// tables of head h (absent ones point at constant ones/zeros, so the loops need no branches).
template <typename T>
struct Head {
  const T* q;       // [Nq, Dh]
  const T* kt;      // [Dh, N]
  const T* vt;      // [Dh, N]
  const T* akey;    // [N] (a_h . k_j) or zeros
  const T* key_bias;  // [Dh] or null
  const T* table_t;   // [Dh, R] or null
  const T* bias;      // [R] or null
  const T* mod;       // [R] (ones when absent)
  const T* modpos;    // [R] (ones when absent)
  const T* mask;      // [R] (ones when absent)
  const T* offset;    // [R] added to s (0 or -inf), or null
  const uint8_t* padded;  // [N] or null
};

// Shared precomputation of forward and backward: k and v transposed, a . k per key, and the
// constant tables.
template <typename T>
struct Prepared {
  Tensor kt, vt, akey, ones;  // [BH, Dh, N], [BH, Dh, N], [BH, N], [max(R, N)]
  Prepared(const Problem& P, const Tables<T>& tables, const T* k, const T* v) {
    const int64_t BH = P.B * P.H, N = P.N, Dh = P.Dh;
    const DType dt = dtype_of<T>();
    kt = Tensor::empty({BH, Dh, N}, dt);
    vt = Tensor::empty({BH, Dh, N}, dt);
    akey = Tensor::zeros({BH, N}, dt);
    ones = Tensor::full({std::max<int64_t>({P.R, N, 1})}, 1.0, dt);
    T* ktp = kt.data<T>();
    T* vtp = vt.data<T>();
    T* ap = akey.data<T>();
    cpu::parallel_for(BH, N * Dh, [&](int64_t bh) {
      const T* kh = k + bh * N * Dh;
      const T* vh = v + bh * N * Dh;
      T* kth = ktp + bh * Dh * N;
      T* vth = vtp + bh * Dh * N;
      for (int64_t j = 0; j < N; ++j)
        for (int64_t d = 0; d < Dh; ++d) {
          kth[d * N + j] = kh[j * Dh + d];
          vth[d * N + j] = vh[j * Dh + d];
        }
      if (tables.key_bias) {
        const T* a = tables.key_bias + (bh % P.H) * Dh;
        T* ah = ap + bh * N;
        for (int64_t d = 0; d < Dh; ++d)
          for (int64_t j = 0; j < N; ++j) ah[j] += a[d] * kth[d * N + j];
      }
    });
  }
  // The head of batch-head bh, with the tables of query column x (column tables; else x = 0).
  Head<T> head(const Problem& P, const Tables<T>& tables, const T* q, int64_t bh, int64_t x = 0) const {
    const int64_t h = bh % P.H, b = bh / P.H, N = P.N, Dh = P.Dh, R = P.R;
    const int64_t th = h * P.table_columns + x;  // the relative tables' head
    const T* one = ones.data<T>();
    Head<T> hd;
    hd.q = q + bh * P.Nq * Dh;
    hd.kt = kt.data<T>() + bh * Dh * N;
    hd.vt = vt.data<T>() + bh * Dh * N;
    hd.akey = akey.data<T>() + bh * N;
    hd.key_bias = tables.key_bias ? tables.key_bias + h * Dh : nullptr;
    hd.table_t = tables.query_table_t ? tables.query_table_t + th * Dh * R : nullptr;
    hd.bias = tables.bias ? tables.bias + th * R : nullptr;
    hd.mod = tables.modulation ? tables.modulation + th * R : one;
    hd.modpos = tables.positional_modulation ? tables.positional_modulation + th * R : one;
    hd.mask = tables.prob_mask ? tables.prob_mask + th * R : one;
    hd.offset = tables.logit_offset ? tables.logit_offset + th * R : nullptr;
    hd.padded = P.padded ? P.padded + b * N : nullptr;
    return hd;
  }
};

// segment_logits for a head width DH known at compile time and a query table: content,
// positional and s in one pass over the keys (the d-sums stay in registers); c and p are stored
// only for kKeepTerms (the backward needs them, the forward only s).
template <typename T, int DH, bool kKeepTerms>
void segment_logits_fixed(const Head<T>& hd, const Problem& P, const T* qi, const T* qs, const Segment& g,
                          T* __restrict s, T* __restrict c, T* __restrict p) {
  const int64_t N = P.N, R = P.R;
  T wq[DH], wk[DH];
  const T* kr[DH];
  const T* tr[DH];
  for (int d = 0; d < DH; ++d) {
    wq[d] = qi[d];
    wk[d] = qs[d];
    kr[d] = hd.kt + d * N + g.j0;
    tr[d] = hd.table_t + d * R + g.r0;
  }
  const T* akey = hd.akey + g.j0;
  const T* mod = hd.mod + g.r0;
  const T* mp = hd.modpos + g.r0;
  const T* br = hd.bias ? hd.bias + g.r0 : nullptr;
  const T* offset = hd.offset ? hd.offset + g.r0 : nullptr;
  for_each_vector<T>(g.len, [&](const auto& lanes, int64_t t) {
    using V = typename Lanes<T>::Vec;
    V content = lanes.load(akey + t), positional = br ? lanes.load(br + t) : Lanes<T>::splat(T(0));
    for (int d = 0; d < DH; ++d) {
      content += wk[d] * lanes.load(kr[d] + t);
      positional += wq[d] * lanes.load(tr[d] + t);
    }
    if constexpr (kKeepTerms) {
      lanes.store(c + t, content);
      lanes.store(p + t, positional);
    }
    auto logit = lanes.load(mod + t) * (content + lanes.load(mp + t) * positional);
    if (offset) logit += lanes.load(offset + t);
    lanes.store(s + t, logit);
  });
}

// The logits of one segment: s = mod (c + modpos p), -inf at padded keys, with the content c
// and the positional term p (when there is one) left in c and p when keep_terms (otherwise
// c and p may or may not be used as scratch). qs = scale * q_i.
template <typename T>
void segment_logits(const Head<T>& hd, const Problem& P, const T* qi, const T* qs, const Segment& g, T* __restrict s,
                    T* __restrict c, T* __restrict p, bool positional, bool keep_terms = true) {
  const int64_t N = P.N, R = P.R, Dh = P.Dh, len = g.len;
  if (positional && hd.table_t && (Dh == 8 || Dh == 16)) {
    if (Dh == 8 && keep_terms) segment_logits_fixed<T, 8, true>(hd, P, qi, qs, g, s, c, p);
    else if (Dh == 8) segment_logits_fixed<T, 8, false>(hd, P, qi, qs, g, s, c, p);
    else if (keep_terms) segment_logits_fixed<T, 16, true>(hd, P, qi, qs, g, s, c, p);
    else segment_logits_fixed<T, 16, false>(hd, P, qi, qs, g, s, c, p);
    if (hd.padded) {
      const uint8_t* pad = hd.padded + g.j0;
      for (int64_t t = 0; t < len; ++t)
        if (pad[t]) s[t] = -std::numeric_limits<T>::infinity();
    }
    return;
  }
  const T* __restrict akey = hd.akey + g.j0;
#pragma omp simd
  for (int64_t t = 0; t < len; ++t) c[t] = akey[t];
  for (int64_t d = 0; d < Dh; ++d) {
    const T w = qs[d];
    const T* __restrict kr = hd.kt + d * N + g.j0;
#pragma omp simd
    for (int64_t t = 0; t < len; ++t) c[t] += w * kr[t];
  }
  const T* __restrict mod = hd.mod + g.r0;
  if (positional) {
    if (hd.bias) {
      const T* __restrict br = hd.bias + g.r0;
#pragma omp simd
      for (int64_t t = 0; t < len; ++t) p[t] = br[t];
    } else {
#pragma omp simd
      for (int64_t t = 0; t < len; ++t) p[t] = T(0);
    }
    if (hd.table_t)
      for (int64_t d = 0; d < Dh; ++d) {
        const T w = qi[d];
        const T* __restrict tr = hd.table_t + d * R + g.r0;
#pragma omp simd
        for (int64_t t = 0; t < len; ++t) p[t] += w * tr[t];
      }
    const T* __restrict mp = hd.modpos + g.r0;
#pragma omp simd
    for (int64_t t = 0; t < len; ++t) s[t] = mod[t] * (c[t] + mp[t] * p[t]);
  } else {
#pragma omp simd
    for (int64_t t = 0; t < len; ++t) s[t] = mod[t] * c[t];
  }
  if (hd.offset) {
    const T* __restrict offset = hd.offset + g.r0;
#pragma omp simd
    for (int64_t t = 0; t < len; ++t) s[t] += offset[t];
  }
  if (hd.padded) {
    const uint8_t* pad = hd.padded + g.j0;
    for (int64_t t = 0; t < len; ++t)
      if (pad[t]) s[t] = -std::numeric_limits<T>::infinity();
  }
}

// Where phase A of the backward (below) leaves one run's per-key terms. pm and dc are indexed by
// key (from the run's first key), dp by relative entry (from the run's r0); the table gradients
// are the head's rows from r0. Gradients nobody needs point at a scratch row (`junk`), so the
// loop below has no branch per term.
template <typename T>
struct RunTerms {
  T* pm;        // e M: dv_j's weight of dout_i
  T* dc;        // d loss / d content
  T* dp;        // d loss / d positional
  T* g_bias;    // += dp
  T* g_mod;     // += ds (content + modpos positional)
  T* g_modpos;  // += dc positional
  T* g_mask;    // += e (dout_i . v_j - D)
};

// Phase A of the backward for one run of keys of one query, after its logits (segment_logits:
// s, content c and positional p), for a head width DH known at compile time: the probabilities
// e = exp(s - lse), dout_i . v_j and every per-key term in one pass over the keys, the d-sum in
// registers (the generic code in backward() takes one pass per term). Written in explicit vectors
// (Lanes), one vector of keys per step (for_each_vector).
// kModulated: some modulation or mask has a gradient (g_mod, g_modpos, g_mask are written).
template <typename T, int DH, bool kModulated>
struct RunBackwardStep {
  T wo[DH];      // dout_i
  const T* vr;   // v row of d = 0 (rows N apart)
  int64_t N;
  const T *s, *c, *p, *mod, *mp, *mk;
  T row_lse, D, eps;
  RunTerms<T> out;

  template <class L>
  void operator()(const L& lanes, int64_t t) const {
    using V = typename L::Vec;
    V dov = L::splat(T(0));
    for (int d = 0; d < DH; ++d) dov += wo[d] * lanes.load(vr + d * N + t);
    const V m = lanes.load(mod + t), modpos = lanes.load(mp + t), mask = lanes.load(mk + t);
    const V e = L::exp(lanes.load(s + t) - row_lse);
    const V ds = e * (mask * (dov - D) - eps * D);  // d loss / d s
    const V dc = ds * m;
    const V dp = dc * modpos;
    lanes.store(out.pm + t, e * mask);
    lanes.store(out.dc + t, dc);
    lanes.store(out.dp + t, dp);
    lanes.store(out.g_bias + t, lanes.load(out.g_bias + t) + dp);
    if constexpr (kModulated) {
      const V positional = lanes.load(p + t);
      lanes.store(out.g_mod + t, lanes.load(out.g_mod + t) + ds * (lanes.load(c + t) + modpos * positional));
      lanes.store(out.g_modpos + t, lanes.load(out.g_modpos + t) + dc * positional);
      lanes.store(out.g_mask + t, lanes.load(out.g_mask + t) + e * (dov - D));
    }
  }
};

template <typename T, int DH, bool kModulated>
void run_backward_fixed(const Head<T>& hd, const Problem& P, const Segment& g, const T* s, const T* c, const T* p,
                        const T* doi, T row_lse, T D, T eps, const RunTerms<T>& out) {
  RunBackwardStep<T, DH, kModulated> step;
  for (int d = 0; d < DH; ++d) step.wo[d] = doi[d];
  step.N = P.N;
  step.vr = hd.vt + g.j0;
  step.s = s;
  step.c = c;
  step.p = p;
  step.mod = hd.mod + g.r0;
  step.mp = hd.modpos + g.r0;
  step.mk = hd.mask + g.r0;
  step.row_lse = row_lse;
  step.D = D;
  step.eps = eps;
  step.out = out;
  for_each_vector<T>(g.len, step);
}

template <typename T>
void run_backward(int64_t Dh, bool modulated, const Head<T>& hd, const Problem& P, const Segment& g, const T* s,
                  const T* c, const T* p, const T* doi, T row_lse, T D, T eps, const RunTerms<T>& out) {
  if (Dh == 8) {
    if (modulated) run_backward_fixed<T, 8, true>(hd, P, g, s, c, p, doi, row_lse, D, eps, out);
    else run_backward_fixed<T, 8, false>(hd, P, g, s, c, p, doi, row_lse, D, eps, out);
  } else {
    if (modulated) run_backward_fixed<T, 16, true>(hd, P, g, s, c, p, doi, row_lse, D, eps, out);
    else run_backward_fixed<T, 16, false>(hd, P, g, s, c, p, doi, row_lse, D, eps, out);
  }
}

// Every query's runs of keys (RowGeometry::for_each_segment), listed once per call: they depend
// on the query's place on the grid only, not on the batch row or the head. Stored in a tensor (the
// caching allocator): a 2-D grid's list is 32 K runs, which as a fresh std::vector per call cost
// about 2,000 page faults per training step.
class QuerySegments {
 public:
  QuerySegments(const RowGeometry& geo, int64_t Nq) : start_{0}, keys_(static_cast<size_t>(Nq)) {
    start_.reserve(static_cast<size_t>(Nq + 1));
    int64_t count = 0;
    for (int64_t i = 0; i < Nq; ++i) {
      keys_[i] = geo.for_each_segment(i, [&](int64_t, int64_t, int64_t) { ++count; });
      start_.push_back(count);
    }
    static_assert(sizeof(Segment) == 3 * sizeof(int64_t), "Segment is three int64");
    storage_ = Tensor::empty({std::max<int64_t>(count, 1), 3}, kInt64);
    Segment* out = reinterpret_cast<Segment*>(storage_.data<int64_t>());
    for (int64_t i = 0; i < Nq; ++i)
      geo.for_each_segment(i, [&](int64_t j0, int64_t r0, int64_t len) { *out++ = {j0, r0, len}; });
  }
  // Query row i's runs, and the number of keys they cover.
  std::span<const Segment> of(int64_t i) const {
    const Segment* base = reinterpret_cast<const Segment*>(storage_.data<int64_t>());
    return {base + start_[i], base + start_[i + 1]};
  }
  int64_t keys(int64_t i) const { return keys_[i]; }

 private:
  std::vector<int64_t> start_;  // [Nq + 1]
  Tensor storage_;              // [segments, 3]: j0, r0, len
  std::vector<int64_t> keys_;   // [Nq]
};

template <typename T>
struct Scratch {
  std::vector<T> s, c, p, e, qs, acc;
  RowDotSums<T> ev;  // the forward's sum_j e_j v_j
  Scratch(int64_t keys, int64_t Dh) : s(keys), c(keys), p(keys), e(keys), qs(Dh), acc(Dh), ev(Dh) {}
};

}  // namespace

namespace {

// The most keys any query of `geo` sees (the size of a row buffer).
int64_t max_row_keys(const RowGeometry& geo) {
  if (geo.structure.empty()) return geo.tokens;
  int64_t keys = 1;
  for (size_t d = 0; d < geo.structure.size(); ++d)
    keys *= std::max<int64_t>(0, std::min(geo.structure[d], geo.hi[d] - geo.lo[d] + 1));
  return std::max<int64_t>(keys, 1);
}

}  // namespace

template <typename T>
void forward(const Problem& P, const Tables<T>& tables, const T* q, const T* k, const T* v, T* out, T* lse,
             T* dense_probs) {
  const int64_t BH = P.B * P.H, N = P.N, Nq = P.Nq, Dh = P.Dh;
  const Prepared<T> prep(P, tables, k, v);
  const bool positional = tables.query_table_t || tables.bias;
  const bool masked = tables.prob_mask != nullptr;
  const int64_t row_keys = max_row_keys(P.geometry);
  constexpr int64_t kChunk = 32;  // queries per work item
  const int64_t chunks = (Nq + kChunk - 1) / kChunk, items = BH * chunks;
  const QuerySegments segments(P.geometry, Nq);
#pragma omp parallel if (items > 1 && thread_count() > 1)
  {
    Scratch<T> sc(row_keys, Dh);
#pragma omp for schedule(dynamic)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t bh = item / chunks, i_begin = (item % chunks) * kChunk, i_end = std::min(Nq, i_begin + kChunk);
      Head<T> hd = prep.head(P, tables, q, bh);
      for (int64_t i = i_begin; i < i_end; ++i) {
        if (P.table_columns > 1) hd = prep.head(P, tables, q, bh, i % P.table_columns);
        const T* qi = hd.q + i * Dh;
        T* oi = out + (bh * Nq + i) * Dh;
        for (int64_t d = 0; d < Dh; ++d) sc.qs[d] = static_cast<T>(P.scale) * qi[d];
        const std::span<const Segment> segs = segments.of(i);
        const int64_t L = segments.keys(i);
        int64_t off = 0;
        for (const Segment& g : segs) {
          segment_logits(hd, P, qi, sc.qs.data(), g, sc.s.data() + off, sc.c.data(), sc.p.data(), positional,
                         /*keep_terms=*/false);
          off += g.len;
        }
        const T m = row_max(sc.s.data(), L);
        if (L == 0 || m == -std::numeric_limits<T>::infinity()) {  // no key: zero attention
          for (int64_t d = 0; d < Dh; ++d) oi[d] = T(0);
          lse[bh * Nq + i] = std::numeric_limits<T>::infinity();
          continue;
        }
        // Z = sum exp(s - m) over the whole row; W = the same with the mask (Z without one).
        T Z = 0, W = 0;
        if (!masked) {  // e = exp(s - m) computed inside the e . v pass (kept only for dense_probs)
          off = 0;
          for (const Segment& g : segs) {
            sc.ev.add_exp(sc.s.data() + off, m, dense_probs ? sc.e.data() + off : nullptr, hd.vt + g.j0, N, g.len);
            off += g.len;
          }
          Z = W = sc.ev.weight_sum();
        } else {
          Z = exp_and_sum(sc.s.data(), m, sc.e.data(), L);
          off = 0;
          for (const Segment& g : segs) {
            T* __restrict e = sc.e.data() + off;
            const T* __restrict mk = hd.mask + g.r0;
            for (int64_t t = 0; t < g.len; ++t) {
              e[t] *= mk[t];
              W += e[t];
            }
            sc.ev.add(e, hd.vt + g.j0, N, g.len);
            off += g.len;
          }
        }
        const T denom = masked ? W + static_cast<T>(kMaskEpsilon) * Z : W;
        sc.ev.finish(sc.acc.data());
        for (int64_t d = 0; d < Dh; ++d) oi[d] = sc.acc[d] / denom;
        lse[bh * Nq + i] = m + std::log(denom);
        if (dense_probs) {
          T* row = dense_probs + (bh * Nq + i) * N;  // zeroed by the caller
          off = 0;
          for (const Segment& g : segs) {
            for (int64_t t = 0; t < g.len; ++t) row[g.j0 + t] = sc.e[off + t] / denom;
            off += g.len;
          }
        }
      }
    }
  }
}

namespace {

// Queries per block in the backward: each block's contributions to dk, dv and the query table's
// gradient are summed in one pass per key (add_query_block), so those rows are read and written
// once per block instead of once per query.
constexpr int kQueryBlock = 4;

// rows[d][t] += sum_q w[q][d] src[q][t] for d < Dh, t < len (rows d apart by row_stride; w is
// [QN, Dh]): the QN queries' contributions to one run of dk, dv or query-table-gradient entries.
template <typename T, int QN>
void add_query_block_fixed(T* rows, int64_t row_stride, int64_t Dh, const T* const* src, const T* w, int64_t len) {
  const T* s[QN];
  for (int q = 0; q < QN; ++q) s[q] = src[q];
  for (int64_t d = 0; d < Dh; ++d) {
    T wd[QN];
    for (int q = 0; q < QN; ++q) wd[q] = w[q * Dh + d];
    T* out = rows + d * row_stride;
    for_each_vector<T>(len, [&](const auto& lanes, int64_t t) {
      auto a = lanes.load(out + t);
      for (int q = 0; q < QN; ++q) a += wd[q] * lanes.load(s[q] + t);
      lanes.store(out + t, a);
    });
  }
}

template <typename T>
void add_query_block(int qn, T* rows, int64_t row_stride, int64_t Dh, const T* const* src, const T* w, int64_t len) {
  static_assert(kQueryBlock == 4, "add_query_block dispatches 1 to 4 queries");
  switch (qn) {
    case 1: add_query_block_fixed<T, 1>(rows, row_stride, Dh, src, w, len); break;
    case 2: add_query_block_fixed<T, 2>(rows, row_stride, Dh, src, w, len); break;
    case 3: add_query_block_fixed<T, 3>(rows, row_stride, Dh, src, w, len); break;
    default: add_query_block_fixed<T, 4>(rows, row_stride, Dh, src, w, len); break;
  }
}

// A run [begin, end) of one query's key (or relative) entries inside the union of a block's
// runs: zero the rest of the union in that query's buffer, so add_query_block may read all of it.
template <typename T>
void zero_outside(T* buffer, int64_t union_begin, int64_t union_end, int64_t begin, int64_t end) {
  for (int64_t t = union_begin; t < begin; ++t) buffer[t] = T(0);
  for (int64_t t = end; t < union_end; ++t) buffer[t] = T(0);
}

}  // namespace

// The backward visits the queries in blocks of up to kQueryBlock consecutive tokens of one line
// of the grid (the same leading coordinates), which therefore see the same grid rows of keys:
// their k-th segments cover the same row, shifted along the last axis. With column tables the
// blocks are consecutive tokens of one column instead (the same table; their one run each is
// shifted by a row). Per query (phase A) it
// recomputes the logits and computes the row's own gradients (dq, the per-entry tables), and
// leaves its per-key terms in block buffers: e m (for dv), d content (for dk) and d positional
// (for the query table), indexed by key / relative entry. Per block (phase B) the union of the
// queries' k-th segments is added into dk, dv and the query table's gradient in one pass.
template <typename T>
void backward(const Problem& P, const Tables<T>& tables, const T* q, const T* k, const T* v, const T* out,
              const T* lse, const T* dout, const Grads<T>& grads) {
  const int64_t BH = P.B * P.H, N = P.N, Nq = P.Nq, Dh = P.Dh, R = P.R, H = P.H;
  const Prepared<T> prep(P, tables, k, v);
  const QuerySegments segments(P.geometry, Nq);
  const bool positional = tables.query_table_t || tables.bias;
  const bool masked = tables.prob_mask != nullptr;
  const T eps = masked ? static_cast<T>(kMaskEpsilon) : T(0);
  const int64_t row_keys = max_row_keys(P.geometry);
  // Tokens per line of the grid: a block never crosses one (no grid: every query sees all keys).
  const int64_t line = P.geometry.structure.empty() ? std::max<int64_t>(Nq, 1) : P.geometry.query_structure.back();
  // The order of the queries and the group (grid line, or column with column tables) a block
  // stays in.
  const int64_t C = P.table_columns, HT = H * C;  // HT: heads of the relative tables
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(Nq));
  for (int64_t x = 0; x < C; ++x)
    for (int64_t i = x; i < Nq; i += C) order.push_back(i);
  auto group_of = [&](int64_t i) { return C > 1 ? i % C : i / line; };
  const DType dt = dtype_of<T>();
  Tensor dkt = Tensor::zeros({BH, Dh, N}, dt), dvt = Tensor::zeros({BH, Dh, N}, dt);
  T* dktp = dkt.data<T>();
  T* dvtp = dvt.data<T>();
  // Table gradients: one zeroed copy per thread, summed at the end.
  const int threads = std::max(1, thread_count());
  struct TableGrad {
    T* target;
    int64_t size;
    Tensor per_thread;  // [threads, size]
  };
  std::vector<TableGrad> table_grads;
  auto table_grad = [&](T* target, int64_t size) -> T* {
    if (!target) return nullptr;
    table_grads.push_back({target, size, Tensor::zeros({threads, size}, dt)});
    return table_grads.back().per_thread.template data<T>();
  };
  T* g_key_bias = table_grad(grads.key_bias, H * Dh);
  T* g_table_t = table_grad(grads.query_table_t, HT * Dh * R);
  T* g_bias = table_grad(grads.bias, HT * R);
  T* g_mod = table_grad(grads.modulation, HT * R);
  T* g_modpos = table_grad(grads.positional_modulation, HT * R);
  T* g_mask = table_grad(grads.prob_mask, HT * R);

#pragma omp parallel if (BH > 1 && threads > 1)
  {
    const int tid = thread_id();
    constexpr int kQ = kQueryBlock;
    Scratch<T> sc(row_keys, Dh);
    // Per query: dq from the positional terms, and sum_j d content_j k_j (dq's content part / scale,
    // and the key bias's gradient).
    std::vector<T> ds(static_cast<size_t>(row_keys)), dq_row(static_cast<size_t>(Dh)), dck(static_cast<size_t>(Dh));
    RowDotSums<T> dq_table(Dh), dq_content(Dh);
    // run_backward's destination for the table gradients nobody needs: 4 rows of R entries.
    std::vector<T> junk(static_cast<size_t>(4 * R));
    // Block state, per slot (an active query of the block): its segments, its d content / d k_j
    // (ka), dout, q and the three per-key buffers of phase A.
    std::span<const Segment> segs[kQ];
    int64_t slot_query[kQ];
    std::vector<T> ka(static_cast<size_t>(kQ * Dh)), wv(static_cast<size_t>(kQ * Dh)),
        wt(static_cast<size_t>(kQ * Dh));
    std::vector<T> block_pm(static_cast<size_t>(kQ * N)), block_dc(static_cast<size_t>(kQ * N));
    std::vector<T> block_dp(grads.query_table_t ? static_cast<size_t>(kQ * R) : 0);
    // Per segment index: the union of the block's runs, keys [j0, j1) and relative entries [r0, r1).
    struct BlockRun {
      int64_t j0, j1, r0, r1;
    };
    std::vector<BlockRun> block_runs;
    auto mine = [&](T* base, int64_t size) { return base ? base + tid * size : nullptr; };
    T* my_key_bias = mine(g_key_bias, H * Dh);
    T* my_table_t = mine(g_table_t, HT * Dh * R);
    T* my_bias = mine(g_bias, HT * R);
    T* my_mod = mine(g_mod, HT * R);
    T* my_modpos = mine(g_modpos, HT * R);
    T* my_mask = mine(g_mask, HT * R);
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < BH; ++bh) {
      const int64_t h = bh % H;
      Head<T> hd;
      T* dkth = dktp + bh * Dh * N;
      T* dvth = dvtp + bh * Dh * N;
      T* hb_key_bias = my_key_bias ? my_key_bias + h * Dh : nullptr;
      T *hb_table_t, *hb_bias, *hb_mod, *hb_modpos, *hb_mask;
      // The head and this thread's table gradients of query column x (x = 0 without column tables).
      auto select_column = [&](int64_t x) {
        const int64_t th = h * C + x;
        hd = prep.head(P, tables, q, bh, x);
        hb_table_t = my_table_t ? my_table_t + th * Dh * R : nullptr;
        hb_bias = my_bias ? my_bias + th * R : nullptr;
        hb_mod = my_mod ? my_mod + th * R : nullptr;
        hb_modpos = my_modpos ? my_modpos + th * R : nullptr;
        hb_mask = my_mask ? my_mask + th * R : nullptr;
      };
      select_column(0);
      // run_backward (the per-key terms in one pass) takes heads of width 8 or 16 with a
      // positional term.
      const bool one_pass = positional && (Dh == 8 || Dh == 16);
      const bool modulated = my_mod || my_modpos || my_mask;

      // Phase A for the query of slot `slot` (the block's unions already in block_runs).
      auto query_terms = [&](int slot) {
        const int64_t i = slot_query[slot];
        const T* qi = hd.q + i * Dh;
        const T* doi = dout + (bh * Nq + i) * Dh;
        const T* oi = out + (bh * Nq + i) * Dh;
        const T row_lse = lse[bh * Nq + i];
        T* ka_q = ka.data() + slot * Dh;
        T* pm_q = block_pm.data() + slot * N;
        T* dc_q = block_dc.data() + slot * N;
        T* dp_q = hb_table_t ? block_dp.data() + slot * R : nullptr;
        T D = 0;
        for (int64_t d = 0; d < Dh; ++d) D += doi[d] * oi[d];
        for (int64_t d = 0; d < Dh; ++d) {
          sc.qs[d] = static_cast<T>(P.scale) * qi[d];
          ka_q[d] = sc.qs[d] + (hd.key_bias ? hd.key_bias[d] : T(0));  // d content / d k_j
          wv[slot * Dh + d] = doi[d];
          wt[slot * Dh + d] = qi[d];
        }
        for (size_t n = 0; n < segs[slot].size(); ++n) {
          const Segment& g = segs[slot][n];
          const int64_t len = g.len;
          if (one_pass) {
            auto table_row = [&](T* row, int which) { return (row ? row : junk.data() + which * R) + g.r0; };
            const RunTerms<T> terms{pm_q + g.j0,           dc_q + g.j0,           dp_q ? dp_q + g.r0 : ds.data(),
                                    table_row(hb_bias, 0), table_row(hb_mod, 1),  table_row(hb_modpos, 2),
                                    table_row(hb_mask, 3)};
            segment_logits(hd, P, qi, sc.qs.data(), g, sc.s.data(), sc.c.data(), sc.p.data(), positional);
            run_backward(Dh, modulated, hd, P, g, sc.s.data(), sc.c.data(), sc.p.data(), doi, row_lse, D, eps,
                         terms);
            if (hd.table_t)
              RowDotSums<T>::add_both(dq_table, terms.dp, hd.table_t + g.r0, R, dq_content, terms.dc, hd.kt + g.j0, N,
                                      len);
            else
              dq_content.add(terms.dc, hd.kt + g.j0, N, len);
            if (dp_q) zero_outside(dp_q, block_runs[n].r0, block_runs[n].r1, g.r0, g.r0 + len);
            zero_outside(pm_q, block_runs[n].j0, block_runs[n].j1, g.j0, g.j0 + len);
            zero_outside(dc_q, block_runs[n].j0, block_runs[n].j1, g.j0, g.j0 + len);
            continue;
          }
          T* __restrict s = sc.s.data();
          T* __restrict c = sc.c.data();
          T* __restrict p = sc.p.data();
          T* __restrict e = sc.e.data();
          T* __restrict dsr = ds.data();
          segment_logits(hd, P, qi, sc.qs.data(), g, s, c, p, positional);
          // e = exp(s - lse) = the unmasked probability times Z / denominator; dOv = dout_i . v_j
#pragma omp simd
          for (int64_t t = 0; t < len; ++t) e[t] = exp_row(s[t] - row_lse);
          row_combination(Dh, doi, hd.vt + g.j0, N, len, dsr);  // dOv for now
          const T* __restrict mk = hd.mask + g.r0;
          if (hb_mask) {
            T* __restrict gm = hb_mask + g.r0;
#pragma omp simd
            for (int64_t t = 0; t < len; ++t) gm[t] += e[t] * (dsr[t] - D);
          }
          // dv_j += e M dout_i (phase B, from pm); ds = e (M (dOv - D) - eps D)
          T* __restrict pm = pm_q + g.j0;
#pragma omp simd
          for (int64_t t = 0; t < len; ++t) {
            pm[t] = e[t] * mk[t];
            dsr[t] = e[t] * (mk[t] * (dsr[t] - D) - eps * D);
          }
          // s = mod (c + modpos p): d mod, then d content (block_dc) and d positional
          const T* __restrict mod = hd.mod + g.r0;
          const T* __restrict mp = hd.modpos + g.r0;
          if (hb_mod) {
            T* __restrict gm = hb_mod + g.r0;
            if (positional) {
#pragma omp simd
              for (int64_t t = 0; t < len; ++t) gm[t] += dsr[t] * (c[t] + mp[t] * p[t]);
            } else {
#pragma omp simd
              for (int64_t t = 0; t < len; ++t) gm[t] += dsr[t] * c[t];
            }
          }
          T* __restrict dc = dc_q + g.j0;
#pragma omp simd
          for (int64_t t = 0; t < len; ++t) dc[t] = dsr[t] * mod[t];
          if (positional) {
            if (hb_modpos) {
              T* __restrict gm = hb_modpos + g.r0;
#pragma omp simd
              for (int64_t t = 0; t < len; ++t) gm[t] += dc[t] * p[t];
            }
            T* __restrict dp = dp_q ? dp_q + g.r0 : dsr;  // d positional
#pragma omp simd
            for (int64_t t = 0; t < len; ++t) dp[t] = dc[t] * mp[t];
            if (hb_bias) {
              T* __restrict gb = hb_bias + g.r0;
#pragma omp simd
              for (int64_t t = 0; t < len; ++t) gb[t] += dp[t];
            }
            if (hd.table_t)  // dq += sum_j dp T[r] (the table's own gradient: phase B, from dp)
              dq_table.add(dp, hd.table_t + g.r0, R, len);
            if (dp_q) zero_outside(dp_q, block_runs[n].r0, block_runs[n].r1, g.r0, g.r0 + len);
          }
          // content = scale q.k + a.k: dq += scale dc k, da += dc k (dk += dc ka: phase B)
          dq_content.add(dc, hd.kt + g.j0, N, len);
          zero_outside(pm_q, block_runs[n].j0, block_runs[n].j1, g.j0, g.j0 + len);
          zero_outside(dc_q, block_runs[n].j0, block_runs[n].j1, g.j0, g.j0 + len);
        }
        T* dqi = grads.dq + (bh * Nq + i) * Dh;
        dq_table.finish(dq_row.data());
        dq_content.finish(dck.data());
        for (int64_t d = 0; d < Dh; ++d) {
          dqi[d] = dq_row[d] + static_cast<T>(P.scale) * dck[d];
          if (hb_key_bias) hb_key_bias[d] += dck[d];
        }
      };

      // Phases A and B for slots [s0, s0 + qn) (their segment lists have the same length).
      auto run_block = [&](int s0, int qn) {
        const size_t count = segs[s0].size();
        block_runs.resize(count);
        for (size_t n = 0; n < count; ++n) {
          int64_t j_lo = segs[s0][n].j0, j_hi = j_lo + segs[s0][n].len;
          int64_t r_lo = segs[s0][n].r0, r_hi = r_lo + segs[s0][n].len;
          for (int slot = s0 + 1; slot < s0 + qn; ++slot) {
            const Segment& g = segs[slot][n];
            j_lo = std::min(j_lo, g.j0);
            j_hi = std::max(j_hi, g.j0 + g.len);
            r_lo = std::min(r_lo, g.r0);
            r_hi = std::max(r_hi, g.r0 + g.len);
          }
          block_runs[n] = {j_lo, j_hi, r_lo, r_hi};
        }
        for (int slot = s0; slot < s0 + qn; ++slot) query_terms(slot);
        const T* src[kQ];
        for (size_t n = 0; n < count; ++n) {
          const int64_t u0 = block_runs[n].j0, len = block_runs[n].j1 - u0;
          for (int x = 0; x < qn; ++x) src[x] = block_dc.data() + (s0 + x) * N + u0;
          add_query_block(qn, dkth + u0, N, Dh, src, ka.data() + s0 * Dh, len);
          for (int x = 0; x < qn; ++x) src[x] = block_pm.data() + (s0 + x) * N + u0;
          add_query_block(qn, dvth + u0, N, Dh, src, wv.data() + s0 * Dh, len);
          if (hb_table_t && positional) {
            const int64_t v0 = block_runs[n].r0;
            for (int x = 0; x < qn; ++x) src[x] = block_dp.data() + (s0 + x) * R + v0;
            add_query_block(qn, hb_table_t + v0, R, Dh, src, wt.data() + s0 * Dh, block_runs[n].r1 - v0);
          }
        }
      };

      // Blocks: up to kQ queries of one group in `order` with equal numbers of segments
      // (run_block pairs them by index; queries of one grid line always have equal numbers).
      // With column tables only queries of one run each share a block: the runs of a column's
      // queries are a row apart, so the unions of several runs per query could overlap.
      for (size_t o = 0; o < order.size();) {
        const int64_t group = group_of(order[o]);
        int qn = 0;
        while (o < order.size() && qn < kQ && group_of(order[o]) == group) {
          const int64_t i = order[o];
          // No key: no gradient.
          const bool active = lse[bh * Nq + i] != std::numeric_limits<T>::infinity() && segments.keys(i) > 0;
          const bool joins = qn == 0 || (segments.of(i).size() == segs[0].size() && (C == 1 || segs[0].size() == 1));
          if (active && !joins) break;  // starts the next block
          ++o;
          T* dqi = grads.dq + (bh * Nq + i) * Dh;
          for (int64_t d = 0; d < Dh; ++d) dqi[d] = T(0);
          if (!active) continue;
          segs[qn] = segments.of(i);
          slot_query[qn++] = i;
        }
        if (qn == 0) continue;
        if (C > 1) select_column(group);
        run_block(0, qn);
      }
      // dk, dv back to [N, Dh]
      T* dkh = grads.dk + bh * N * Dh;
      T* dvh = grads.dv + bh * N * Dh;
      for (int64_t j = 0; j < N; ++j)
        for (int64_t d = 0; d < Dh; ++d) {
          dkh[j * Dh + d] = dkth[d * N + j];
          dvh[j * Dh + d] = dvth[d * N + j];
        }
    }
  }
  for (const TableGrad& tg : table_grads) {
    const T* src = tg.per_thread.template data<T>();
    cpu::parallel_for(tg.size, threads, [&](int64_t x) {
      T total = 0;
      for (int t = 0; t < threads; ++t) total += src[t * tg.size + x];
      tg.target[x] = total;
    });
  }
}

}  // namespace posgrad::fused_detail::POSGRAD_FUSED_VARIANT
