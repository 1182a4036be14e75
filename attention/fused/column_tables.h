// Column tables for the fused kernels (fused_kernels.h). On a grid of 2 or more dims whose key box
// spans the whole last dim, every query sees whole rows of keys; in the relative tables, though,
// one row's entries (offsets -(S-1) .. S-1 along the last dim) are 2 S - 1 apart from the next
// row's, so the kernels visit one run of S keys per row, each with its loop overhead and short
// vectors (a 32 x 32 image: 32 runs of 32 keys per query).
//
// Re-laid per query column x (the query's last coordinate), with entry (a, x') of table x equal to
// entry (a, x' - x + S - 1) of the original (a: the leading dims' relative row, x': the key's last
// coordinate), the rows a query sees follow each other in keys and in entries, and its keys are
// one run (RowGeometry::column_tables). The kernels then see S times as many "heads" (head h of
// column x is h S + x) and R = A S entries per table instead of A (2 S - 1).
//
// A box that clips the last dim but is at least S wide there (a Gaussian span's early, wide box:
// offsets -20 .. 20 on a 32 x 32 grid) is widened to whole rows too, so that a query's runs still
// join: the keys outside its box get a logit of -inf from one more re-laid table, the logit
// offset (0 or -inf), and so weigh nothing, forward and backward. The kernels then compute up to
// 1 / 0.75 as many scores as the box holds, in one long run per query instead of up to S short
// ones. Narrower boxes keep their exact runs.
//
// Costs: the tables grow S-fold for the call (for the thesis model, 32 x 32 with Dh = 8 and H = 8,
// about 16 MB for the query table, per layer and call), built before and folded back after.
// Deliberately not here: the kernels.
// Shapes: letters of shape_legend.h; S the grid's last dim, A the product of 2 S_d - 1 over the
// leading dims.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "attention/fused/fused_kernels.h"
#include "tensor/cpu/parallel.h"
#include "tensor/tensor.h"

namespace posgrad::fused_detail {

// Whether column tables pay for a call on a grid `structure` (2+ dims) with key box [lo, hi]:
// the box is at least S wide along the last dim (whole rows, or widened to them), and the tables'
// growth stays within bounds: the re-laid query table at most 2^22 entries (16 MiB in float32;
// the thesis model's 32 x 32 grid with H = 8, Dh = 8 needs 4.1 M; the backward holds it, its
// gradient and one gradient copy per thread).
inline bool column_tables_pay(const std::vector<int64_t>& structure, const std::vector<int64_t>& lo,
                              const std::vector<int64_t>& hi, int64_t H, int64_t Dh) {
  if (structure.size() < 2) return false;
  const size_t last = structure.size() - 1;
  const int64_t S = structure[last];
  if (S < 2 || hi[last] - lo[last] + 1 < S) return false;
  int64_t A = 1;  // the leading dims' relative rows
  for (size_t d = 0; d < last; ++d) A *= 2 * structure[d] - 1;
  return H * S * std::max<int64_t>(Dh, 1) * A * S <= (int64_t{1} << 22);
}

inline bool use_column_tables(const Problem& P) {
  const RowGeometry& g = P.geometry;
  if (g.column_tables || P.table_columns != 1 || !g.is_self()) return false;  // self-attention only
  return column_tables_pay(g.structure, g.lo, g.hi, P.H, P.Dh);
}

// Whether the box leaves out part of the last dim (then the logit offset masks it).
inline bool clips_last_dim(const RowGeometry& g) {
  const size_t last = g.structure.size() - 1;
  return g.lo[last] > -(g.structure[last] - 1) || g.hi[last] < g.structure[last] - 1;
}

// The box [lo, hi] as the kernels compute it with column tables: the last dim whole.
inline void widen_last_dim(const std::vector<int64_t>& structure, std::vector<int64_t>& lo, std::vector<int64_t>& hi) {
  lo.back() = -(structure.back() - 1);
  hi.back() = structure.back() - 1;
}

// P with column tables: S table heads per head, R = A S, runs joined across rows (the last dim's
// box widened to the whole dim).
inline Problem column_problem(const Problem& P) {
  Problem C = P;
  const size_t last = P.geometry.structure.size() - 1;
  const int64_t S = P.geometry.structure[last];
  C.R = P.R / (2 * S - 1) * S;
  C.table_columns = S;
  C.geometry.column_tables = true;
  widen_last_dim(C.geometry.structure, C.geometry.lo, C.geometry.hi);
  return C;
}

// The re-laid copies of a call's tables and, for the backward, the column layout's gradient
// buffers and their fold back into the original tables' gradients.
template <typename T>
class ColumnTables {
 public:
  ColumnTables(const Problem& P, const Tables<T>& tables) : P_(P), C_(column_problem(P)) {
    const int64_t S = C_.table_columns, Rc = C_.R;
    source_entry_.resize(static_cast<size_t>(S * Rc));
    for (int64_t x = 0; x < S; ++x)
      for (int64_t rc = 0; rc < Rc; ++rc)
        source_entry_[x * Rc + rc] = (rc / S) * (2 * S - 1) + (rc % S) - x + S - 1;
    tables_.key_bias = tables.key_bias;  // [H, Dh]: not relative
    tables_.query_table_t = relay(tables.query_table_t, P.Dh, table_t_);
    tables_.bias = relay(tables.bias, 1, bias_);
    tables_.modulation = relay(tables.modulation, 1, modulation_);
    tables_.positional_modulation = relay(tables.positional_modulation, 1, positional_modulation_);
    tables_.prob_mask = relay(tables.prob_mask, 1, prob_mask_);
    if (clips_last_dim(P.geometry)) tables_.logit_offset = box_offsets();
  }
  const Problem& problem() const { return C_; }
  const Tables<T>& tables() const { return tables_; }

  // Gradient pointers for the kernels: `grads` with every relative table's gradient redirected to
  // a column-layout buffer (kept here until fold).
  Grads<T> grads_for(const Grads<T>& grads) {
    Grads<T> g = grads;
    g.query_table_t = buffer(grads.query_table_t, P_.Dh, g_table_t_);
    g.bias = buffer(grads.bias, 1, g_bias_);
    g.modulation = buffer(grads.modulation, 1, g_modulation_);
    g.positional_modulation = buffer(grads.positional_modulation, 1, g_positional_modulation_);
    g.prob_mask = buffer(grads.prob_mask, 1, g_prob_mask_);
    return g;
  }
  // Sums the column gradients into `grads`' relative tables (overwriting them).
  void fold(const Grads<T>& grads) const {
    fold_one(g_table_t_, P_.Dh, grads.query_table_t);
    fold_one(g_bias_, 1, grads.bias);
    fold_one(g_modulation_, 1, grads.modulation);
    fold_one(g_positional_modulation_, 1, grads.positional_modulation);
    fold_one(g_prob_mask_, 1, grads.prob_mask);
  }

 private:
  // A table [H, rows, R] (rows = Dh for the query table, 1 for the others) -> [H S, rows, Rc].
  const T* relay(const T* table, int64_t rows, Tensor& out) const {
    if (!table) return nullptr;
    const int64_t S = C_.table_columns, Rc = C_.R, R = P_.R;
    out = Tensor::empty({P_.H * S, rows, Rc}, dtype_of<T>());
    T* dst = out.data<T>();
    cpu::parallel_for(P_.H * S, rows * Rc, [&](int64_t hx) {
      const int64_t h = hx / S, x = hx % S;
      const int64_t* entry = source_entry_.data() + x * Rc;
      for (int64_t d = 0; d < rows; ++d) {
        const T* src_row = table + (h * rows + d) * R;
        T* dst_row = dst + (hx * rows + d) * Rc;
        for (int64_t rc = 0; rc < Rc; ++rc) dst_row[rc] = src_row[entry[rc]];
      }
    });
    return dst;
  }
  // [H S, 1, Rc]: entry (a, x') of column x is 0 when the offset x' - x lies in the original box's
  // last dim, else -inf.
  const T* box_offsets() {
    const int64_t S = C_.table_columns, Rc = C_.R, last = static_cast<int64_t>(P_.geometry.structure.size()) - 1;
    const int64_t lo = P_.geometry.lo[last], hi = P_.geometry.hi[last];
    offsets_ = Tensor::empty({P_.H * S, 1, Rc}, dtype_of<T>());
    T* dst = offsets_.data<T>();
    for (int64_t hx = 0; hx < P_.H * S; ++hx) {
      const int64_t x = hx % S;
      for (int64_t rc = 0; rc < Rc; ++rc) {
        const int64_t offset = rc % S - x;
        dst[hx * Rc + rc] = offset >= lo && offset <= hi ? T(0) : -std::numeric_limits<T>::infinity();
      }
    }
    return dst;
  }
  T* buffer(const T* wanted, int64_t rows, Tensor& out) const {
    if (!wanted) return nullptr;
    out = Tensor::empty({P_.H * C_.table_columns, rows, C_.R}, dtype_of<T>());
    return out.data<T>();
  }
  // [H S, rows, Rc] -> [H, rows, R]: entry r of head h sums the S columns' entries that map to it.
  void fold_one(const Tensor& column, int64_t rows, T* target) const {
    if (!target) return;
    const int64_t S = C_.table_columns, Rc = C_.R, R = P_.R;
    const T* src = column.data<T>();
    cpu::parallel_for(P_.H * rows, S * Rc, [&](int64_t hd) {
      const int64_t h = hd / rows, d = hd % rows;
      T* dst_row = target + hd * R;
      for (int64_t r = 0; r < R; ++r) dst_row[r] = T(0);
      for (int64_t x = 0; x < S; ++x) {
        const int64_t* entry = source_entry_.data() + x * Rc;
        const T* src_row = src + ((h * S + x) * rows + d) * Rc;
        for (int64_t rc = 0; rc < Rc; ++rc) dst_row[entry[rc]] += src_row[rc];
      }
    });
  }

  Problem P_, C_;
  std::vector<int64_t> source_entry_;  // [S, Rc]: the original entry of column x's entry rc
  Tables<T> tables_;
  Tensor table_t_, bias_, modulation_, positional_modulation_, prob_mask_, offsets_;
  Tensor g_table_t_, g_bias_, g_modulation_, g_positional_modulation_, g_prob_mask_;
};

}  // namespace posgrad::fused_detail
