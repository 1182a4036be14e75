// The fused attention kernels' entry points (see fused_kernels.h): each call goes to the copy of
// the kernels compiled for the vector width that suits its runs of keys (fused_kernels_impl.h),
// with its tables re-laid per query column first where that joins a query's runs
// (column_tables.h).
// Shapes: letters of shape_legend.h.
#include "attention/fused/fused_kernels.h"

#include <algorithm>

#include "attention/fused/column_tables.h"

namespace posgrad::fused_detail {

#define POSGRAD_FUSED_DECLARE(variant)                                                                             \
  namespace variant {                                                                                              \
  template <typename T>                                                                                            \
  void forward(const Problem& P, const Tables<T>& tables, const T* q, const T* k, const T* v, T* out, T* lse,     \
               T* dense_probs);                                                                                    \
  template <typename T>                                                                                            \
  void backward(const Problem& P, const Tables<T>& tables, const T* q, const T* k, const T* v, const T* out,      \
                const T* lse, const T* dout, const Grads<T>& grads);                                               \
  }
POSGRAD_FUSED_DECLARE(wide)
POSGRAD_FUSED_DECLARE(narrow)
#undef POSGRAD_FUSED_DECLARE

namespace {

// Runs of keys shorter than this (the last grid dim's box, on grids of 2 or more dims) go to the
// 256-bit copy: measured on the thesis step, 2-D 32x32 with its span was 26% faster there and
// 1-D N = 1024 9% slower (with scalar last steps; since the last steps are masked vector steps
// both copies time the same on the 2-D arm, 2026-11-24).
constexpr int64_t kShortRun = 64;

bool short_runs(const Problem& P) {
  const RowGeometry& g = P.geometry;
  if (g.structure.size() < 2 || g.column_tables) return false;
  const size_t last = g.structure.size() - 1;
  return std::min(g.structure[last], g.hi[last] - g.lo[last] + 1) < kShortRun;
}

}  // namespace

template <typename T>
void forward(const Problem& P, const Tables<T>& tables, const T* q, const T* k, const T* v, T* out, T* lse,
             T* dense_probs) {
  if (use_column_tables(P)) {
    const ColumnTables<T> column(P, tables);
    return wide::forward<T>(column.problem(), column.tables(), q, k, v, out, lse, dense_probs);
  }
  if (short_runs(P)) narrow::forward<T>(P, tables, q, k, v, out, lse, dense_probs);
  else wide::forward<T>(P, tables, q, k, v, out, lse, dense_probs);
}

template <typename T>
void backward(const Problem& P, const Tables<T>& tables, const T* q, const T* k, const T* v, const T* out,
              const T* lse, const T* dout, const Grads<T>& grads) {
  if (use_column_tables(P)) {
    ColumnTables<T> column(P, tables);
    wide::backward<T>(column.problem(), column.tables(), q, k, v, out, lse, dout, column.grads_for(grads));
    return column.fold(grads);
  }
  if (short_runs(P)) narrow::backward<T>(P, tables, q, k, v, out, lse, dout, grads);
  else wide::backward<T>(P, tables, q, k, v, out, lse, dout, grads);
}

POSGRAD_INSTANTIATE_FUSED_KERNELS()

}  // namespace posgrad::fused_detail
