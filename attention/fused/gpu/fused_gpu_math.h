// The GPU fused attention's arithmetic, one thread's work at a time, written once for the GPU
// kernels (fused_gpu.cu launches one thread per part of a query row, key row or table entry)
// and for the host (fused_gpu.cpp runs every "thread" in a loop on the CPU;
// tests/attention/test_fused_gpu.cpp compares that with the reference), so that the arithmetic
// is checked in every build, with or without a GPU. The formula of a pair is fused_formula.h's,
//   out_i = sum_j e M v_j / (sum_j e M + 1e-8 sum_j e), e = exp(s - max_j s)
//           (sum_j e v_j / sum_j e without a mask M)
// over the keys inside query i's offset box; with a mask per query row instead (row_prob_mask
// [B, H, Nq, W], 1-D: M at window column c = W - 1 + j - x_i) over the keys of the row's support
// only (its first to last non-zero column). Each pass gives a thread one part of one row's work
// (its slice of the keys, queries or pairs: `parts` per row, so that short rows still fill a
// GPU), writes that part's sums to its own place in a scratch buffer, and a merge step per row
// combines them; no pass stores a probability:
//   forward           per (query row, part): the sums in one pass with a running max (online
//                     softmax); merged (each part rescaled to the row's max) into out_i and
//                     lse_i = max + log(denominator)
//   backward rows     per query row D_i = dout_i . out_i; per (query row, part) dq's share
//                     (FlashAttention-2's recomputation of p = exp(s - lse)) and the row mask's
//                     gradient at its keys; merged into dq
//   backward keys     per (key row, part): dk, dv over its slice of the queries whose box holds
//                     key j, and key j's share of the key bias's gradient; merged
//   backward entries  per ((head, relative entry), part): every table's gradient at that entry,
//                     over its slice of the (batch, query) pairs whose key lies at that offset
// Each thread writes only its own part, row or entry (the key bias's gradient is summed per
// (head, d) from per-key shares), so no pass needs atomics, and with parts = 1 every row is
// summed in one thread in key order.
// Deliberately not here: CUDA itself (fused_gpu.cu), argument checks and table layouts
// (fused_attention.cpp), column tables (a CPU layout).
// Plain C++17 with POSGRAD_HD (tensor/host_device.h) on each function: nvcc compiles it as CUDA
// C++17, g++ as C++20.
// Shapes: letters of shape_legend.h; q, out, dq [B, H, Nq, Dh], k, v, dk, dv [B, H, N, Dh],
// lse, D [B, H, Nq]; tables per head as the CPU kernels read them: key_bias [H, Dh],
// query_table [H, Dh, R], row_prob_mask [B, H, Nq, W], the others [H, R].
#pragma once

#include <cmath>
#include <cstdint>

#include "attention/fused/fused_formula.h"
#include "tensor/host_device.h"  // POSGRAD_HD

namespace posgrad::fused_gpu {

using namespace fused_formula;  // the kinds of table (TableIndex), the pair's formula

constexpr int kMaxDims = 8;

// Which keys each query sees, as plain numbers (fused_kernels.h's RowGeometry): keys on a grid of
// key_size, queries on a grid of query_size whose first coordinate is query_first in the keys'
// frame; query i sees key j when lo <= coord(j) - coord(i) <= hi in every dim. dims = 0: no grid
// (tree positions), every query sees every key and no relative table exists.
struct Geometry {
  int dims = 0;
  int64_t key_size[kMaxDims] = {}, query_size[kMaxDims] = {}, query_first[kMaxDims] = {};
  int64_t lo[kMaxDims] = {}, hi[kMaxDims] = {};
  // Relative entry of offset o: sum_d (o_d - relative_lo_d) rstride_d.
  int64_t relative_lo[kMaxDims] = {}, rstride[kMaxDims] = {};
};

// One pointer per kind, null when absent (the formula's defaults: a = 0, T = 0, c = 0, G = 1, P = 1,
// no M): a [H, Dh], T [H, Dh, R], c, G, P, M [H, R], the row mask [B, H, Nq, W] (1-D; not with M).
template <typename T>
struct Tables {
  const T* of[kTableCount] = {};
  POSGRAD_HD const T* operator[](int kind) const { return of[kind]; }
};

// The gradients of the tables, null when not wanted; otherwise overwritten where a pass owns them.
template <typename T>
struct TableGrads {
  T* of[kTableCount] = {};
  POSGRAD_HD T* operator[](int kind) const { return of[kind]; }
};

template <typename T>
struct Problem {
  int64_t B = 0, H = 0, Nq = 0, N = 0, Dh = 0, R = 0;
  int64_t W = 0;  // columns of row_prob_mask (0 without one)
  T scale = 1;
  const int64_t* padded = nullptr;  // [B, N], 1 = padded key; null = none
  Geometry geometry;
  Tables<T> tables;
};

// An odometer over the integer box lo..hi (inclusive) in `dims` dims, last dim fastest.
struct BoxWalk {
  int dims;
  int64_t lo[kMaxDims], hi[kMaxDims], at[kMaxDims];
  bool empty;
  POSGRAD_HD void bound(int d, int64_t from, int64_t to) {  // dim d's range, starting at its first
    lo[d] = from, hi[d] = to, at[d] = from;
    empty = empty || from > to;
  }
  POSGRAD_HD int64_t count() const {  // points in the box
    if (empty) return 0;
    int64_t n = 1;
    for (int d = 0; d < dims; ++d) n *= hi[d] - lo[d] + 1;
    return n;
  }
  POSGRAD_HD void seek(int64_t t) {  // to the t-th point (last dim fastest)
    for (int d = dims - 1; d >= 0; --d) {
      const int64_t extent = hi[d] - lo[d] + 1;
      at[d] = lo[d] + t % extent;
      t /= extent;
    }
  }
  POSGRAD_HD bool next() {  // false after the last point
    for (int d = dims - 1; d >= 0; --d) {
      if (at[d] < hi[d]) {
        ++at[d];
        return true;
      }
      at[d] = lo[d];
    }
    return false;
  }
};

POSGRAD_HD int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
POSGRAD_HD int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// Query i's coordinates in the keys' frame.
POSGRAD_HD void query_coords(const Geometry& g, int64_t i, int64_t* c) {
  for (int d = g.dims - 1; d >= 0; --d) {
    c[d] = i % g.query_size[d] + g.query_first[d];
    i /= g.query_size[d];
  }
}
POSGRAD_HD void key_coords(const Geometry& g, int64_t j, int64_t* c) {
  for (int d = g.dims - 1; d >= 0; --d) {
    c[d] = j % g.key_size[d];
    j /= g.key_size[d];
  }
}
POSGRAD_HD int64_t key_index(const Geometry& g, const int64_t* c) {
  int64_t j = 0;
  for (int d = 0; d < g.dims; ++d) j = j * g.key_size[d] + c[d];
  return j;
}
POSGRAD_HD int64_t query_index(const Geometry& g, const int64_t* c) {
  int64_t i = 0;
  for (int d = 0; d < g.dims; ++d) i = i * g.query_size[d] + (c[d] - g.query_first[d]);
  return i;
}
POSGRAD_HD int64_t relative_entry(const Geometry& g, const int64_t* query, const int64_t* key) {
  int64_t r = 0;
  for (int d = 0; d < g.dims; ++d) r += (key[d] - query[d] - g.relative_lo[d]) * g.rstride[d];
  return r;
}

// The keys query i sees (key coordinates), the queries that see key j (query coordinates), and
// the queries whose key at offset `offset` lies on the key grid (query coordinates).
POSGRAD_HD BoxWalk keys_of_query(const Geometry& g, const int64_t* query) {
  BoxWalk w{g.dims, {}, {}, {}, false};
  for (int d = 0; d < g.dims; ++d)
    w.bound(d, max64(0, query[d] + g.lo[d]), min64(g.key_size[d] - 1, query[d] + g.hi[d]));
  return w;
}
POSGRAD_HD BoxWalk queries_of_key(const Geometry& g, const int64_t* key) {
  BoxWalk w{g.dims, {}, {}, {}, false};
  for (int d = 0; d < g.dims; ++d)
    w.bound(d, max64(g.query_first[d], key[d] - g.hi[d]),
            min64(g.query_first[d] + g.query_size[d] - 1, key[d] - g.lo[d]));
  return w;
}
POSGRAD_HD BoxWalk queries_at_offset(const Geometry& g, const int64_t* offset) {
  BoxWalk w{g.dims, {}, {}, {}, false};
  for (int d = 0; d < g.dims; ++d) {
    w.bound(d, max64(g.query_first[d], -offset[d]),
            min64(g.query_first[d] + g.query_size[d] - 1, g.key_size[d] - 1 - offset[d]));
    w.empty = w.empty || offset[d] < g.lo[d] || offset[d] > g.hi[d];  // an offset outside the box: no pair
  }
  return w;
}

template <typename T>
POSGRAD_HD T dot(const T* a, const T* b, int64_t n) {
  T s = 0;
  for (int64_t d = 0; d < n; ++d) s += a[d] * b[d];
  return s;
}

// The pair of query row qi and key row kj (head h, relative entry r; r unused without tables) as
// fused_formula.h's accessor reads it.
template <typename T>
struct PairAt {
  const Problem<T>& pb;
  int64_t h, r;
  const T *qi, *kj;
  POSGRAD_HD T content() const {
    const T* a = pb.tables[kKeyBias];
    return pb.scale * dot(qi, kj, pb.Dh) + (a ? dot(a + h * pb.Dh, kj, pb.Dh) : T(0));
  }
  POSGRAD_HD T query_dots(T qt) const {  // the table is [H, Dh, R]: a stride of R
    const T* t = pb.tables[kQueryTable];
    if (t)
      for (int64_t d = 0; d < pb.Dh; ++d) qt += qi[d] * t[(h * pb.Dh + d) * pb.R + r];
    return qt;
  }
  POSGRAD_HD T entry(int kind, int absent) const {
    const T* t = pb.tables[kind];
    return t ? t[h * pb.R + r] : T(absent);
  }
};

// Whether the probabilities are masked (prob_mask or row_prob_mask): out's denominator has the
// 1e-8 term.
template <typename T>
POSGRAD_HD bool masked(const Problem<T>& pb) {
  return pb.tables[kProbMask] || pb.tables[kRowProbMask];
}

template <typename T>
POSGRAD_HD T infinity() {
  return static_cast<T>(INFINITY);
}

// A row mask's support: its first to last non-zero column (first > last when it is all zero;
// every column without a row mask).
struct RowSupport {
  int64_t first, last;
};
// Query row `row`'s W columns of the row mask, or null without one.
template <typename T>
POSGRAD_HD const T* row_mask_of(const Problem<T>& pb, int64_t row) {
  return pb.tables[kRowProbMask] ? pb.tables[kRowProbMask] + row * pb.W : nullptr;
}
template <typename T>
POSGRAD_HD RowSupport row_support(const Problem<T>& pb, int64_t row) {
  RowSupport s{0, pb.W - 1};
  const T* m = row_mask_of(pb, row);
  if (!m) return s;
  while (s.first < pb.W && m[s.first] == T(0)) ++s.first;
  while (s.last >= s.first && m[s.last] == T(0)) --s.last;
  return s;
}
// Window column of key j for query row i (in the keys' frame at query_first[0] + i).
template <typename T>
POSGRAD_HD int64_t window_column(const Problem<T>& pb, int64_t i, int64_t j) {
  return pb.W - 1 + j - (pb.geometry.query_first[0] + i);
}

// The keys query row i sees, as a walk over its box (with a row mask, cut to the row's support).
template <typename T>
POSGRAD_HD BoxWalk key_walk(const Problem<T>& pb, const int64_t* query, const RowSupport& support) {
  BoxWalk w = keys_of_query(pb.geometry, query);
  if (pb.tables[kRowProbMask])  // 1-D: keys from the support's first to its last column
    w.bound(0, max64(w.lo[0], query[0] - (pb.W - 1) + support.first),
            min64(w.hi[0], query[0] - (pb.W - 1) + support.last));
  return w;
}

// The first of `parts` equal slices of `count` items, and the one after it.
POSGRAD_HD int64_t slice_begin(int64_t count, int64_t part, int64_t parts) { return count * part / parts; }

// Part `part` of `parts` of the keys of query row i of batch b, one by one: visit(j, r) for every
// key in that slice of the row's walk that is not padded (Visit: callable with (int64_t j, int64_t r)).
template <typename T, typename Visit>
POSGRAD_HD void for_each_key(const Problem<T>& pb, int64_t b, int64_t i, const RowSupport& support, int64_t part,
                             int64_t parts, Visit& visit) {
  const Geometry& g = pb.geometry;
  const int64_t* pad = pb.padded ? pb.padded + b * pb.N : nullptr;
  if (g.dims == 0) {
    for (int64_t j = slice_begin(pb.N, part, parts); j < slice_begin(pb.N, part + 1, parts); ++j)
      if (!pad || !pad[j]) visit(j, int64_t{0});
    return;
  }
  int64_t query[kMaxDims];
  query_coords(g, i, query);
  BoxWalk w = key_walk(pb, query, support);
  const int64_t count = w.count(), begin = slice_begin(count, part, parts), end = slice_begin(count, part + 1, parts);
  if (begin >= end) return;
  w.seek(begin);
  for (int64_t t = begin; t < end; ++t, w.next()) {
    const int64_t j = key_index(g, w.at);
    if (!pad || !pad[j]) visit(j, relative_entry(g, query, w.at));
  }
}

// ------------------------------------------------------------------ forward

// A part's sums over its keys, [m, sum e, sum e M, sum e M v (Dh)] at `partial` (kForwardExtra + Dh
// values), e = exp(s - m) with m the part's own max (-inf for a part without keys).
constexpr int64_t kForwardExtra = 3;

// One pass over a part's keys with a running max m: when a logit above m comes, the sums so far
// are rescaled by exp(m_old - m_new) (FlashAttention's online softmax).
template <typename T>
struct RowSums {
  const Problem<T>& pb;
  int64_t h, i;
  const T *qi, *k, *v, *row_mask;  // row_mask: the row's W columns, or null
  T m, sum_e, sum_em;
  T* acc;  // [Dh]: sum of e M v_j
  POSGRAD_HD void operator()(int64_t j, int64_t r) {
    const PairAt<T> at{pb, h, r, qi, k + j * pb.Dh};
    const T s = pair_logit<T>(at).s;
    if (s > m) {
      const T scale = m == -infinity<T>() ? T(0) : std::exp(m - s);
      sum_e *= scale;
      sum_em *= scale;
      for (int64_t d = 0; d < pb.Dh; ++d) acc[d] *= scale;
      m = s;
    }
    const T M = row_mask ? row_mask[window_column(pb, i, j)] : at.entry(kProbMask, 1);
    const T e = std::exp(s - m), w = e * M;
    sum_e += e;
    sum_em += w;
    const T* vj = v + j * pb.Dh;
    for (int64_t d = 0; d < pb.Dh; ++d) acc[d] += w * vj[d];
  }
};

// Query row `row` = (b H + h) Nq + i, part `part` of `parts` of its keys: its partial sums.
template <typename T>
POSGRAD_HD void forward_part(const Problem<T>& pb, int64_t row, int64_t part, int64_t parts, const T* q, const T* k,
                             const T* v, T* partial) {
  const int64_t bh = row / pb.Nq, i = row % pb.Nq, b = bh / pb.H, h = bh % pb.H, Dh = pb.Dh;
  const T* qi = q + row * Dh;
  const T* kb = k + bh * pb.N * Dh;
  T* acc = partial + kForwardExtra;
  for (int64_t d = 0; d < Dh; ++d) acc[d] = 0;
  const T* row_mask = row_mask_of(pb, row);
  RowSums<T> sums{pb, h, i, qi, kb, v + bh * pb.N * Dh, row_mask, -infinity<T>(), 0, 0, acc};
  for_each_key(pb, b, i, row_support(pb, row), part, parts, sums);
  partial[0] = sums.m, partial[1] = sums.sum_e, partial[2] = sums.sum_em;  // m = -inf: no key in this part
}

// Query row `row`: its parts' sums merged (each rescaled to the row's max) into out's row and
// lse (+inf and an output of 0 for a row that sees no key).
template <typename T>
POSGRAD_HD void forward_merge(const Problem<T>& pb, int64_t row, int64_t parts, const T* partials, T* out, T* lse) {
  const int64_t Dh = pb.Dh, stride = kForwardExtra + Dh;
  const T* first = partials + row * parts * stride;
  T* o = out + row * Dh;
  T m = -infinity<T>();
  for (int64_t p = 0; p < parts; ++p) m = first[p * stride] > m ? first[p * stride] : m;
  for (int64_t d = 0; d < Dh; ++d) o[d] = 0;
  if (m == -infinity<T>()) {
    lse[row] = infinity<T>();
    return;
  }
  T sum_e = 0, sum_em = 0;
  for (int64_t p = 0; p < parts; ++p) {
    const T* part = first + p * stride;
    if (part[0] == -infinity<T>()) continue;
    const T scale = std::exp(part[0] - m);
    sum_e += scale * part[1];
    sum_em += scale * part[2];
    for (int64_t d = 0; d < Dh; ++d) o[d] += scale * part[kForwardExtra + d];
  }
  const T denominator = masked(pb) ? sum_em + static_cast<T>(kMaskEpsilon) * sum_e : sum_e;
  for (int64_t d = 0; d < Dh; ++d) o[d] /= denominator;
  lse[row] = m + std::log(denominator);
}

// ------------------------------------------------------------------ backward

// One pair's backward, given lse_i, D_i and dout_i: its logit recomputed, p = exp(s - lse_i),
// dov = dout_i . v_j, its mask M and ds = d loss / d s.
template <typename T>
struct PairGrad {
  PairAt<T> at;
  PairLogit<T> logit;
  T p, dov, M, ds;
};
// row_mask: the query row's W columns (or null), read at key j's column `column`.
template <typename T>
POSGRAD_HD PairGrad<T> pair_grad(const Problem<T>& pb, int64_t h, const T* qi, const T* kj, const T* vj, const T* douti,
                                 T lse_i, T D_i, int64_t r, const T* row_mask, int64_t column) {
  PairGrad<T> g{{pb, h, r, qi, kj}, {}, 0, 0, 0, 0};
  g.logit = pair_logit<T>(g.at);
  g.M = row_mask ? row_mask[column] : g.at.entry(kProbMask, 1);
  g.p = std::exp(g.logit.s - lse_i);
  g.dov = dot(douti, vj, pb.Dh);
  g.ds = score_gradient(g.p, g.M, g.dov, D_i, masked(pb) ? static_cast<T>(kMaskEpsilon) : T(0));
  return g;
}

// Query row `row`, before the parts: D[row] = dout_i . out_i, the row mask's gradient row zeroed
// (when wanted) and the row's support in support[2 row], support[2 row + 1] (with a row mask).
template <typename T>
POSGRAD_HD void backward_prepare_row(const Problem<T>& pb, int64_t row, const T* out, const T* dout, T* D,
                                     T* d_row_mask, int64_t* support) {
  D[row] = dot(dout + row * pb.Dh, out + row * pb.Dh, pb.Dh);
  if (d_row_mask)
    for (int64_t c = 0; c < pb.W; ++c) d_row_mask[row * pb.W + c] = 0;
  if (support) {
    const RowSupport s = row_support(pb, row);
    support[2 * row] = s.first, support[2 * row + 1] = s.last;
  }
}

template <typename T>
struct RowGrad {
  const Problem<T>& pb;
  int64_t h, i;
  const T *qi, *k, *v, *douti, *row_mask;
  T lse_i, D_i;
  T *dqi, *d_row_mask;  // d_row_mask: the row's W gradient columns, or null
  POSGRAD_HD void operator()(int64_t j, int64_t r) {
    const int64_t Dh = pb.Dh;
    const T* kj = k + j * Dh;
    const int64_t column = row_mask ? window_column(pb, i, j) : 0;
    const PairGrad<T> g = pair_grad(pb, h, qi, kj, v + j * Dh, douti, lse_i, D_i, r, row_mask, column);
    if (d_row_mask) d_row_mask[column] = mask_gradient(g.p, g.dov, D_i);
    const PairGradients<T> dg = pair_gradients(g.at, g.logit, g.ds);  // dq_i from the content and the query table
    for (int64_t d = 0; d < Dh; ++d) dqi[d] += dg.content * pb.scale * kj[d];
    if (const T* t = pb.tables[kQueryTable])
      for (int64_t d = 0; d < Dh; ++d) dqi[d] += dg.positional * t[(h * Dh + d) * pb.R + r];
  }
};

// Query row `row`, part `part` of `parts` of its keys: its share of dq ([Dh] at `partial`) and the
// row mask's gradient at its keys' columns (each column belongs to one part).
template <typename T>
POSGRAD_HD void backward_row_part(const Problem<T>& pb, int64_t row, int64_t part, int64_t parts, const T* q,
                                  const T* k, const T* v, const T* lse, const T* D, const T* dout, T* d_row_mask,
                                  T* partial) {
  const int64_t bh = row / pb.Nq, i = row % pb.Nq, b = bh / pb.H, h = bh % pb.H, Dh = pb.Dh;
  for (int64_t d = 0; d < Dh; ++d) partial[d] = 0;
  if (lse[row] == infinity<T>()) return;
  const T* row_mask = row_mask_of(pb, row);
  RowGrad<T> grad{pb,       h,        i,      q + row * Dh, k + bh * pb.N * Dh, v + bh * pb.N * Dh, dout + row * Dh,
                  row_mask, lse[row], D[row], partial,      d_row_mask ? d_row_mask + row * pb.W : nullptr};
  for_each_key(pb, b, i, row_support(pb, row), part, parts, grad);
}

// Key row `key` = (b H + h) N + j, part `part` of `parts` of the queries whose box holds it:
// its shares of dk and dv and of the key bias's gradient, [dk (Dh), dv (Dh), sum of d content]
// at `partial` (2 Dh + 1 values). support: backward_prepare_row's (null without a row mask).
template <typename T>
POSGRAD_HD void backward_key_part(const Problem<T>& pb, int64_t key, int64_t part, int64_t parts, const T* q,
                                  const T* k, const T* v, const T* lse, const T* D, const T* dout,
                                  const int64_t* support, T* partial) {
  const int64_t bh = key / pb.N, j = key % pb.N, b = bh / pb.H, h = bh % pb.H, Dh = pb.Dh;
  T* dkj = partial;
  T* dvj = partial + Dh;
  for (int64_t d = 0; d < 2 * Dh + 1; ++d) partial[d] = 0;
  if (pb.padded && pb.padded[b * pb.N + j]) return;
  const Geometry& g = pb.geometry;
  const T* kj = k + key * Dh;
  const T* vj = v + key * Dh;
  const T* a = pb.tables[kKeyBias] ? pb.tables[kKeyBias] + h * Dh : nullptr;
  T share = 0;
  const auto add_query = [&](int64_t i, int64_t r) {
    const int64_t row = bh * pb.Nq + i;
    if (lse[row] == infinity<T>()) return;
    const T* row_mask = row_mask_of(pb, row);
    const int64_t column = row_mask ? window_column(pb, i, j) : 0;
    if (row_mask && (column < support[2 * row] || column > support[2 * row + 1])) return;  // outside its support
    const T* qi = q + row * Dh;
    const PairGrad<T> pg = pair_grad(pb, h, qi, kj, vj, dout + row * Dh, lse[row], D[row], r, row_mask, column);
    const T dcontent = pair_gradients(pg.at, pg.logit, pg.ds).content;
    for (int64_t d = 0; d < Dh; ++d) {
      dkj[d] += dcontent * (pb.scale * qi[d] + (a ? a[d] : T(0)));
      dvj[d] += pg.p * pg.M * dout[row * Dh + d];
    }
    share += dcontent;
  };
  if (g.dims == 0) {
    for (int64_t i = slice_begin(pb.Nq, part, parts); i < slice_begin(pb.Nq, part + 1, parts); ++i) add_query(i, 0);
  } else {
    int64_t kc[kMaxDims];
    key_coords(g, j, kc);
    BoxWalk w = queries_of_key(g, kc);
    const int64_t count = w.count(), begin = slice_begin(count, part, parts), end = slice_begin(count, part + 1, parts);
    if (begin < end) w.seek(begin);
    for (int64_t t = begin; t < end; ++t, w.next()) add_query(query_index(g, w.at), relative_entry(g, w.at, kc));
  }
  partial[2 * Dh] = share;
}

// Key row `key`: its parts' shares summed into dk's and dv's rows and key_bias_share[key] (the key
// bias's gradient is sum_j key_bias_share[j] k_j per head; null: not wanted).
template <typename T>
POSGRAD_HD void backward_key_merge(const Problem<T>& pb, int64_t key, int64_t parts, const T* partials, T* dk, T* dv,
                                   T* key_bias_share) {
  const int64_t Dh = pb.Dh, stride = 2 * Dh + 1;
  const T* first = partials + key * parts * stride;
  T share = 0;
  for (int64_t d = 0; d < Dh; ++d) dk[key * Dh + d] = dv[key * Dh + d] = 0;
  for (int64_t p = 0; p < parts; ++p) {
    const T* part = first + p * stride;
    for (int64_t d = 0; d < Dh; ++d) {
      dk[key * Dh + d] += part[d];
      dv[key * Dh + d] += part[Dh + d];
    }
    share += part[2 * Dh];
  }
  if (key_bias_share) key_bias_share[key] = share;
}

// [N]-row sums of `parts` partial rows of `width` values: dq's rows from backward_row_part.
template <typename T>
POSGRAD_HD void sum_parts(int64_t row, int64_t parts, int64_t width, const T* partials, T* out) {
  const T* first = partials + row * parts * width;
  for (int64_t d = 0; d < width; ++d) {
    T sum = 0;
    for (int64_t p = 0; p < parts; ++p) sum += first[p * width + d];
    out[row * width + d] = sum;
  }
}


// The values a relative entry's part accumulates: one per kind of table (the per-entry kinds'
// gradients; the others 0), then the query table's (Dh): kEntryExtra + Dh values.
constexpr int64_t kEntryExtra = kTableCount;

// Entry `entry` = h R + r of the relative tables, part `part` of `parts` of the (batch, query)
// pairs whose key at that offset is on the grid, not padded, in the box and (with a row mask) in
// the row's support: its shares of every table's gradient at (h, r).
template <typename T>
POSGRAD_HD void backward_entry_part(const Problem<T>& pb, int64_t entry, int64_t part, int64_t parts, const T* q,
                                    const T* k, const T* v, const T* lse, const T* D, const T* dout,
                                    const int64_t* support, T* partial) {
  const int64_t h = entry / pb.R, r = entry % pb.R, Dh = pb.Dh;
  const Geometry& g = pb.geometry;
  for (int64_t d = 0; d < kEntryExtra + Dh; ++d) partial[d] = 0;
  if (g.dims == 0) return;
  int64_t offset[kMaxDims];
  int64_t rest = r;
  for (int d = 0; d < g.dims; ++d) {  // r's offset: entries (o_d - relative_lo_d) in mixed radix
    const int64_t e = rest / g.rstride[d];
    rest %= g.rstride[d];
    offset[d] = e + g.relative_lo[d];
  }
  BoxWalk w = queries_at_offset(g, offset);
  const int64_t per_batch = w.count(), count = pb.B * per_batch;
  const int64_t begin = slice_begin(count, part, parts), end = slice_begin(count, part + 1, parts);
  for (int64_t t = begin; t < end; ++t) {
    const int64_t b = t / per_batch;
    if (t == begin || t % per_batch == 0) w.seek(t % per_batch);
    const int64_t i = query_index(g, w.at);
    int64_t kc[kMaxDims];
    for (int d = 0; d < g.dims; ++d) kc[d] = w.at[d] + offset[d];
    w.next();
    const int64_t j = key_index(g, kc);
    if (pb.padded && pb.padded[b * pb.N + j]) continue;
    const int64_t bh = b * pb.H + h, row = bh * pb.Nq + i;
    if (lse[row] == infinity<T>()) continue;
    const T* row_mask = row_mask_of(pb, row);
    const int64_t column = row_mask ? window_column(pb, i, j) : 0;
    if (row_mask && (column < support[2 * row] || column > support[2 * row + 1])) continue;  // outside its support
    const T* qi = q + row * Dh;
    const PairGrad<T> pg = pair_grad(pb, h, qi, k + (bh * pb.N + j) * Dh, v + (bh * pb.N + j) * Dh, dout + row * Dh,
                                     lse[row], D[row], r, row_mask, column);
    const PairGradients<T> dg = pair_gradients(pg.at, pg.logit, pg.ds);
    for (int kind = 0; kind < kTableCount; ++kind)
      if (per_entry(kind)) partial[kind] += kind == kProbMask ? mask_gradient(pg.p, pg.dov, D[row]) : dg.entry[kind];
    for (int64_t d = 0; d < Dh; ++d) partial[kEntryExtra + d] += dg.positional * qi[d];
  }
}

// Entry `entry`: its parts' shares summed into every wanted table gradient.
template <typename T>
POSGRAD_HD void backward_entry_merge(const Problem<T>& pb, int64_t entry, int64_t parts, const T* partials,
                                     const TableGrads<T>& grads) {
  const int64_t h = entry / pb.R, r = entry % pb.R, Dh = pb.Dh, stride = kEntryExtra + Dh;
  const T* first = partials + entry * parts * stride;
  for (int kind = 0; kind < kTableCount; ++kind) {
    if (!per_entry(kind) || !grads[kind]) continue;
    T sum = 0;
    for (int64_t p = 0; p < parts; ++p) sum += first[p * stride + kind];
    grads[kind][entry] = sum;
  }
  if (grads[kQueryTable])
    for (int64_t d = 0; d < Dh; ++d) {
      T sum = 0;
      for (int64_t p = 0; p < parts; ++p) sum += first[p * stride + kEntryExtra + d];
      grads[kQueryTable][(h * Dh + d) * pb.R + r] = sum;
    }
}

// The key bias's gradient at (h, d) = `hd`: sum over batches and keys of key_bias_share k_j[d].
template <typename T>
POSGRAD_HD void key_bias_grad_at(const Problem<T>& pb, int64_t hd, const T* k, const T* key_bias_share, T* grad) {
  const int64_t h = hd / pb.Dh, d = hd % pb.Dh;
  T sum = 0;
  for (int64_t b = 0; b < pb.B; ++b) {
    const int64_t bh = b * pb.H + h;
    for (int64_t j = 0; j < pb.N; ++j) sum += key_bias_share[bh * pb.N + j] * k[(bh * pb.N + j) * pb.Dh + d];
  }
  grad[hd] = sum;
}

}  // namespace posgrad::fused_gpu
