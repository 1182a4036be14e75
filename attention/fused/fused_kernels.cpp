// The fused attention kernels' entry points (see fused_kernels.h): the tiled kernels where heads
// are 16 wide or more, the tables per-entry numbers at most and the blocks' bands pay
// (tiled_kernels.h), else the row kernels
// (fused_kernels_impl.h), with the tables re-laid per query column first where that joins a
// query's runs (column_tables.h).
// Shapes: letters of shape_legend.h.
#include "attention/fused/fused_kernels.h"

#include "attention/fused/column_tables.h"
#include "attention/fused/fused_kernels_impl.h"
#include "attention/fused/tiled_kernels.h"

namespace posgrad::fused_detail {

template <typename T>
void forward(const Problem& P, const Tables<T>& tables, const T* q, const T* k, const T* v, T* out, T* lse) {
  if (tiled::takes(P, tables))
    if (const tiled::Plan plan(P, sizeof(T)); plan.pays()) return tiled::forward<T>(P, plan, tables, q, k, v, out, lse);
  if (use_column_tables(P)) {
    const ColumnTables<T> column(P, tables);
    return row_kernels::forward<T>(column.problem(), column.tables(), q, k, v, out, lse);
  }
  row_kernels::forward<T>(P, tables, q, k, v, out, lse);
}

template <typename T>
void backward(const Problem& P, const Tables<T>& tables, const T* q, const T* k, const T* v, const T* out,
              const T* lse, const T* dout, const Grads<T>& grads) {
  if (tiled::takes(P, tables))
    if (const tiled::Plan plan(P, sizeof(T)); plan.pays())
      return tiled::backward<T>(P, plan, tables, q, k, v, out, lse, dout, grads);
  if (use_column_tables(P)) {
    ColumnTables<T> column(P, tables);
    row_kernels::backward<T>(column.problem(), column.tables(), q, k, v, out, lse, dout, column.grads_for(grads));
    return column.fold(grads);
  }
  row_kernels::backward<T>(P, tables, q, k, v, out, lse, dout, grads);
}

template void forward<float>(const Problem&, const Tables<float>&, const float*, const float*, const float*, float*,
                             float*);
template void forward<double>(const Problem&, const Tables<double>&, const double*, const double*, const double*,
                              double*, double*);
template void backward<float>(const Problem&, const Tables<float>&, const float*, const float*, const float*,
                              const float*, const float*, const float*, const Grads<float>&);
template void backward<double>(const Problem&, const Tables<double>&, const double*, const double*, const double*,
                               const double*, const double*, const double*, const Grads<double>&);

}  // namespace posgrad::fused_detail
