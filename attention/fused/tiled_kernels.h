// The fused op's kernels for attention whose tables are at most per-entry numbers on the logits
// (bias, modulation, positional modulation: ALiBi, T5's buckets, the Gaussian span; RoPE and APE
// act before the op; key boxes, causal masks and padded keys are fine), where the row kernels are
// slowest. The formula is fused_formula.h's without a query table, key bias or mask:
//   s(i, j) = pair_logit of the content scale q_i . k_j and the tables at r = rel(i, j)
//             (-inf outside query i's box and at padded keys)
//   out_i   = sum_j e(i, j) v_j / sum_j e(i, j)
// Blocks of neighbouring queries share most of their keys, so the work is FlashAttention-2's,
// written on the CPU GEMM (tensor/cpu/gemm.h) instead of key loops. A block is a patch of queries
// (1-D: Bq consecutive ones; on a grid, ry lines of rx queries, the shape chosen per call by
// Plan), its band the union of the keys its queries' runs cover, in parts of consecutive keys
// (all keys without a box; in 1-D a window of W keys gives one part of W + Bq - 1 keys; on a grid
// a part per row of keys the patch's boxes cross). Rows of queries or keys that are not one
// matrix are gathered into one ([Bq, Dh], [L, Dh]) and their gradients put back:
//   forward   per (batch, head, block of Bq queries): S = scale Q K_band^T [Bq, L] (one GEMM), the
//             tables along each query's runs and -inf outside them, each row's max m and
//             e = exp(S - m) in place,
//             out = (E V_band) / rowsum(E) (one GEMM), and lse = m + log rowsum(E) kept per row, as
//             the row kernels do;
//   backward  per block: S again and P = exp(S - lse), dP = dO V_band^T, dS = P (dP - D) with
//             D_i = dout_i . out_i, the tables' gradients along the runs and dS made the
//             content's gradient (pair_gradients), then
//             dQ = scale dS K_band, dK_band += scale dS^T Q, dV_band += P^T dO (four GEMMs); dK,
//             dV and the tables' gradients summed in per-thread copies at the end.
// A band computes keys outside some of its queries' boxes (masked): the plan takes the tiled
// kernels only while the bands' work is at most kWorkRatio times the keys the queries see
// (the GEMM does about 5 times the row kernels' keys per second at Dh 32; docs/benchmarks.md),
// and picks the block size Bq that trades the band's width against the GEMMs' per-block packing.
// Memory: two [Bq, L] buffers per thread (at most 1 MiB each but for the smallest blocks), never
// [B, H, N, N]. Blocks run in parallel (OpenMP), each GEMM on its own thread.
// The row kernels (fused_kernels_impl.h) stay the reference of this file: the fused tests compare
// both with the dense reference.
// Deliberately not here: query tables, key biases, masks, row masks (the row kernels do those).
// Shapes: letters of shape_legend.h; Bq queries per block, L keys per band.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "attention/fused/fused_kernels_impl.h"  // QuerySegments, row_max, Lanes (the vector exp), threads
#include "tensor/cpu/gemm.h"
#include "tensor/cpu/parallel.h"
#include "tensor/tensor.h"

namespace posgrad::fused_detail::tiled {

namespace {  // in the translation unit of fused_kernels.cpp only, as the row kernels

using namespace fused_formula;  // the kinds of table, the pair's formula

// The kinds of table these kernels take: numbers per relative entry, [H, R], that act on the
// logits (not the masks, which act on the probabilities).
constexpr bool takes_kind(size_t kind) {
  return fused_formula::per_entry(kind) && kTableKinds[kind].stage != TableStage::Probabilities;
}

// The narrowest head the tiled kernels take. At Dh = 8 the row kernels, compiled for that width,
// are faster (quiet A/B on the Zen 5 machine, 1-D N = 4096 at full span: 71 ms against 130 ms;
// the posattn step with the sinusoidal scheme: 1,374 against 2,239 ms); at Dh = 16 the tiled
// kernels are (131 against 232 ms at full span, 22 against 35 ms at a box of 1/8).
constexpr int64_t kMinHeadWidth = 16;

// Whether a call is the tiled kernels' case: heads of at least kMinHeadWidth and every table one
// they take (Plan::pays decides the rest).
template <typename T>
bool takes(const Problem& P, const Tables<T>& tables) {
  if (P.Dh < kMinHeadWidth) return false;
  for (size_t kind = 0; kind < kTableKindCount; ++kind)
    if (tables.of[kind] && !takes_kind(kind)) return false;
  return !tables.logit_offset && P.W == 0 && P.table_columns == 1;
}

// The blocks of queries and their bands, the same for every (batch, head).
class Plan {
 public:
  // Largest band work over the keys the queries see for which the tiled kernels are taken.
  static constexpr double kWorkRatio = 4.0;

  // Keys [j0, j0 + keys) of a band, at its columns [col, col + keys).
  struct Part {
    int64_t j0, keys, col;
  };
  struct Block {
    int64_t rows;         // Bq: its queries, queries_[query0, query0 + rows), in query order
    size_t query0;
    bool consecutive;     // its queries are consecutive indices (their rows one matrix)
    int64_t keys;         // L: the band's columns, the union of its queries' runs (0: they see no key)
    size_t part0, parts;  // the band's parts: parts_[part0, part0 + parts), in key order
  };

  Plan(const Problem& P, size_t bytes) : segments_(P.geometry, P.Nq) {
    double seen = 0;  // keys the queries see
    for (int64_t i = 0; i < P.Nq; ++i) seen += static_cast<double>(segments_.keys(i));
    // The queries as planes of Y lines of X (1-D: one line of Nq), cut into patches of ry lines
    // of rx queries, Bq = rx ry a power of two from kMinBlock to kMaxBlock: the shape whose patch
    // at the middle of the grid has the least band work times (1 + kBlockCost / Bq), among those
    // whose [Bq, L] buffer fits kBufferBytes. On a grid a patch of several lines shares the rows
    // of keys its lines' boxes cross.
    const auto& qs = P.geometry.query_structure;
    const int64_t X = qs.size() >= 2 ? qs.back() : std::max<int64_t>(P.Nq, 1), Y = qs.size() >= 2 ? qs[qs.size() - 2] : 1;
    double best = std::numeric_limits<double>::infinity();
    int64_t best_rx = 1, best_ry = 1;
    for (int64_t Bq = kMinBlock; Bq <= kMaxBlock; Bq *= 2)
      for (int64_t rx = Bq; rx >= 1; rx /= 2) {  // at equal cost the widest patch (fewest lines) wins
        const int64_t ry = Bq / rx;
        if ((rx > 1 && rx / 2 >= X) || (ry > 1 && ry / 2 >= Y)) continue;  // a smaller shape is the same patch
        Layout probe;
        probe.add_patch(segments_, X, Y, (X - std::min(rx, X)) / 2, (Y - std::min(ry, Y)) / 2, rx, ry, 0);
        if (probe.blocks.empty()) continue;
        const Block& b = probe.blocks.back();
        if (Bq > kMinBlock && static_cast<size_t>(b.rows * b.keys) * bytes > kBufferBytes) continue;
        if (const double cost = static_cast<double>(b.keys) * (1.0 + kBlockCost / static_cast<double>(b.rows)); cost < best)
          best = cost, best_rx = rx, best_ry = ry;
      }
    double work = 0;
    for (int64_t plane = 0; plane * X * Y < P.Nq; ++plane)
      for (int64_t y0 = 0; y0 < Y; y0 += best_ry)
        for (int64_t x0 = 0; x0 < X; x0 += best_rx)
          work += layout_.add_patch(segments_, X, Y, x0, y0, best_rx, best_ry, plane * X * Y);
    pays_ = work <= kWorkRatio * std::max(seen, 1.0);
  }
  bool pays() const { return pays_; }
  const std::vector<Block>& blocks() const { return layout_.blocks; }
  // Row r's query of block b.
  int64_t query(const Block& b, int64_t r) const { return layout_.queries[b.query0 + static_cast<size_t>(r)]; }
  std::span<const Part> parts(const Block& b) const { return {layout_.parts.data() + b.part0, b.parts}; }
  // The band column of run g of a query of block b.
  int64_t column(const Block& b, const row_kernels::Segment& g) const {
    const std::span<const Part> ps = parts(b);
    const Part& p = *std::prev(std::upper_bound(ps.begin(), ps.end(), g.j0, [](int64_t j, const Part& x) { return j < x.j0; }));
    return p.col + (g.j0 - p.j0);
  }
  const row_kernels::QuerySegments& segments() const { return segments_; }
  int64_t max_rows() const { return layout_.rows; }
  int64_t max_keys() const { return layout_.keys; }
  bool gathers() const { return layout_.gathers; }  // some block's queries or keys are copied into one matrix

 private:
  // A block's cost beyond its band work, in band work per query: the GEMMs pack each band once a
  // block (measured: docs/design.md, "Tiled kernels").
  static constexpr double kBlockCost = 16.0;
  // The smallest block: blocks of 16 were slower than blocks of 32 in every case measured (quiet,
  // 1-D N = 1024 at 1, 1/8, 1/32 of the keys: 15.6, 5.5, 7.9 ms against 13.1, 5.1, 4.2; 32 x 32 at
  // 1/32: 8.7 against 4.9), by more than the packing that kBlockCost counts.
  static constexpr int64_t kMinBlock = 32;
  // The largest block: at full span blocks of 64 beat 256 (quiet, 2026-11-28 04:25, two runs: 1-D
  // N = 1,024 11.2 and 10.4 ms against 12.2 and 11.7; 32 x 32 12.2 and 11.3 against 13.2 and 12.5),
  // and no case measured chose more than 64 and gained by it.
  static constexpr int64_t kMaxBlock = 64;
  // The largest [Bq, L] buffer but for Bq = kMinBlock: the L2 cache of a core of the Zen 5 machine (at
  // full span on a 64 x 64 grid, blocks of 256 queries with 4 MiB buffers took 153 ms against 136
  // for blocks of 64 with 1 MiB).
  static constexpr size_t kBufferBytes = size_t{1} << 20;

  struct Layout {
    std::vector<Block> blocks;
    std::vector<int64_t> queries;
    std::vector<Part> parts;
    int64_t rows = 0, keys = 0;
    bool gathers = false;
    std::vector<int64_t> cover;  // add_patch's scratch

    // Adds the block of the patch of lines y0 .. y0 + ry - 1 and queries x0 .. x0 + rx - 1 of each
    // (cut at the plane's edges) of the plane starting at query `first`, its band the union of its
    // queries' runs; returns its band work (rows x keys).
    double add_patch(const row_kernels::QuerySegments& segments, int64_t X, int64_t Y, int64_t x0, int64_t y0,
                     int64_t rx, int64_t ry, int64_t first) {
      Block b{0, queries.size(), true, 0, parts.size(), 0};
      int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;  // the keys the runs span
      for (int64_t y = y0; y < std::min(y0 + ry, Y); ++y)
        for (int64_t x = x0; x < std::min(x0 + rx, X); ++x) {
          const int64_t i = first + y * X + x;
          if (i >= segments.queries()) continue;
          if (b.rows > 0 && i != queries.back() + 1) b.consecutive = false;
          queries.push_back(i), ++b.rows;
          for (const row_kernels::Segment& g : segments.of(i)) lo = std::min(lo, g.j0), hi = std::max(hi, g.j0 + g.len);
        }
      if (b.rows == 0) return 0;
      if (hi > lo) {  // the runs' union: +1 where a run starts, -1 after it ends, then the covered stretches
        cover.assign(static_cast<size_t>(hi - lo + 1), 0);
        for (size_t r = b.query0; r < queries.size(); ++r)
          for (const row_kernels::Segment& g : segments.of(queries[r])) ++cover[g.j0 - lo], --cover[g.j0 + g.len - lo];
        for (int64_t j = 0, depth = 0, start = 0; j <= hi - lo; ++j) {
          const int64_t before = depth;
          depth += cover[static_cast<size_t>(j)];
          if (before == 0 && depth > 0) start = j;
          if (before > 0 && depth == 0) {
            parts.push_back({lo + start, j - start, b.keys});
            b.keys += j - start, ++b.parts;
          }
        }
      }
      rows = std::max(rows, b.rows);
      keys = std::max(keys, b.keys);
      gathers = gathers || b.parts > 1 || !b.consecutive;
      blocks.push_back(b);
      return static_cast<double>(b.rows * b.keys);
    }
  };

  row_kernels::QuerySegments segments_;
  Layout layout_;
  bool pays_ = false;
};

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

// One head's per-entry tables (its rows of the [H, R] tables; null when absent).
template <typename T>
struct EntryTables {
  std::array<const T*, kTableKindCount> row{};
  EntryTables(const Problem& P, const Tables<T>& tables, int64_t h) {
    for (size_t kind = 0; kind < kTableKindCount; ++kind)
      if (takes_kind(kind) && tables.of[kind]) row[kind] = tables.of[kind] + h * P.R;
  }
  bool any() const {
    return std::any_of(row.begin(), row.end(), [](const T* r) { return r != nullptr; });
  }
};

// fused_formula.h's accessor for the pair at entry r whose content c (scale q . k) the GEMM gave.
template <typename T>
struct EntryAt {
  const EntryTables<T>& et;
  T c;
  int64_t r;
  T content() const { return c; }
  T query_dots(T x) const { return x; }
  T entry(int kind, int absent) const { return et.row[kind] ? et.row[kind][r] : T(absent); }
};

// The band's rows of x (k or v, [B H N, Dh]) for block b of batch-head bh, [L, Dh]: a pointer
// into x when the band is one part, else the parts' rows copied into `gathered`.
template <typename T>
const T* band_rows(const Problem& P, const Plan& plan, const Plan::Block& b, int64_t bh, const T* x,
                   std::vector<T>& gathered) {
  const std::span<const Plan::Part> parts = plan.parts(b);
  const T* head = x + bh * P.N * P.Dh;
  if (parts.size() == 1) return head + parts[0].j0 * P.Dh;
  for (const Plan::Part& part : parts)
    std::copy(head + part.j0 * P.Dh, head + (part.j0 + part.keys) * P.Dh, gathered.data() + part.col * P.Dh);
  return gathered.data();
}

// The block's rows of x (q, dout or out, [B H Nq, Dh]) for batch-head bh, [rows, Dh]: a pointer
// into x when its queries are consecutive, else their rows copied into `gathered`.
template <typename T>
const T* query_rows(const Problem& P, const Plan& plan, const Plan::Block& b, int64_t bh, const T* x,
                    std::vector<T>& gathered) {
  const T* head = x + bh * P.Nq * P.Dh;
  if (b.consecutive) return head + plan.query(b, 0) * P.Dh;
  for (int64_t r = 0; r < b.rows; ++r)
    std::copy(head + plan.query(b, r) * P.Dh, head + (plan.query(b, r) + 1) * P.Dh, gathered.data() + r * P.Dh);
  return gathered.data();
}

// Where the block's rows of x (out or dq) are written: into x when its queries are consecutive,
// else into `buffer` and then put in place by put_query_rows.
template <typename T>
T* query_rows_target(const Problem& P, const Plan& plan, const Plan::Block& b, int64_t bh, T* x, std::vector<T>& buffer) {
  return b.consecutive ? x + (bh * P.Nq + plan.query(b, 0)) * P.Dh : buffer.data();
}
template <typename T>
void put_query_rows(const Problem& P, const Plan& plan, const Plan::Block& b, int64_t bh, const T* rows, T* x) {
  if (b.consecutive) return;
  for (int64_t r = 0; r < b.rows; ++r)
    std::copy(rows + r * P.Dh, rows + (r + 1) * P.Dh, x + (bh * P.Nq + plan.query(b, r)) * P.Dh);
}

// x's rows of the band's keys (dk or dv of batch-head bh) += rows [L, Dh].
template <typename T>
void add_band_rows(const Problem& P, const Plan& plan, const Plan::Block& b, int64_t bh, const T* rows, T* x) {
  T* head = x + bh * P.N * P.Dh;
  for (const Plan::Part& part : plan.parts(b)) {
    const T* from = rows + part.col * P.Dh;
    T* to = head + part.j0 * P.Dh;
    for (int64_t e = 0; e < part.keys * P.Dh; ++e) to[e] += from[e];
  }
}

// The logits of block b of batch-head bh over its band: S = scale Q K_band^T [rows, L] (kept in C
// as well when C is given: the content the tables' gradients need), the tables along each query's
// runs, -inf outside them and at padded keys. Q: query_rows of q; K_band: band_rows of k.
template <typename T>
void block_logits(const Problem& P, const Plan& plan, const Plan::Block& b, int64_t bh, const EntryTables<T>& et,
                  const T* Q, const T* K_band, T* S, T* C = nullptr) {
  const int64_t L = b.keys, Dh = P.Dh;
  constexpr T kOff = -std::numeric_limits<T>::infinity();
  gemm<T>(false, true, b.rows, L, Dh, static_cast<T>(P.scale), Q, Dh, K_band, Dh, T(0), S, L);
  if (C) std::copy(S, S + b.rows * L, C);
  for (int64_t r = 0; r < b.rows; ++r) {  // the runs' tables, the gaps between them (they come in key order)
    T* s = S + r * L;
    int64_t from = 0;
    for (const row_kernels::Segment& g : plan.segments().of(plan.query(b, r))) {
      const int64_t col = plan.column(b, g);
      std::fill(s + from, s + col, kOff);
      if (et.any())
        for (int64_t t = 0; t < g.len; ++t) s[col + t] = pair_logit<T>(EntryAt<T>{et, s[col + t], g.r0 + t}).s;
      from = col + g.len;
    }
    std::fill(s + from, s + L, kOff);
  }
  if (!P.padded) return;
  for (const Plan::Part& part : plan.parts(b)) {
    const uint8_t* pad = P.padded + (bh / P.H) * P.N + part.j0;
    for (int64_t t = 0; t < part.keys; ++t)
      if (pad[t])
        for (int64_t r = 0; r < b.rows; ++r) S[r * L + part.col + t] = kOff;
  }
}

// s[j] = exp(s[j] - shift) for j < L, in the row kernels' vector exp; returns their sum. A shift of
// +-inf (a row that sees no key) gives zeros.
template <typename T>
T exp_row(T* s, int64_t L, T shift) {
  using Lanes = row_kernels::Lanes<T>;
  if (!std::isfinite(shift)) {
    std::fill(s, s + L, T(0));
    return T(0);
  }
  typename Lanes::Vec sum = Lanes::splat(T(0));
  row_kernels::for_each_vector<T>(L, [&](const auto& lanes, int64_t t) {
    const auto e = Lanes::exp(lanes.load(s + t, -std::numeric_limits<T>::infinity()) - shift);  // 0 past the row
    lanes.store(s + t, e);
    sum += e;
  });
  T total = 0;
  for (int l = 0; l < Lanes::kCount; ++l) total += sum[l];
  return total;
}

}  // namespace detail

// The row kernels' forward (fused_kernels.h) for a call it takes and whose plan pays.
template <typename T>
void forward(const Problem& P, const Plan& plan, const Tables<T>& tables, const T* q, const T* k, const T* v, T* out,
             T* lse) {
  const int64_t Dh = P.Dh, per_head = static_cast<int64_t>(plan.blocks().size()), items = P.B * P.H * per_head;
#pragma omp parallel if (items > 1 && row_kernels::thread_count() > 1)
  {
    std::vector<T> S(static_cast<size_t>(plan.max_rows() * plan.max_keys())), sums(static_cast<size_t>(plan.max_rows()));
    // Blocks of queries or keys that are not one matrix: their rows gathered.
    const size_t gathered = plan.gathers() ? static_cast<size_t>(plan.max_keys() * Dh) : 0;
    std::vector<T> K_gathered(gathered), V_gathered(gathered), Q_gathered(gathered ? static_cast<size_t>(plan.max_rows() * Dh) : 0),
        O_rows(Q_gathered.size());
#pragma omp for schedule(dynamic)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t bh = item / per_head;
      const Plan::Block& b = plan.blocks()[static_cast<size_t>(item % per_head)];
      const int64_t L = b.keys;
      T* o = detail::query_rows_target(P, plan, b, bh, out, O_rows);
      if (L > 0)
        detail::block_logits(P, plan, b, bh, detail::EntryTables<T>(P, tables, bh % P.H),
                             detail::query_rows(P, plan, b, bh, q, Q_gathered),
                             detail::band_rows(P, plan, b, bh, k, K_gathered), S.data());
      for (int64_t r = 0; r < b.rows; ++r) {  // e = exp(s - m) in place, its sum
        T* s = S.data() + r * L;
        const T m = L > 0 ? row_kernels::row_max(s, L) : -std::numeric_limits<T>::infinity();
        sums[static_cast<size_t>(r)] = detail::exp_row(s, L, m);
        lse[bh * P.Nq + plan.query(b, r)] = sums[static_cast<size_t>(r)] > 0 ? m + std::log(sums[static_cast<size_t>(r)])
                                                                     : std::numeric_limits<T>::infinity();
      }
      if (L > 0)
        detail::gemm<T>(false, false, b.rows, Dh, L, T(1), S.data(), L, detail::band_rows(P, plan, b, bh, v, V_gathered),
                        Dh, T(0), o, Dh);
      for (int64_t r = 0; r < b.rows; ++r) {
        const T total = sums[static_cast<size_t>(r)];
        for (int64_t d = 0; d < Dh; ++d) o[r * Dh + d] = total > 0 ? o[r * Dh + d] / total : T(0);  // no key: 0
      }
      detail::put_query_rows(P, plan, b, bh, o, out);
    }
  }
}

// The row kernels' backward for a call it takes and whose plan pays: dq, dk, dv and the
// wanted tables' gradients.
template <typename T>
void backward(const Problem& P, const Plan& plan, const Tables<T>& tables, const T* q, const T* k, const T* v,
              const T* out, const T* lse, const T* dout, const Grads<T>& grads) {
  const int64_t Dh = P.Dh, head = P.N * Dh, BH = P.B * P.H;
  const int64_t per_head = static_cast<int64_t>(plan.blocks().size()), items = BH * per_head;
  const int threads = items > 1 ? row_kernels::thread_count() : 1;
  // dk, dv and the tables' gradients: one copy per thread, summed at the end (blocks of one head
  // run on several threads).
  std::vector<T> dk_copies(static_cast<size_t>(threads * BH * head), T(0)), dv_copies(dk_copies.size(), T(0));
  const row_kernels::ThreadTableGrads<T> table_grads(P, grads, threads);
  const bool tabled = detail::EntryTables<T>(P, tables, 0).any();
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<T> S(static_cast<size_t>(plan.max_rows() * plan.max_keys())), dS(S.size()), C(tabled ? S.size() : 0);
    // Blocks of queries or keys that are not one matrix: their rows, and their gradients, gathered.
    const size_t gathered = plan.gathers() ? static_cast<size_t>(plan.max_keys() * Dh) : 0;
    std::vector<T> K_gathered(gathered), V_gathered(gathered), dK_band(gathered), dV_band(gathered);
    std::vector<T> Q_gathered(gathered ? static_cast<size_t>(plan.max_rows() * Dh) : 0), dO_gathered(Q_gathered.size()),
        dQ_rows(Q_gathered.size());
    const int tid = row_kernels::thread_id();
    T* dk_mine = dk_copies.data() + tid * BH * head;
    T* dv_mine = dv_copies.data() + tid * BH * head;
    const auto dtable_mine = table_grads.of_thread(tid);
#pragma omp for schedule(dynamic)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t bh = item / per_head;
      const Plan::Block& b = plan.blocks()[static_cast<size_t>(item % per_head)];
      const int64_t L = b.keys, queries = bh * P.Nq;
      if (L == 0) {  // no query of the block sees a key: no gradient
        for (int64_t r = 0; r < b.rows; ++r)
          std::fill(grads.dq + (queries + plan.query(b, r)) * Dh, grads.dq + (queries + plan.query(b, r) + 1) * Dh, T(0));
        continue;
      }
      const T* Q = detail::query_rows(P, plan, b, bh, q, Q_gathered);
      const detail::EntryTables<T> et(P, tables, bh % P.H);
      const T* K_band = detail::band_rows(P, plan, b, bh, k, K_gathered);
      const T* V_band = detail::band_rows(P, plan, b, bh, v, V_gathered);
      detail::block_logits(P, plan, b, bh, et, Q, K_band, S.data(), tabled ? C.data() : nullptr);
      for (int64_t r = 0; r < b.rows; ++r)  // P = exp(s - lse): 0 in a row that sees no key (lse = +inf)
        detail::exp_row(S.data() + r * L, L, lse[queries + plan.query(b, r)]);
      const T* dO = detail::query_rows(P, plan, b, bh, dout, dO_gathered);
      detail::gemm<T>(false, true, b.rows, L, Dh, T(1), dO, Dh, V_band, Dh, T(0), dS.data(), L);  // dP = dO V^T
      for (int64_t r = 0; r < b.rows; ++r) {  // dS = P (dP - D), D = dout_i . out_i
        T D = 0;
        const T* o = out + (queries + plan.query(b, r)) * Dh;
        for (int64_t d = 0; d < Dh; ++d) D += dO[r * Dh + d] * o[d];
        const T* p = S.data() + r * L;
        T* ds = dS.data() + r * L;
        for (int64_t j = 0; j < L; ++j) ds[j] = p[j] * (ds[j] - D);
      }
      if (tabled) {  // along the runs: the tables' gradients, and dS becomes the content's gradient
        std::array<T*, kTableKindCount> d_table{};
        for (size_t kind = 0; kind < kTableKindCount; ++kind)
          if (takes_kind(kind) && dtable_mine[kind]) d_table[kind] = dtable_mine[kind] + (bh % P.H) * P.R;
        for (int64_t r = 0; r < b.rows; ++r)
          for (const row_kernels::Segment& g : plan.segments().of(plan.query(b, r)))
            for (int64_t t = 0, col = plan.column(b, g); t < g.len; ++t) {
              const size_t u = static_cast<size_t>(r * L + col + t);
              const detail::EntryAt<T> at{et, C[u], g.r0 + t};
              const PairGradients<T> d = pair_gradients(at, pair_logit<T>(at), dS[u]);
              dS[u] = d.content;
              for (size_t kind = 0; kind < kTableKindCount; ++kind)
                if (d_table[kind]) d_table[kind][g.r0 + t] += d.entry[kind];
            }
      }
      const T scale = static_cast<T>(P.scale);
      T* dQ = detail::query_rows_target(P, plan, b, bh, grads.dq, dQ_rows);
      detail::gemm<T>(false, false, b.rows, Dh, L, scale, dS.data(), L, K_band, Dh, T(0), dQ, Dh);  // dQ = scale dS K
      detail::put_query_rows(P, plan, b, bh, dQ, grads.dq);
      // dK += scale dS^T Q, dV += P^T dO: in place for a band of one part, else through dK_band, dV_band.
      const bool in_place = b.parts == 1;
      T* dK = in_place ? dk_mine + (bh * P.N + plan.parts(b)[0].j0) * Dh : dK_band.data();
      T* dV = in_place ? dv_mine + (bh * P.N + plan.parts(b)[0].j0) * Dh : dV_band.data();
      const T beta = in_place ? T(1) : T(0);
      detail::gemm<T>(true, false, L, Dh, b.rows, scale, dS.data(), L, Q, Dh, beta, dK, Dh);
      detail::gemm<T>(true, false, L, Dh, b.rows, T(1), S.data(), L, dO, Dh, beta, dV, Dh);
      if (!in_place) {
        detail::add_band_rows(P, plan, b, bh, dK, dk_mine);
        detail::add_band_rows(P, plan, b, bh, dV, dv_mine);
      }
    }
  }
  cpu::parallel_for(BH * head, threads, [&](int64_t x) {
    T dk = 0, dv = 0;
    for (int th = 0; th < threads; ++th) dk += dk_copies[th * BH * head + x], dv += dv_copies[th * BH * head + x];
    grads.dk[x] = dk;
    grads.dv[x] = dv;
  });
  table_grads.sum_into_targets();
}

}  // namespace
}  // namespace posgrad::fused_detail::tiled
