// How a [rows, cols] matrix view is laid out for a GEMM library: row-major (unit column stride)
// or column-major (unit row stride, i.e. a transposed view) with its leading dimension. Both
// backends read transposes off the strides with this one rule, so a transposed view reaches
// the CPU SGEMM and cuBLAS as a flag, never as a copy. A view with neither axis of unit stride
// (or rows overlapping, as in a stride-0 broadcast) is not `ok`: gemm_operand copies it first.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tensor/tensor.h"

namespace posgrad {

struct MatrixLayout {
  bool ok = false;
  bool trans = false;  // column-major storage
  int64_t ld = 0;      // leading dimension: distance between rows (row-major) or columns
};

inline MatrixLayout matrix_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  // Row-major: unit column stride, rows `row_stride` apart (a single row may have any stride).
  if ((col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= cols))
    return {true, false, std::max<int64_t>({rows == 1 ? cols : row_stride, cols, 1})};
  // Column-major: unit row stride, columns `col_stride` apart.
  if ((row_stride == 1 || rows == 1) && (cols == 1 || col_stride >= rows))
    return {true, true, std::max<int64_t>({cols == 1 ? rows : col_stride, rows, 1})};
  return {};
}

// The layout of batched operand t [batch, rows, cols] for GEMM; a view with no GEMM layout is
// first replaced by its contiguous copy (so the result is always ok).
inline MatrixLayout gemm_operand(Tensor& t) {
  MatrixLayout layout = matrix_layout(t.size(1), t.size(2), t.stride(1), t.stride(2));
  if (!layout.ok) {
    t = t.contiguous();
    layout = matrix_layout(t.size(1), t.size(2), t.stride(1), t.stride(2));
  }
  return layout;
}

}  // namespace posgrad
