// The fused attention kernels' code (see fused_kernels.h for the formula), in vectors of the
// target's widest width, included by fused_kernels.cpp (which adds column tables around it).
//
// The algorithm, per (batch, head):
//   forward   for each query row i: the logits of its runs of keys into a row buffer
//             (segment_logits), m = their max, then e = exp(s - m) and sum_j e v_j in one pass
//             (RowDotSums::add_exp; with a mask, e M and both sums);
//             out_i = that sum / denominator, and only lse_i = m + log(denominator) is kept.
//   backward  never stores probabilities: it recomputes each row's logits from q, k and the
//             tables and its probabilities e = exp(s - lse) (FlashAttention-2 style). Queries go
//             in blocks of up to kQueryBlock tokens of one grid line, whose runs cover the same
//             keys shifted along the line, in three named phases:
//     A  row_gradients, per query: logits, probabilities, ds = e (M (dout_i . v_j - D_i) - eps D_i)
//        with D_i = dout_i . out_i, the per-entry table gradients and dq_i; it leaves e M,
//        d content and d positional per key in the block's buffers;
//     B  add_block_to_keys, per block: dk, dv and the query table's gradient from those buffers,
//        one pass over the union of the block's runs (each row read and written once a block);
//     C  sum_into_targets, per call: the per-thread table gradients summed.
// With a mask per query row (row_prob_mask), each query's runs are first cut to its row's support
// (row_runs), in the forward and in the backward alike, and the mask is read at the run's window
// columns (run_mask); its gradient rows are written in place (one (batch, head) per thread).
// Every loop over keys is written once, in vectors of keys (Lanes), for any head width Dh; the
// thesis's Dh = 8 is compiled as a constant (unrolled d loops, per-d values in registers), the
// other widths run the same code with Dh read at run time, and the kinds of table a call may have
// are compiled in a few sets, so that the loops leave out absent ones (with_loop_constants).
// Deliberately not here: column tables, autograd, argument checks.
// Shapes: letters of shape_legend.h.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#if (defined(__AVX512F__) && defined(__AVX512VL__)) || defined(__AVX2__)
#include <immintrin.h>  // FirstLanes' masked loads and stores
#endif

#include "attention/fused/fused_kernels.h"
#include "tensor/cpu/parallel.h"
#include "tensor/tensor.h"

// The lanes of the vector code: the widest vectors the target has (one copy for every run
// length: docs/design.md, "Tried and dropped").
#if defined(__AVX512F__)
#define POSGRAD_FUSED_VECTOR_BYTES 64
#elif defined(__AVX__)
#define POSGRAD_FUSED_VECTOR_BYTES 32
#else
#define POSGRAD_FUSED_VECTOR_BYTES 16
#endif

namespace posgrad::fused_detail::row_kernels {

namespace {

using namespace fused_formula;  // the kinds of table (TableIndex), the pair's formula

// exp for the row softmax (Lanes<T>::exp). float: a branch-free Cody-Waite reduction and a
// degree-6 polynomial (relative error about 2e-7, inside float32's own rounding of the inputs) in
// vector arithmetic; -inf and anything below -87 give exactly 0. double: std::exp (the float64
// path is the exact one, for tests and gradcheck).
// The steps: x (clamped to [-87, 88]) = n ln 2 + r with n an integer and |r| <= ln 2 / 2, and e^r
// by its polynomial.
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

// Reductions over a run of keys keep one partial result per vector lane and combine the lanes at
// the end. A single running scalar would chain every step on the one before: GCC 12 does not
// vectorise a float max reduction at all without -ffast-math, and a running sum waits on the FMA
// latency each step. The lanes are GCC/Clang vector types of POSGRAD_FUSED_VECTOR_BYTES, so the
// partial results stay in registers.
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
  // exp lane by lane: float in vector arithmetic (exp_reduce, exp_polynomial), double through
  // std::exp.
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
// targets AVX-512VL, AVX2's (vmaskmov, a blend for the fill) where it targets AVX2, element loops
// elsewhere (GCC makes those a call to memcpy per load, about 3 times slower on 2-D boxes at
// Dh 8: docs/benchmarks.md). The vector-step code calls the same names on a Lanes<T> (whole
// vectors, static) or on a FirstLanes<T> (these).
template <typename T>
struct FirstLanes : Lanes<T> {
  using Vec = typename Lanes<T>::Vec;
  using Lanes<T>::kCount;
  int n;  // 0 < n < kCount
#if defined(__AVX2__) && !(defined(__AVX512F__) && defined(__AVX512VL__))
  static constexpr bool kAvx2Moves = sizeof(Vec) == 32;
  __m256i mask;  // lane l: all ones for l < n (its element's width)
  explicit FirstLanes(int count) : n(count) {
    if constexpr (std::is_same_v<T, float>)
      mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    else
      mask = _mm256_cmpgt_epi64(_mm256_set1_epi64x(count), _mm256_setr_epi64x(0, 1, 2, 3));
  }
#else
  static constexpr bool kAvx2Moves = false;
  explicit FirstLanes(int count) : n(count) {}
#endif

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
#elif defined(__AVX2__)
    if constexpr (kAvx2Moves && std::is_same_v<T, float>)
      return (Vec)_mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, mask), _mm256_castsi256_ps(mask));
    else if constexpr (kAvx2Moves && std::is_same_v<T, double>)
      return (Vec)_mm256_blendv_pd(_mm256_set1_pd(fill), _mm256_maskload_pd(p, mask), _mm256_castsi256_pd(mask));
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
#elif defined(__AVX2__)
    if constexpr (kAvx2Moves && std::is_same_v<T, float>)
      return _mm256_maskstore_ps(p, mask, (__m256)x);
    else if constexpr (kAvx2Moves && std::is_same_v<T, double>)
      return _mm256_maskstore_pd(p, mask, (__m256d)x);
#endif
    for (int l = 0; l < n; ++l) p[l] = x[l];
  }
};

// Runs step(lanes, t) over t = 0, kCount, 2 kCount, ... < len: whole vectors (Lanes<T>), then the
// last len % kCount keys as one FirstLanes<T> step. Always inlined: called as a function, the
// step's captures are memory its stores might change, reloaded at every step (1.8 times the
// instructions in the logits' loop: docs/design.md).
template <typename T, class Step>
[[gnu::always_inline]] inline void for_each_vector(int64_t len, const Step& step) {
  constexpr int W = Lanes<T>::kCount;
  int64_t t = 0;
  for (; t + W <= len; t += W) step(Lanes<T>{}, t);
  if (t < len) {
    step(FirstLanes<T>(static_cast<int>(len - t)), t);
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

// What the key loops know of a call at compile time: the head width Dh, a constant for the widths
// with_loop_constants instantiates (kFixed > 0: the loops over d unroll and their per-d values
// stay in registers), else the call's width read at run time (kFixed = 0); and the kinds of table
// the call may have (bit `kind` of kKinds): a loop reads an absent kind as the formula's `absent`
// value, with no load, and adds to no gradient of it. The loops are the same.
template <int kFixedDh, unsigned kKinds>
struct LoopConstants {
  static constexpr int kFixed = kFixedDh;
  int64_t runtime = kFixedDh;
  constexpr int64_t operator()() const {
    if constexpr (kFixed > 0) return kFixed;
    else return runtime;
  }
  static constexpr bool may_have(int kind) { return (kKinds >> kind) & 1u; }
};

// The sets of kinds compiled, each call taking the first that holds its tables: none of the
// kinds that multiply the logits or mask the probabilities (every scheme without a span: the
// thesis's 1-D arms among them), those with a modulation (the Gaussian span: the thesis's 2-D
// arm), those with a mask (the adaptive and dynamic spans: charlm), and every kind.
constexpr unsigned kEveryKind = (1u << kTableCount) - 1;
constexpr unsigned kMaskKinds = 1u << kProbMask | 1u << kRowProbMask;
constexpr unsigned kAdditiveKinds = kEveryKind & ~(1u << kModulation | 1u << kPositionalModulation | kMaskKinds);
constexpr unsigned kKindSets[] = {kAdditiveKinds, kAdditiveKinds | 1u << kModulation, kAdditiveKinds | kMaskKinds,
                                  kEveryKind};

// Calls fn(constants) with Dh as a constant for the thesis's heads (Dh = 8), else as a run-time
// value, and with the first set of kinds that holds the call's tables (float32; float64, the exact
// path for tests and gradcheck, takes every kind, which keeps the build shorter). The constant
// Dh measured faster (the thesis step 14% less CPU time in 1-D, 5% in 2-D: docs/design.md,
// "Tried and dropped"), and so did the smaller sets (docs/design.md, "Absent tables left out").
template <typename T, class Fn>
void with_loop_constants(int64_t Dh, const Tables<T>& tables, Fn&& fn) {
  unsigned present = 0;
  for (int kind = 0; kind < kTableCount; ++kind)
    if (tables.of[kind]) present |= 1u << kind;
  bool done = false;
  auto try_set = [&](auto set) {
    constexpr unsigned kKinds = kKindSets[decltype(set)::value];
    if constexpr (std::is_same_v<T, float> || kKinds == kEveryKind) {  // float64: every kind
      if (done || (present & ~kKinds) != 0) return;
      done = true;
      if (Dh == 8) return fn(LoopConstants<8, kKinds>{});
      fn(LoopConstants<0, kKinds>{Dh});
    }
  };
  [&]<size_t... kSet>(std::index_sequence<kSet...>) {
    (try_set(std::integral_constant<size_t, kSet>{}), ...);
  }(std::make_index_sequence<std::size(kKindSets)>{});
}

// Dh values that every step of a key loop reads (q_i, scale q_i, dout_i): copied into a local
// array when the width is a constant (registers), read from the row otherwise.
template <typename T, class W>
class DimValues {
 public:
  explicit DimValues(const T* row) : row_(row) {
    if constexpr (W::kFixed > 0)
      for (int d = 0; d < W::kFixed; ++d) local_[d] = row[d];
  }
  T operator[](int64_t d) const {
    if constexpr (W::kFixed > 0) return local_[d];
    else return row_[d];
  }

 private:
  T local_[W::kFixed > 0 ? W::kFixed : 1];
  const T* row_;
};

// Dh per-lane partial sums that a key loop adds to (RowDotSums): for the loop, a local copy when
// the width is a constant (registers; store() writes it back), the stored sums otherwise.
template <typename V, class W>
class DimAccumulators {
 public:
  DimAccumulators(W /*dh*/, V* stored) : stored_(stored) {
    if constexpr (W::kFixed > 0)
      for (int d = 0; d < W::kFixed; ++d) local_[d] = stored[d];
  }
  V& operator[](int64_t d) {
    if constexpr (W::kFixed > 0) return local_[d];
    else return stored_[d];
  }
  void store() {
    if constexpr (W::kFixed > 0)
      for (int d = 0; d < W::kFixed; ++d) stored_[d] = local_[d];
  }

 private:
  V* stored_;
  V local_[W::kFixed > 0 ? W::kFixed : 1];
};

// Dh dot products summed over the runs of one query: sum over runs of sum_t w[t] rows[d stride + t]
// for d < Dh (the forward's e . v, dq from k and from the query table). One pass over each run
// computes all Dh sums; each keeps per-lane partial sums across the query's runs, and the lanes
// are combined once per query (finish), not once per run: a 2-D grid row is only S keys long.
template <typename T>
class RowDotSums {
 public:
  explicit RowDotSums(int64_t Dh) : part_(static_cast<size_t>(Dh)) { clear(); }
  void clear() {
    std::fill(part_.begin(), part_.end(), L::splat(T(0)));
    weight_sum_ = masked_sum_ = L::splat(T(0));
  }
  template <class W>
  void add(W dh, const T* w, const T* rows, int64_t stride, int64_t len) {
    DimAccumulators<Vec, W> part(dh, part_.data());
    for_each_vector<T>(len, [&](const auto& lanes, int64_t t) {
      const Vec wt = lanes.load(w + t);  // 0 past the run
      for (int64_t d = 0; d < dh(); ++d) part[d] += wt * lanes.load(rows + d * stride + t);
    });
    part.store();
  }
  // add() with the weights w[t] = exp(s[t] - m), times mask[t] when kMasked, computed on the way
  // (the forward's e . v without a pass to store e and one to read it back). Their sums:
  // weight_sum() without the mask, masked_sum() with it.
  template <bool kMasked, class W>
  void add_exp(W dh, const T* s, T m, const T* mask, const T* rows, int64_t stride, int64_t len) {
    DimAccumulators<Vec, W> part(dh, part_.data());
    Vec z = weight_sum_, zm = masked_sum_;
    for_each_vector<T>(len, [&](const auto& lanes, int64_t t) {
      // -inf past the run: its weights are 0 there.
      Vec wt = L::exp(lanes.load(s + t, -std::numeric_limits<T>::infinity()) - m);
      z += wt;
      if constexpr (kMasked) zm += (wt *= lanes.load(mask + t));
      for (int64_t d = 0; d < dh(); ++d) part[d] += wt * lanes.load(rows + d * stride + t);
    });
    part.store();
    weight_sum_ = z, masked_sum_ = zm;
  }
  // The sums of add_exp's weights since the last finish, without and with the mask.
  T weight_sum() const { return lane_sum(weight_sum_); }
  T masked_sum() const { return lane_sum(masked_sum_); }
  // The sums: out[d] = sum for d < Dh (and the state cleared for the next query).
  void finish(T* out) {
    for (size_t d = 0; d < part_.size(); ++d) out[d] = lane_sum(part_[d]);
    clear();
  }

 private:
  using L = Lanes<T>;
  using Vec = typename L::Vec;
  static T lane_sum(const Vec& x) {
    T a = 0;
    for (int l = 0; l < L::kCount; ++l) a += x[l];
    return a;
  }
  std::vector<Vec> part_;  // [Dh] per-lane partial sums
  Vec weight_sum_, masked_sum_;
};

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

// Everything one (batch, head) reads: k and v transposed to [Dh, N] (rows kv_stride apart), the
// key-bias dots, the tables of head h (absent ones point at constant ones/zeros, so the loops need
// no branches).
template <typename T>
struct Head {
  const T* q;       // [Nq, Dh]
  const T* kt;      // [Dh, N], rows kv_stride apart
  const T* vt;      // [Dh, N], rows kv_stride apart
  int64_t kv_stride;
  const T* akey;    // [N] (a_h . k_j) or zeros
  // This head's rows of each kind of table (kernel_table_layout: [Dh], [R] or [Dh, R]); an absent
  // table is ones when it multiplies or masks, zeros when it is an [H, R] table that adds, else
  // null (the vector tables: their dots are skipped).
  std::array<const T*, kTableKindCount> table;
  // row_prob_mask: this (batch, head)'s rows [Nq, W], or null (not in `table`: it is per row).
  const T* row_mask;
  const T* offset;  // [R] added to s (0 or -inf), or null
  const uint8_t* padded;  // [N] or null
};

// The distance between the rows of k and v transposed: N and one cache line. Rows exactly 4 KiB
// apart (N = 1024 floats, the thesis's grid) fall into one set of the L1 cache, and a key loop
// reading Dh rows of k and Dh of v at once evicted its own lines.
template <typename T>
int64_t kv_stride(int64_t N) {
  return N + 64 / static_cast<int64_t>(sizeof(T));
}

// Shared precomputation of forward and backward: k and v transposed (rows kv_stride apart), a . k
// per key, and the constant tables.
template <typename T>
struct Prepared {
  Tensor kt, vt, akey, ones, zeros;  // [BH, Dh, S], [BH, Dh, S] (S = kv_stride), [BH, N], [max(R, N)] twice
  Prepared(const Problem& P, const Tables<T>& tables, const T* k, const T* v) {
    const int64_t BH = P.B * P.H, N = P.N, Dh = P.Dh, S = kv_stride<T>(N);
    const DType dt = dtype_of<T>();
    kt = Tensor::empty({BH, Dh, S}, dt);
    vt = Tensor::empty({BH, Dh, S}, dt);
    akey = Tensor::zeros({BH, N}, dt);
    ones = Tensor::full({std::max<int64_t>({P.R, N, 1})}, 1.0, dt);
    zeros = Tensor::zeros({std::max<int64_t>({P.R, N, 1})}, dt);
    T* ktp = kt.data<T>();
    T* vtp = vt.data<T>();
    T* ap = akey.data<T>();
    cpu::parallel_for(BH, N * Dh, [&](int64_t bh) {
      const T* kh = k + bh * N * Dh;
      const T* vh = v + bh * N * Dh;
      T* kth = ktp + bh * Dh * S;
      T* vth = vtp + bh * Dh * S;
      for (int64_t j = 0; j < N; ++j)
        for (int64_t d = 0; d < Dh; ++d) {
          kth[d * S + j] = kh[j * Dh + d];
          vth[d * S + j] = vh[j * Dh + d];
        }
      if (tables.of[kKeyBias]) {
        const T* a = tables.of[kKeyBias] + (bh % P.H) * Dh;
        T* ah = ap + bh * N;
        for (int64_t d = 0; d < Dh; ++d)
          for (int64_t j = 0; j < N; ++j) ah[j] += a[d] * kth[d * S + j];
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
    hd.kv_stride = kv_stride<T>(N);
    hd.kt = kt.data<T>() + bh * Dh * hd.kv_stride;
    hd.vt = vt.data<T>() + bh * Dh * hd.kv_stride;
    hd.akey = akey.data<T>() + bh * N;
    for (size_t kind = 0; kind < kTableKindCount; ++kind) {
      const KernelTableLayout layout = kernel_table_layout(kTableKinds[kind].shape, Dh, R);
      const T* table = tables.of[kind];
      if (table) hd.table[kind] = table + (layout.relative ? th : h) * layout.rows * layout.entries;
      else if (kTableKinds[kind].merge != TableMerge::Add) hd.table[kind] = one;
      else hd.table[kind] = per_entry(static_cast<int>(kind)) ? zeros.data<T>() : nullptr;
    }
    hd.table[kRowProbMask] = nullptr;
    hd.row_mask = tables.of[kRowProbMask] ? tables.of[kRowProbMask] + bh * P.Nq * P.W : nullptr;
    hd.offset = tables.logit_offset ? tables.logit_offset + th * R : nullptr;
    hd.padded = P.padded ? P.padded + b * N : nullptr;
    return hd;
  }
};

// What a run of keys reads, from its first key or entry: k transposed (rows S apart), the
// key-bias dots, each table (an absent one as Head has it; the query table's rows R apart). A
// local of each key loop: a store to the loop's outputs cannot change it, so the compiler keeps it
// in registers instead of reloading it at every vector step.
template <typename T>
struct RunTables {
  const T *kt, *akey;
  std::array<const T*, kTableKindCount> table;
  int64_t S, R;  // the rows' strides: k's and v's (kv_stride), the query table's
  RunTables(const Head<T>& hd, const Problem& P, const Segment& g)
      : kt(hd.kt + g.j0), akey(hd.akey + g.j0), S(hd.kv_stride), R(P.R) {
    for (size_t kind = 0; kind < kTableKindCount; ++kind) table[kind] = hd.table[kind] ? hd.table[kind] + g.r0 : nullptr;
  }
};

// fused_formula.h's accessor for one vector step of a run (its keys t .. t + lanes), for query
// i's values qi and qs = scale q_i.
template <typename T, class W, class L>
struct RunAt {
  using V = typename Lanes<T>::Vec;
  const L& lanes;
  int64_t t;
  W dh;
  const RunTables<T>& run;
  const DimValues<T, W>& qi;
  const DimValues<T, W>& qs;
  const T* stored_content = nullptr;  // the run's content, when a first pass stored it
  V content() const {  // a . k_j is the head's precomputed akey (zeros without a key bias)
    if (stored_content) return lanes.load(stored_content + t);
    V c = lanes.load(run.akey + t);
    for (int64_t d = 0; d < dh(); ++d) c += qs[d] * lanes.load(run.kt + d * run.S + t);
    return c;
  }
  V query_dots(V p) const {
    if (const T* table = run.table[kQueryTable])
      for (int64_t d = 0; d < dh(); ++d) p += qi[d] * lanes.load(table + d * run.R + t);
    return p;
  }
  V entry(int kind, int absent) const {  // an absent [H, R] table is a row of its absent value (Head)
    if (!W::may_have(kind)) return Lanes<T>::splat(static_cast<T>(absent));
    return lanes.load(run.table[kind] + t);
  }
};

// Whether the loops of W may meet a modulation, the only kinds whose gradients read a pair's
// content and positional term.
template <class W>
constexpr bool modulated = W::may_have(kModulation) || W::may_have(kPositionalModulation);

// The logits of one run of keys (pair_logit; + the logit offset, -inf at padded keys), with the
// content c and the positional term p also stored in c and p when keep_terms and W's loops may
// meet a modulation (the backward's gradients of the modulations read them; the forward needs
// only s). qs = scale q_i. Everything the loop reads is copied into locals first (RunTables).
// With a query table the content goes first, in a pass of its own through c: both dot products
// in one loop want 2 Dh row pointers and 2 Dh query values in registers, and with AVX2's 16 the
// loop reloaded them from the stack at every step (docs/design.md).
template <typename T, class W>
void segment_logits(W dh, const Head<T>& hd, const Problem& P, const DimValues<T, W>& query,
                    const DimValues<T, W>& scaled_query, const Segment& g, T* __restrict s, T* __restrict c,
                    T* __restrict p, bool keep_terms) {
  const T* offset = hd.offset ? hd.offset + g.r0 : nullptr;
  const RunTables<T> run(hd, P, g);
  const DimValues<T, W> qi = query, qs = scaled_query;
  const bool two_passes = run.table[kQueryTable] != nullptr;
  if (two_passes)
    for_each_vector<T>(g.len, [&](const auto& lanes, int64_t t) {
      lanes.store(c + t, RunAt<T, W, std::decay_t<decltype(lanes)>>{lanes, t, dh, run, qi, qs}.content());
    });
  keep_terms = keep_terms && modulated<W>;
  for_each_vector<T>(g.len, [&](const auto& lanes, int64_t t) {
    using V = typename Lanes<T>::Vec;
    const RunAt<T, W, std::decay_t<decltype(lanes)>> at{lanes, t, dh, run, qi, qs, two_passes ? c : nullptr};
    const PairLogit<V> l = pair_logit<V>(at);
    if (keep_terms) {
      lanes.store(c + t, l.content);
      lanes.store(p + t, l.positional);
    }
    lanes.store(s + t, offset ? l.s + lanes.load(offset + t) : l.s);
  });
  if (hd.padded) {
    const uint8_t* pad = hd.padded + g.j0;
    for (int64_t t = 0; t < g.len; ++t)
      if (pad[t]) s[t] = -std::numeric_limits<T>::infinity();
  }
}

// Where phase A of the backward leaves one run's per-key terms. pm and dc are indexed by key (from
// the run's first key), dp by relative entry (from the run's r0); the table gradients are the
// head's rows from r0, null when not wanted.
template <typename T>
struct RunTerms {
  const T* mask;  // M over the run (the prob_mask entries or the row mask's columns)
  T* pm;          // e M: dv_j's weight of dout_i
  T* dc;          // d loss / d content
  T* dp;          // d loss / d positional
  std::array<T*, kTableKindCount> g;  // += the gradient of each per-entry table on the logits
  T* g_mask;      // += the mask's gradient (prob_mask's entries or the row mask's columns)
};

// The gradients of one run of keys of one query, after its logits (segment_logits: s, content c,
// positional p): the probabilities e = exp(s - lse), dout_i . v_j and every per-key term of
// RunTerms in one pass over the keys (pair_gradients). kTableGrads: some per-entry table or mask
// has a gradient to add to (without, the loop leaves those terms out altogether).
template <typename T, class W, bool kTableGrads>
void run_gradients(W dh, const Head<T>& hd, const Problem& P, const Segment& g, const T* s, const T* c, const T* p,
                   const DimValues<T, W>& query, const DimValues<T, W>& scaled_query, const DimValues<T, W>& dout,
                   T row_lse, T D, T eps, const RunTerms<T>& terms) {
  const T* vt = hd.vt + g.j0;
  const RunTables<T> run(hd, P, g);  // locals, as segment_logits
  const DimValues<T, W> qi = query, qs = scaled_query, dout_i = dout;
  const RunTerms<T> out = terms;
  for_each_vector<T>(g.len, [&](const auto& lanes, int64_t t) {
    using V = typename Lanes<T>::Vec;
    using L = std::decay_t<decltype(lanes)>;
    V dov = Lanes<T>::splat(T(0));  // dout_i . v_j
    for (int64_t d = 0; d < dh(); ++d) dov += dout_i[d] * lanes.load(vt + d * run.S + t);
    constexpr bool kMasks = W::may_have(kProbMask) || W::may_have(kRowProbMask);
    const V e = Lanes<T>::exp(lanes.load(s + t) - row_lse);
    const V mk = kMasks ? lanes.load(out.mask + t) : Lanes<T>::splat(1);
    lanes.store(out.pm + t, e * mk);
    const RunAt<T, W, L> at{lanes, t, dh, run, qi, qs};
    PairLogit<V> terms_of_s{};  // read only by a modulation's gradient
    if constexpr (modulated<W>) terms_of_s = {lanes.load(c + t), lanes.load(p + t), V{}};
    const PairGradients<V> d = pair_gradients<V>(at, terms_of_s, score_gradient(e, mk, dov, D, eps));
    lanes.store(out.dc + t, d.content);
    lanes.store(out.dp + t, d.positional);
    if constexpr (kTableGrads) {
      for_each_kind([&](auto kind) {
        if constexpr (per_entry(kind) && W::may_have(kind))
          if (T* grad = out.g[kind]) lanes.store(grad + t, lanes.load(grad + t) + d.entry[kind]);
      });
      if (kMasks && out.g_mask) lanes.store(out.g_mask + t, lanes.load(out.g_mask + t) + mask_gradient(e, dov, D));
    }
  });
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
  int64_t queries() const { return static_cast<int64_t>(keys_.size()); }

 private:
  std::vector<int64_t> start_;  // [Nq + 1]
  Tensor storage_;              // [segments, 3]: j0, r0, len
  std::vector<int64_t> keys_;   // [Nq]
};

// Query i's runs as the kernels visit them: its listed runs, or, with a row mask (row_prob_mask;
// `row` = the query's row [W]), those runs cut to the row's support (clip_to_support), kept in
// `clipped`. Returns the keys they cover.
template <typename T>
int64_t row_runs(const Problem& P, const QuerySegments& segments, int64_t i, const T* row,
                 std::vector<Segment>& clipped, std::span<const Segment>& runs) {
  runs = segments.of(i);
  if (!row) return segments.keys(i);
  const RowSupport support = row_support(row, P.W);
  const int64_t query = P.geometry.query_first[0] + i;
  clipped.clear();
  int64_t keys = 0;
  for (Segment g : runs) {
    clip_to_support(g.j0, g.r0, g.len, query, P.W, support);
    if (g.len > 0) clipped.push_back(g), keys += g.len;
  }
  runs = clipped;
  return keys;
}

// The mask values of run g of query i: the head's prob_mask at the run's entries, or the query's
// row of the row mask at the run's keys (their window columns).
template <typename T>
const T* run_mask(const Head<T>& hd, const Problem& P, int64_t i, const Segment& g) {
  if (!hd.row_mask) return hd.table[kProbMask] + g.r0;
  return hd.row_mask + i * P.W + (g.j0 - (P.geometry.query_first[0] + i) + P.W - 1);
}

template <typename T>
struct Scratch {
  std::vector<T> s, c, p, qs, acc;
  RowDotSums<T> ev;  // the forward's sum_j e_j v_j
  Scratch(int64_t keys, int64_t Dh) : s(keys), c(keys), p(keys), qs(Dh), acc(Dh), ev(Dh) {}
};

// The most keys any query of `geo` sees (the size of a row buffer).
int64_t max_row_keys(const RowGeometry& geo) {
  if (geo.structure.empty()) return geo.tokens;
  int64_t keys = 1;
  for (size_t d = 0; d < geo.structure.size(); ++d)
    keys *= std::max<int64_t>(0, std::min(geo.structure[d], geo.hi[d] - geo.lo[d] + 1));
  return std::max<int64_t>(keys, 1);
}

// forward() for the loop constants dh (with_loop_constants).
template <typename T, class W>
void forward_with_width(W dh, const Problem& P, const Tables<T>& tables, const T* q, const T* k, const T* v, T* out,
                        T* lse) {
  const int64_t BH = P.B * P.H, Nq = P.Nq, Dh = P.Dh;
  const Prepared<T> prep(P, tables, k, v);
  const bool masked = tables.of[kProbMask] != nullptr || tables.of[kRowProbMask] != nullptr;
  const int64_t row_keys = max_row_keys(P.geometry);
  constexpr int64_t kChunk = 32;  // queries per work item
  const int64_t chunks = (Nq + kChunk - 1) / kChunk, items = BH * chunks;
  const QuerySegments segments(P.geometry, Nq);
#pragma omp parallel if (items > 1 && thread_count() > 1)
  {
    Scratch<T> sc(row_keys, Dh);
    std::vector<Segment> clipped;  // a query's runs cut to its row support
#pragma omp for schedule(dynamic)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t bh = item / chunks, i_begin = (item % chunks) * kChunk, i_end = std::min(Nq, i_begin + kChunk);
      Head<T> hd = prep.head(P, tables, q, bh);
      for (int64_t i = i_begin; i < i_end; ++i) {
        if (P.table_columns > 1) hd = prep.head(P, tables, q, bh, i % P.table_columns);
        const T* qi = hd.q + i * Dh;
        T* oi = out + (bh * Nq + i) * Dh;
        for (int64_t d = 0; d < Dh; ++d) sc.qs[d] = static_cast<T>(P.scale) * qi[d];
        const DimValues<T, W> query(qi), scaled_query(sc.qs.data());
        std::span<const Segment> segs;
        const int64_t L = row_runs(P, segments, i, hd.row_mask ? hd.row_mask + i * P.W : nullptr, clipped, segs);
        int64_t off = 0;
        for (const Segment& g : segs) {
          segment_logits(dh, hd, P, query, scaled_query, g, sc.s.data() + off, sc.c.data(), sc.p.data(),
                         /*keep_terms=*/false);
          off += g.len;
        }
        const T m = row_max(sc.s.data(), L);
        if (L == 0 || m == -std::numeric_limits<T>::infinity()) {  // no key: zero attention
          for (int64_t d = 0; d < Dh; ++d) oi[d] = T(0);
          lse[bh * Nq + i] = std::numeric_limits<T>::infinity();
          continue;
        }
        // e = exp(s - m) M computed inside the e . v pass; the denominator sum e M + 1e-8 sum
        // exp(s - m) over the whole row, or sum e without a mask.
        off = 0;
        for (const Segment& g : segs) {
          const T* vt = hd.vt + g.j0;
          if (masked)
            sc.ev.template add_exp<true>(dh, sc.s.data() + off, m, run_mask(hd, P, i, g), vt, hd.kv_stride, g.len);
          else
            sc.ev.template add_exp<false>(dh, sc.s.data() + off, m, nullptr, vt, hd.kv_stride, g.len);
          off += g.len;
        }
        const T Z = sc.ev.weight_sum();
        const T denom = masked ? sc.ev.masked_sum() + static_cast<T>(kMaskEpsilon) * Z : Z;
        sc.ev.finish(sc.acc.data());
        for (int64_t d = 0; d < Dh; ++d) oi[d] = sc.acc[d] / denom;
        lse[bh * Nq + i] = m + std::log(denom);
      }
    }
  }
}

// Queries per block in the backward: each block's contributions to dk, dv and the query table's
// gradient are summed in one pass per key (add_query_block), so those rows are read and written
// once per block instead of once per query.
constexpr int kQueryBlock = 4;

// rows[d][t] += sum_q w[q][d] src[q][t] for d < Dh, t < len (rows d apart by row_stride; w is
// [QN, Dh]): the QN queries' contributions to one run of dk, dv or query-table-gradient entries.
template <typename T, int QN>
void add_query_block_fixed(T* rows, int64_t row_stride, int64_t Dh, const T* const* src, const T* w, int64_t len) {
  using Vec = typename Lanes<T>::Vec;
  // Rows d .. d + R - 1 at once: each source vector is loaded once for the R rows, whose QN x R
  // weights stay in vector registers. R = 4 where there are 32 of them (AVX-512; A/B on the Zen 4
  // machine: the B = 20 2-D thesis step 4-11% faster, 1-D unchanged), else 1.
  auto add_rows = [&](int64_t d, auto rows_at_once) {
    constexpr int64_t R = decltype(rows_at_once)::value;
    Vec wd[R][QN];
    T* out[R];
    for (int64_t e = 0; e < R; ++e) {
      for (int q = 0; q < QN; ++q) wd[e][q] = Lanes<T>::splat(w[q * Dh + d + e]);
      out[e] = rows + (d + e) * row_stride;
    }
    for_each_vector<T>(len, [&](const auto& lanes, int64_t t) {
      Vec x[QN];
      for (int q = 0; q < QN; ++q) x[q] = lanes.load(src[q] + t);
      for (int64_t e = 0; e < R; ++e) {
        auto a = lanes.load(out[e] + t);
        for (int q = 0; q < QN; ++q) a += wd[e][q] * x[q];
        lanes.store(out[e] + t, a);
      }
    });
  };
  constexpr int64_t kRowsAtOnce = POSGRAD_FUSED_VECTOR_BYTES == 64 ? 4 : 1;
  int64_t d = 0;
  for (; d + kRowsAtOnce <= Dh; d += kRowsAtOnce) add_rows(d, std::integral_constant<int64_t, kRowsAtOnce>{});
  for (; d < Dh; ++d) add_rows(d, std::integral_constant<int64_t, 1>{});
}

template <typename T>
void add_query_block(int qn, T* rows, int64_t row_stride, int64_t Dh, const T* const* src, const T* w, int64_t len) {
  [&]<int... kMinus1>(std::integer_sequence<int, kMinus1...>) {  // qn as a constant, 1 .. kQueryBlock
    ((qn == kMinus1 + 1 ? add_query_block_fixed<T, kMinus1 + 1>(rows, row_stride, Dh, src, w, len) : void()), ...);
  }(std::make_integer_sequence<int, kQueryBlock>{});
}

// A run [begin, end) of one query's key (or relative) entries inside the union of a block's
// runs: zero the rest of the union in that query's buffer, so add_query_block may read all of it.
template <typename T>
void zero_outside(T* buffer, int64_t union_begin, int64_t union_end, int64_t begin, int64_t end) {
  for (int64_t t = union_begin; t < begin; ++t) buffer[t] = T(0);
  for (int64_t t = end; t < union_end; ++t) buffer[t] = T(0);
}

// Every table gradient a backward call wants, as one zeroed copy per thread (threads add to their
// own copy without locks); phase C sums the copies into the caller's buffers. The row mask's
// gradient is the exception: its rows belong to one (batch, head) each, which one thread does, so
// every thread writes the caller's buffer (zeroed here) directly.
template <typename T>
class ThreadTableGrads {
 public:
  using Copies = std::array<T*, kTableKindCount>;  // one thread's whole tables, per kind (null: not wanted)
  ThreadTableGrads(const Problem& P, const Grads<T>& grads, int threads) : threads_(threads) {
    for (size_t kind = 0; kind < kTableKindCount; ++kind) {
      if (kTableKinds[kind].shape == TableShape::RowWindow) {  // shared: size_ 0 gives every thread the target
        if (grads.of[kind]) std::fill(grads.of[kind], grads.of[kind] + P.B * P.H * P.Nq * P.W, T(0));
        first_[kind] = grads.of[kind];
        continue;
      }
      const KernelTableLayout layout = kernel_table_layout(kTableKinds[kind].shape, P.Dh, P.R);
      const int64_t heads = layout.relative ? P.H * P.table_columns : P.H;
      size_[kind] = heads * layout.rows * layout.entries;
      if (!grads.of[kind]) continue;
      tables_.push_back({grads.of[kind], size_[kind], Tensor::zeros({threads, size_[kind]}, dtype_of<T>())});
      first_[kind] = tables_.back().per_thread.template data<T>();
    }
  }
  Copies of_thread(int tid) const {
    Copies mine{};
    for (size_t kind = 0; kind < kTableKindCount; ++kind)
      mine[kind] = first_[kind] ? first_[kind] + tid * size_[kind] : nullptr;
    return mine;
  }
  // Phase C: each wanted gradient = the sum of the threads' copies.
  void sum_into_targets() const {
    for (const Table& t : tables_) {
      const T* src = t.per_thread.template data<T>();
      cpu::parallel_for(t.size, threads_, [&](int64_t x) {
        T total = 0;
        for (int th = 0; th < threads_; ++th) total += src[th * t.size + x];
        t.target[x] = total;
      });
    }
  }

 private:
  struct Table {
    T* target;
    int64_t size;
    Tensor per_thread;  // [threads, size]
  };
  int threads_;
  std::vector<Table> tables_;
  Copies first_{};                                // thread 0's copies
  std::array<int64_t, kTableKindCount> size_{};  // entries of each kind's whole table
};

// What stays fixed during one backward call, shared by its threads.
template <typename T>
struct BackwardCall {
  const Problem& P;
  const Tables<T>& tables;
  const Prepared<T>& prep;
  const QuerySegments& segments;
  const T *q, *out, *lse, *dout;
  const Grads<T>& grads;
  T* dkt;  // [BH, Dh, N]: dk transposed, written by phase B
  T* dvt;  // [BH, Dh, N]
  // The order of the queries: by column of the tables with column tables, else as they come.
  std::vector<int64_t> order;
  int64_t line;  // tokens per grid line: a block never crosses one

  // The block group of query i: its grid line, or its table column with column tables.
  int64_t group_of(int64_t i) const {
    return P.table_columns > 1 ? i % P.table_columns : i / line;
  }
};

// One thread's share of a backward call: the heads it is given, block by block.
template <typename T, class W>
class BackwardWorker {
 public:
  BackwardWorker(W dh, const BackwardCall<T>& call, const typename ThreadTableGrads<T>::Copies& mine)
      : dh_(dh),
        call_(call),
        P_(call.P),
        mine_(mine),
        Dh_(call.P.Dh),
        sc_(max_row_keys(call.P.geometry), call.P.Dh),
        dp_scratch_(static_cast<size_t>(max_row_keys(call.P.geometry))),
        dq_table_(call.P.Dh),
        dq_content_(call.P.Dh),
        dck_(static_cast<size_t>(call.P.Dh)),
        ka_(static_cast<size_t>(kQueryBlock * call.P.Dh)),
        wv_(static_cast<size_t>(kQueryBlock * call.P.Dh)),
        wt_(static_cast<size_t>(kQueryBlock * call.P.Dh)),
        block_pm_(static_cast<size_t>(kQueryBlock * call.P.N)),
        block_dc_(static_cast<size_t>(kQueryBlock * call.P.N)),
        block_dp_(call.grads.of[kQueryTable] ? static_cast<size_t>(kQueryBlock * call.P.R) : 0) {}

  // dq of every query of batch-head bh, and dk, dv of its keys; adds to this thread's table
  // gradients.
  void head(int64_t bh) {
    bh_ = bh;
    select_column(0);
    const std::vector<int64_t>& order = call_.order;
    for (size_t o = 0; o < order.size();) {
      // A block: up to kQueryBlock queries of one group with equal numbers of runs (phase B pairs
      // them by index; the queries of one grid line always have equal numbers). With column
      // tables only queries of one run each share a block: the runs of a column's queries are a
      // row apart, so the unions of several runs per query could overlap.
      const int64_t group = call_.group_of(order[o]);
      int qn = 0;
      while (o < order.size() && qn < kQueryBlock && call_.group_of(order[o]) == group) {
        const int64_t i = order[o];
        std::span<const Segment> runs;
        const int64_t keys = row_runs(P_, call_.segments, i, hd_.row_mask ? hd_.row_mask + i * P_.W : nullptr,
                                      clipped_[qn], runs);
        const bool active = call_.lse[bh * P_.Nq + i] != std::numeric_limits<T>::infinity() &&
                            keys > 0;  // no key: no gradient
        const bool joins = qn == 0 || (runs.size() == segs_[0].size() &&
                                       (P_.table_columns == 1 || segs_[0].size() == 1));
        if (active && !joins) break;  // starts the next block
        ++o;
        T* dqi = call_.grads.dq + (bh * P_.Nq + i) * Dh_;
        for (int64_t d = 0; d < Dh_; ++d) dqi[d] = T(0);
        if (!active) continue;
        segs_[qn] = runs;
        slot_query_[qn++] = i;
      }
      if (qn == 0) continue;
      if (P_.table_columns > 1) select_column(group);
      block(qn);
    }
    // dk, dv back to [N, Dh]
    const int64_t N = P_.N;
    const T* dkth = call_.dkt + bh * Dh_ * N;
    const T* dvth = call_.dvt + bh * Dh_ * N;
    T* dkh = call_.grads.dk + bh * N * Dh_;
    T* dvh = call_.grads.dv + bh * N * Dh_;
    for (int64_t j = 0; j < N; ++j)
      for (int64_t d = 0; d < Dh_; ++d) {
        dkh[j * Dh_ + d] = dkth[d * N + j];
        dvh[j * Dh_ + d] = dvth[d * N + j];
      }
  }

 private:
  // Per segment index: the union of the block's runs, keys [j0, j1) and relative entries [r0, r1).
  struct BlockRun {
    int64_t j0, j1, r0, r1;
  };

  // The head's tables and this thread's table gradients for query column x (x = 0 without
  // column tables).
  void select_column(int64_t x) {
    const int64_t h = bh_ % P_.H, th = h * P_.table_columns + x;
    hd_ = call_.prep.head(P_, call_.tables, call_.q, bh_, x);
    for (size_t kind = 0; kind < kTableKindCount; ++kind) {
      const KernelTableLayout layout = kernel_table_layout(kTableKinds[kind].shape, Dh_, P_.R);
      g_[kind] = mine_[kind] ? mine_[kind] + (layout.relative ? th : h) * layout.rows * layout.entries : nullptr;
    }
    if (mine_[kRowProbMask]) g_[kRowProbMask] = mine_[kRowProbMask] + bh_ * P_.Nq * P_.W;  // [Nq, W]
  }

  // Phases A and B for the block's qn queries.
  void block(int qn) {
    const size_t count = segs_[0].size();
    block_runs_.resize(count);
    for (size_t n = 0; n < count; ++n) {
      BlockRun u{segs_[0][n].j0, segs_[0][n].j0 + segs_[0][n].len, segs_[0][n].r0, segs_[0][n].r0 + segs_[0][n].len};
      for (int slot = 1; slot < qn; ++slot) {
        const Segment& g = segs_[slot][n];
        u = {std::min(u.j0, g.j0), std::max(u.j1, g.j0 + g.len), std::min(u.r0, g.r0), std::max(u.r1, g.r0 + g.len)};
      }
      block_runs_[n] = u;
    }
    for (int slot = 0; slot < qn; ++slot) row_gradients(slot);
    add_block_to_keys(qn);
  }

  // Phase A for the query of `slot`: its logits and probabilities recomputed run by run, their
  // gradient, the per-entry table gradients and dq_i; e M, d content and d positional are left in
  // the block's buffers for phase B (zero inside the block's unions where the query has no key).
  // Not inlined: inside the per-head code GCC allocates the key loops' registers worse (the
  // logits' loop 59 instructions a step against 49, with 8 broadcasts no longer hoisted).
  [[gnu::noinline]] void row_gradients(int slot) {
    const int64_t i = slot_query_[slot], row = bh_ * P_.Nq + i, N = P_.N, R = P_.R;
    const T* qi = hd_.q + i * Dh_;
    const T* doi = call_.dout + row * Dh_;
    const T* oi = call_.out + row * Dh_;
    T D = 0;  // dout_i . out_i
    for (int64_t d = 0; d < Dh_; ++d) D += doi[d] * oi[d];
    T* ka = ka_.data() + slot * Dh_;
    for (int64_t d = 0; d < Dh_; ++d) {
      sc_.qs[d] = static_cast<T>(P_.scale) * qi[d];
      ka[d] = sc_.qs[d] + (hd_.table[kKeyBias] ? hd_.table[kKeyBias][d] : T(0));  // d content / d k_j
      wv_[slot * Dh_ + d] = doi[d];
      wt_[slot * Dh_ + d] = qi[d];
    }
    const DimValues<T, W> query(qi), scaled_query(sc_.qs.data()), dout_i(doi);
    T* pm = block_pm_.data() + slot * N;
    T* dc = block_dc_.data() + slot * N;
    T* dp = g_[kQueryTable] ? block_dp_.data() + slot * R : nullptr;
    const bool masked = call_.tables.of[kProbMask] || call_.tables.of[kRowProbMask];
    const T eps = masked ? static_cast<T>(kMaskEpsilon) : T(0);
    bool table_grads = g_[kRowProbMask] != nullptr;  // run_gradients' variant: some table or mask gradient wanted
    for (size_t kind = 0; kind < kTableKindCount; ++kind) table_grads = table_grads || (per_entry(kind) && g_[kind]);
    for (size_t n = 0; n < segs_[slot].size(); ++n) {
      const Segment& g = segs_[slot][n];
      RunTerms<T> terms{run_mask(hd_, P_, i, g), pm + g.j0, dc + g.j0, dp ? dp + g.r0 : dp_scratch_.data(), {}, nullptr};
      for (size_t kind = 0; kind < kTableKindCount; ++kind)
        if (per_entry(kind) && kind != kProbMask && g_[kind]) terms.g[kind] = g_[kind] + g.r0;
      // The mask's gradient: prob_mask's at the run's entries, or the query's row of the row
      // mask's at the run's window columns (as run_mask).
      if (g_[kRowProbMask])
        terms.g_mask = g_[kRowProbMask] + i * P_.W + (g.j0 - (P_.geometry.query_first[0] + i) + P_.W - 1);
      else if (g_[kProbMask])
        terms.g_mask = g_[kProbMask] + g.r0;
      segment_logits(dh_, hd_, P_, query, scaled_query, g, sc_.s.data(), sc_.c.data(), sc_.p.data(),
                     /*keep_terms=*/true);
      if (table_grads)
        run_gradients<T, W, true>(dh_, hd_, P_, g, sc_.s.data(), sc_.c.data(), sc_.p.data(), query, scaled_query,
                                  dout_i, call_.lse[row], D, eps, terms);
      else
        run_gradients<T, W, false>(dh_, hd_, P_, g, sc_.s.data(), sc_.c.data(), sc_.p.data(), query, scaled_query,
                                   dout_i, call_.lse[row], D, eps, terms);
      // dq_i = sum_j dp T[r] + scale sum_j dc k_j (and the key bias's gradient sum_j dc k_j)
      if (const T* table = hd_.table[kQueryTable])
        dq_table_.add(dh_, terms.dp, table + g.r0, R, g.len);
      dq_content_.add(dh_, terms.dc, hd_.kt + g.j0, hd_.kv_stride, g.len);
      const BlockRun& u = block_runs_[n];
      if (dp) zero_outside(dp, u.r0, u.r1, g.r0, g.r0 + g.len);
      zero_outside(pm, u.j0, u.j1, g.j0, g.j0 + g.len);
      zero_outside(dc, u.j0, u.j1, g.j0, g.j0 + g.len);
    }
    T* dqi = call_.grads.dq + row * Dh_;
    dq_table_.finish(sc_.acc.data());
    dq_content_.finish(dck_.data());  // sum_j dc k_j
    for (int64_t d = 0; d < Dh_; ++d) {
      dqi[d] = sc_.acc[d] + static_cast<T>(P_.scale) * dck_[d];
      if (g_[kKeyBias]) g_[kKeyBias][d] += dck_[d];
    }
  }

  // Phase B: dk_j += dc_j ka, dv_j += pm_j dout_i and the query table's gradient += dp_r q_i,
  // summed over the block's queries in one pass over each union of runs.
  void add_block_to_keys(int qn) {
    const int64_t N = P_.N, R = P_.R;
    T* dkth = call_.dkt + bh_ * Dh_ * N;
    T* dvth = call_.dvt + bh_ * Dh_ * N;
    const T* src[kQueryBlock];
    for (const BlockRun& u : block_runs_) {
      const int64_t len = u.j1 - u.j0;
      for (int x = 0; x < qn; ++x) src[x] = block_dc_.data() + x * N + u.j0;
      add_query_block(qn, dkth + u.j0, N, Dh_, src, ka_.data(), len);
      for (int x = 0; x < qn; ++x) src[x] = block_pm_.data() + x * N + u.j0;
      add_query_block(qn, dvth + u.j0, N, Dh_, src, wv_.data(), len);
      if (g_[kQueryTable]) {
        for (int x = 0; x < qn; ++x) src[x] = block_dp_.data() + x * R + u.r0;
        add_query_block(qn, g_[kQueryTable] + u.r0, R, Dh_, src, wt_.data(), u.r1 - u.r0);
      }
    }
  }

  W dh_;
  const BackwardCall<T>& call_;
  const Problem& P_;
  const typename ThreadTableGrads<T>::Copies mine_;  // this thread's table gradients
  const int64_t Dh_;
  Scratch<T> sc_;
  std::vector<T> dp_scratch_;        // d positional of one run when the query table's gradient is not wanted
  RowDotSums<T> dq_table_, dq_content_;  // dq_i's sums over keys: sum dp T[r], sum dc k_j
  std::vector<T> dck_;                  // [Dh] dq_content_'s result
  int64_t bh_ = 0;
  Head<T> hd_{};
  typename ThreadTableGrads<T>::Copies g_{};  // where this thread's gradients of the head's tables start
  // The block: per slot (an active query) its runs, its query, d content / d k_j (ka), dout_i
  // (wv), q_i (wt) and phase A's per-key buffers; the unions of its runs.
  std::span<const Segment> segs_[kQueryBlock];
  std::vector<Segment> clipped_[kQueryBlock];  // with a row mask: each slot's runs cut to its support
  int64_t slot_query_[kQueryBlock] = {};
  std::vector<T> ka_, wv_, wt_;
  std::vector<T> block_pm_, block_dc_, block_dp_;  // [kQueryBlock, N], [kQueryBlock, N], [kQueryBlock, R]
  std::vector<BlockRun> block_runs_;
};

// backward() for the loop constants dh (with_loop_constants).
template <typename T, class W>
void backward_with_width(W dh, const Problem& P, const Tables<T>& tables, const T* q, const T* k, const T* v,
                         const T* out, const T* lse, const T* dout, const Grads<T>& grads) {
  const int64_t BH = P.B * P.H, N = P.N, Nq = P.Nq, C = P.table_columns;
  const Prepared<T> prep(P, tables, k, v);
  const QuerySegments segments(P.geometry, Nq);
  Tensor dkt = Tensor::zeros({BH, P.Dh, N}, dtype_of<T>()), dvt = Tensor::zeros({BH, P.Dh, N}, dtype_of<T>());
  BackwardCall<T> call{P, tables, prep, segments, q, out, lse, dout, grads, dkt.data<T>(), dvt.data<T>(), {}, 0};
  call.line = P.geometry.structure.empty() ? std::max<int64_t>(Nq, 1) : P.geometry.query_structure.back();
  call.order.reserve(static_cast<size_t>(Nq));
  for (int64_t x = 0; x < C; ++x)
    for (int64_t i = x; i < Nq; i += C) call.order.push_back(i);
  const int threads = std::max(1, thread_count());
  const ThreadTableGrads<T> table_grads(P, grads, threads);
#pragma omp parallel if (BH > 1 && threads > 1)
  {
    BackwardWorker<T, W> worker(dh, call, table_grads.of_thread(thread_id()));
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < BH; ++bh) worker.head(bh);
  }
  table_grads.sum_into_targets();
}

}  // namespace

template <typename T>
void forward(const Problem& P, const Tables<T>& tables, const T* q, const T* k, const T* v, T* out, T* lse) {
  with_loop_constants(P.Dh, tables, [&](auto dh) { forward_with_width(dh, P, tables, q, k, v, out, lse); });
}

template <typename T>
void backward(const Problem& P, const Tables<T>& tables, const T* q, const T* k, const T* v, const T* out,
              const T* lse, const T* dout, const Grads<T>& grads) {
  with_loop_constants(P.Dh, tables,
                      [&](auto dh) { backward_with_width(dh, P, tables, q, k, v, out, lse, dout, grads); });
}

}  // namespace posgrad::fused_detail::row_kernels
