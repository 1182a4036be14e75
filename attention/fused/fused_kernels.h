// The CPU kernels of the fused attention op (fused_attention.h): forward and backward of
//
//   s(i, j)          = pair_logit (fused_formula.h: the content q_i . k_j, the positional term
//                      and the tables at r = rel(i, j)),  -inf for padded keys
//   e(i, j)          = exp(s - max_j s)
//   out_i            = sum_j e M[h, r] v_j / (sum_j e M[h, r] + 1e-8 sum_j e)   (mask M)
//                    = sum_j e v_j / sum_j e                                     (no mask)
//
// or, with a mask per query row instead (row_prob_mask, 1-D sequences: M[b, h, i, c] over the
// window columns c = W - 1 + j - i), the same over the row's support only: the keys from its first
// to its last non-zero column (row_support, clip_to_support). The other keys weigh 0; the kernels
// skip them, so a query costs its own span, not the layer's longest.
//
// over only the keys inside the key box of query i. Keys are visited in segments: runs of
// consecutive keys along the last grid dim, which are also consecutive entries of the relative
// grid, so every table is read with unit stride and the inner loops vectorise over keys (k and
// v are transposed per head to [Dh, N]; with the thesis's Dh = 8 a vector over Dh would be one
// register wide). A query row's logits live in a per-thread buffer of at most N values: memory
// is O(B H N Dh) + tables + O(threads N), never [B, H, N, N]. The forward saves one number per
// row, lse = max + log(denominator); the backward recomputes the row's logits from q, k and the
// tables (FlashAttention-2 style) and accumulates dq, dk, dv and every table's gradient
// (tables in per-thread buffers, summed at the end).
//
// Deliberately not here: autograd, argument checks and the combination of the hooks' tables
// (fused_attention.cpp).
// Shapes: letters of shape_legend.h; M above is the AttentionTerms table prob_mask (kTableKinds).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "attention/attention_terms.h"
#include "attention/fused/fused_formula.h"

namespace posgrad::fused_detail {

// fused_formula.h's kinds of table are kTableKinds, in its order, the per-entry ones its Entries.
consteval bool formula_kinds_follow_the_list() {
  if (fused_formula::kTableCount != static_cast<int>(kTableKindCount)) return false;
  for (size_t kind = 0; kind < kTableKindCount; ++kind)
    if (kTableKinds[kind].name != std::string_view(fused_formula::kTableNames[kind]) ||
        (kTableKinds[kind].shape == TableShape::Entries) != fused_formula::per_entry(kind))
      return false;
  return true;
}
static_assert(formula_kinds_follow_the_list(), "fused_formula.h's TableIndex, kTableNames and per_entry follow kTableKinds");

// Which keys each query sees: the clipped offset box on the grid (all keys when `structure` is
// empty: tree positions, where no table may be used).
struct RowGeometry {
  std::vector<int64_t> structure;        // Sk per dim: the keys' grid; empty = no grid
  std::vector<int64_t> query_structure;  // Sq per dim: the queries' grid
  std::vector<int64_t> query_first;      // coordinate of the first query in the keys' frame
  // Smallest offset (key - query) per dim: offset o is relative entry sum_d (o_d - relative_lo_d)
  // rstride_d, with Sq_d + Sk_d - 1 entries per dim (positions.h's PositionPair).
  std::vector<int64_t> relative_lo;
  std::vector<int64_t> lo, hi;     // inclusive offset box per dim, inside the pair's range
  int64_t tokens = 0;              // N (keys)
  // Column tables (column_tables.h; self-attention only): relative entries r index the table of
  // the query's last coordinate x, r = a S_last + x' for the leading dims' relative row a and the
  // key's last coordinate x'. Runs of whole rows then join into one run of keys.
  bool column_tables = false;

  // Queries and keys on one grid (self-attention).
  bool is_self() const {
    for (int64_t c : query_first)
      if (c != 0) return false;
    return query_structure == structure;
  }
  // Calls fn(j0, r0, len) for every run of keys j0 .. j0+len-1 (relative entries r0 .. r0+len-1)
  // that query i (0..Nq-1) sees; runs that continue each other in keys and in entries come as one.
  // Returns the number of keys visited.
  template <typename Fn>
  int64_t for_each_segment(int64_t i, Fn&& fn) const;
};

struct Problem {
  int64_t B = 0, H = 0, N = 0, Dh = 0, R = 0;
  // Queries have a geometry of their own (RowGeometry): q, out, lse and dq hold Nq rows, k and v
  // N rows (self-attention, a segment over a memory, or cross-attention).
  int64_t Nq = 0;
  double scale = 1.0;
  const uint8_t* padded = nullptr;  // [B, N], 1 = padded key; null = none
  RowGeometry geometry;
  // Tables per head: 1, or S_last with column tables (the table of head h and last coordinate x
  // is "head" h * table_columns + x of the [H * table_columns, ...] tables; R is then a S_last).
  int64_t table_columns = 1;
  // Columns W of the row window table (row_prob_mask [B, H, Nq, W]); 0 without one.
  int64_t W = 0;
};

// The tables of one call, one pointer per kind of kTableKinds (attention_terms.h; null = absent),
// in the kernels' layout (kernel_table_layout).
template <typename T>
struct Tables {
  std::array<const T*, kTableKindCount> of{};
  // Added to s after the modulation: 0 or -inf. Not a hook's term: column tables set it when they
  // widen a query's runs to whole rows (column_tables.h), to leave out the keys outside its box.
  const T* logit_offset = nullptr;   // [H, R]
};

template <typename T>
struct Grads {
  T* dq = nullptr;  // [B, H, Nq, Dh] (all three required; dk, dv [B, H, N, Dh])
  T* dk = nullptr;
  T* dv = nullptr;
  std::array<T*, kTableKindCount> of{};  // per kind, like Tables (null: not needed)
};

// A kind's table as the kernels read it: `rows` rows of `entries` values per table head, the
// relative entries last so that the key loops read them with unit stride:
// HeadVector [H, Dh] (one row of Dh; not relative), Entries [H, R] (one row of R), EntryVectors
// transposed to [H, Dh, R] (Dh rows of R).
struct KernelTableLayout {
  bool relative;
  int64_t rows, entries;
};
inline KernelTableLayout kernel_table_layout(TableShape shape, int64_t Dh, int64_t R) {
  switch (shape) {
    case TableShape::HeadVector: return {false, 1, Dh};
    case TableShape::Entries: return {true, 1, R};
    case TableShape::EntryVectors: return {true, Dh, R};
    case TableShape::RowWindow: return {false, 0, 0};  // per (batch, head) [Nq, W]: not per head
  }
  return {};
}

// The support of one row of a row window table [W]: its columns from the first to the last
// non-zero value (first > last when the row is all zero).
struct RowSupport {
  int64_t first, last;
};
template <typename T>
RowSupport row_support(const T* row, int64_t W) {
  RowSupport s{0, W - 1};
  while (s.first < W && row[s.first] == T(0)) ++s.first;
  while (s.last >= s.first && row[s.last] == T(0)) --s.last;
  return s;
}

// A run of keys j0 .. j0+len-1 (relative entries from r0) of a query at coordinate `query` (1-D,
// the keys' frame), cut to the keys of its row support (column c is key query - (W - 1) + c);
// len becomes 0 when none is left.
inline void clip_to_support(int64_t& j0, int64_t& r0, int64_t& len, int64_t query, int64_t W, RowSupport s) {
  const int64_t first_key = query - (W - 1) + s.first, last_key = query - (W - 1) + s.last;
  const int64_t begin = j0 > first_key ? j0 : first_key, end = j0 + len - 1 < last_key ? j0 + len - 1 : last_key;
  r0 += begin - j0;
  j0 = begin;
  len = end >= begin ? end - begin + 1 : 0;
}

// q [B, H, Nq, Dh], k, v [B, H, N, Dh] contiguous -> out [B, H, Nq, Dh], lse [B, H, Nq] (+inf for
// a row that sees no key: its output is 0).
template <typename T>
void forward(const Problem& P, const Tables<T>& tables, const T* q, const T* k, const T* v, T* out, T* lse);

// Gradients for dout [B, H, Nq, Dh]; out and lse from forward (dq [B, H, Nq, Dh], dk, dv [B, H, N, Dh]). Fills every non-null pointer of
// `grads` (overwrites, does not add).
template <typename T>
void backward(const Problem& P, const Tables<T>& tables, const T* q, const T* k, const T* v, const T* out,
              const T* lse, const T* dout, const Grads<T>& grads);

// ------------------------------------------------------------------ inline definitions

template <typename Fn>
int64_t RowGeometry::for_each_segment(int64_t i, Fn&& fn) const {
  const int64_t n = static_cast<int64_t>(structure.size());
  if (n == 0) {
    fn(int64_t{0}, int64_t{0}, tokens);
    return tokens;
  }
  constexpr int kMaxDims = 8;
  int64_t coord[kMaxDims], olo[kMaxDims], ohi[kMaxDims], o[kMaxDims], gstride[kMaxDims], rstride[kMaxDims];
  int64_t rem = i;
  for (int64_t d = n - 1; d >= 0; --d) {  // the query's coordinate in the keys' frame
    coord[d] = rem % query_structure[d] + query_first[d];
    rem /= query_structure[d];
  }
  gstride[n - 1] = 1;
  rstride[n - 1] = 1;
  for (int64_t d = n - 2; d >= 0; --d) {
    gstride[d] = gstride[d + 1] * structure[d + 1];
    // Column tables: the last dim's entries are the key's coordinate (S of them), not the offset.
    const int64_t entries = column_tables && d == n - 2 ? structure[d + 1] : query_structure[d + 1] + structure[d + 1] - 1;
    rstride[d] = rstride[d + 1] * entries;
  }
  for (int64_t d = 0; d < n; ++d) {
    olo[d] = lo[d] > -coord[d] ? lo[d] : -coord[d];
    ohi[d] = hi[d] < structure[d] - 1 - coord[d] ? hi[d] : structure[d] - 1 - coord[d];
    if (olo[d] > ohi[d]) return 0;
    o[d] = olo[d];
  }
  const int64_t last = n - 1, len = ohi[last] - olo[last] + 1;
  int64_t visited = 0, run_j0 = 0, run_r0 = 0, run_len = 0;  // the run being joined
  while (true) {
    int64_t j0 = 0, r0 = 0;
    for (int64_t d = 0; d < n; ++d) {
      j0 += (coord[d] + o[d]) * gstride[d];
      // Column tables: the last dim's entry is the key's coordinate.
      const int64_t entry = column_tables && d == last ? coord[d] + o[d] : o[d] - relative_lo[d];
      r0 += entry * rstride[d];
    }
    if (run_len > 0 && j0 == run_j0 + run_len && r0 == run_r0 + run_len) {
      run_len += len;
    } else {
      if (run_len > 0) fn(run_j0, run_r0, run_len);
      run_j0 = j0, run_r0 = r0, run_len = len;
    }
    visited += len;
    // Next combination of the leading dims' offsets (odometer, last leading dim fastest).
    int64_t d = last - 1;
    while (d >= 0 && o[d] == ohi[d]) {
      o[d] = olo[d];
      --d;
    }
    if (d < 0) break;
    ++o[d];
  }
  fn(run_j0, run_r0, run_len);
  return visited;
}

}  // namespace posgrad::fused_detail
