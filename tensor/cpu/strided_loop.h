// strided_for_each: the one loop that walks K same-shaped strided operands (views, broadcasts
// with stride 0, transposes). It merges axes that are contiguous for every operand
// (tensor/coalesce.h), then calls a row function on runs of the innermost axis, in parallel over
// rows. Kernels supply the row function; this file holds no arithmetic.
#pragma once

#include <array>
#include <vector>

#include "tensor/coalesce.h"
#include "tensor/cpu/parallel.h"
#include "tensor/shape.h"

namespace posgrad::cpu {

// row(offsets, n, inner_strides): process n elements starting at element offsets[k] of each
// operand, stepping inner_strides[k].
template <size_t K, typename RowFn>
void strided_for_each(const Shape& shape, const std::array<Shape, K>& strides, RowFn&& row) {
  const int64_t numel = shape_numel(shape);
  if (numel == 0) return;
  const CoalescedAxes<K> r = coalesce<K>(shape, strides);
  const int64_t nd = static_cast<int64_t>(r.shape.size());
  const int64_t inner = r.shape[nd - 1];
  // Split long inner runs into chunks so a single contiguous array still uses every thread.
  const int64_t chunk = inner > 16384 ? 8192 : inner;
  const int64_t chunks_per_row = (inner + chunk - 1) / chunk;
  const int64_t rows = numel / inner;
  std::array<int64_t, K> inner_strides;
  for (size_t k = 0; k < K; ++k) inner_strides[k] = r.strides[k][nd - 1];
  parallel_for(rows * chunks_per_row, std::min(chunk, inner), [&](int64_t task) {
    int64_t rest = task / chunks_per_row;
    const int64_t c = task % chunks_per_row;
    std::array<int64_t, K> off{};
    for (int64_t d = nd - 2; d >= 0; --d) {
      const int64_t i = rest % r.shape[d];
      rest /= r.shape[d];
      for (size_t k = 0; k < K; ++k) off[k] += i * r.strides[k][d];
    }
    const int64_t start = c * chunk;
    for (size_t k = 0; k < K; ++k) off[k] += start * inner_strides[k];
    row(off, std::min(chunk, inner - start), inner_strides);
  });
}

}  // namespace posgrad::cpu
