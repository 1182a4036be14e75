// strided_for_each: the one loop that walks K same-shaped strided operands (views, broadcasts
// with stride 0, transposes). It merges axes that are contiguous for every operand
// (tensor/coalesce.h), then calls a row function on runs of the innermost axis, in parallel over
// rows. Kernels supply the row function; this file holds no arithmetic.
#pragma once

#include <algorithm>
#include <array>
#include <vector>

#include "tensor/coalesce.h"
#include "tensor/cpu/parallel.h"
#include "tensor/shape.h"

namespace posgrad::cpu {

// row(offsets, n, inner_strides): process n elements starting at element offsets[k] of each
// operand, stepping inner_strides[k].
//
// Rows of the innermost axis go in tasks of several rows (at least kTaskElements elements) when
// rows are short: a task finds its first row's offsets by dividing its index over the outer
// axes once, then steps to each next row like an odometer (add the last outer axis's strides;
// at the end of an axis, carry into the one before). A transpose of [B, N, H, Dh] to
// [B, H, N, Dh] has rows of Dh = 16 elements, where a division per axis and row cost more than
// the copy. Rows longer than 16384 elements are split into chunks of 8192 instead, so a single
// contiguous array still uses every thread.
// The outer indices of a row, on the stack for up to 8 coalesced axes (every tensor posgrad
// makes), on the heap beyond: a task allocates nothing in the common case.
class OuterIndex {
 public:
  explicit OuterIndex(int64_t nd) {
    if (nd > static_cast<int64_t>(small_.size())) large_.resize(static_cast<size_t>(nd));
  }
  int64_t* data() { return large_.empty() ? small_.data() : large_.data(); }

 private:
  std::array<int64_t, 8> small_{};
  std::vector<int64_t> large_;
};

template <size_t K, typename RowFn>
void strided_for_each(const Shape& shape, const std::array<Shape, K>& strides, RowFn&& row) {
  const int64_t numel = shape_numel(shape);
  if (numel == 0) return;
  const CoalescedAxes<K> r = coalesce<K>(shape, strides);
  const int64_t nd = static_cast<int64_t>(r.shape.size());
  const int64_t inner = r.shape[nd - 1];
  const int64_t rows = numel / inner;
  std::array<int64_t, K> inner_strides;
  for (size_t k = 0; k < K; ++k) inner_strides[k] = r.strides[k][nd - 1];
  // The offsets of row `index` (a row-major index over the outer axes), and its outer indices
  // in `at` (nd - 1 of them).
  auto locate = [&](int64_t index, std::array<int64_t, K>& off, int64_t* at) {
    off.fill(0);
    for (int64_t d = nd - 2; d >= 0; --d) {
      at[d] = index % r.shape[d];
      index /= r.shape[d];
      for (size_t k = 0; k < K; ++k) off[k] += at[d] * r.strides[k][d];
    }
  };
  if (inner > 16384) {
    constexpr int64_t kChunk = 8192;
    const int64_t chunks_per_row = (inner + kChunk - 1) / kChunk;
    parallel_for(rows * chunks_per_row, kChunk, [&](int64_t task) {
      std::array<int64_t, K> off;
      OuterIndex at(nd);
      locate(task / chunks_per_row, off, at.data());
      const int64_t start = task % chunks_per_row * kChunk;
      for (size_t k = 0; k < K; ++k) off[k] += start * inner_strides[k];
      row(off, std::min(kChunk, inner - start), inner_strides);
    });
    return;
  }
  constexpr int64_t kTaskElements = 4096;
  const int64_t rows_per_task = std::max<int64_t>(1, kTaskElements / inner);
  const int64_t tasks = (rows + rows_per_task - 1) / rows_per_task;
  parallel_for(tasks, rows_per_task * inner, [&](int64_t task) {
    std::array<int64_t, K> off;
    OuterIndex index(nd);
    int64_t* at = index.data();
    const int64_t first = task * rows_per_task, last = std::min(rows, first + rows_per_task);
    locate(first, off, at);
    for (int64_t i = first; i < last; ++i) {
      row(off, inner, inner_strides);
      // The next row: one step along the last outer axis, carrying into the axes before it.
      for (int64_t d = nd - 2; d >= 0; --d) {
        for (size_t k = 0; k < K; ++k) off[k] += r.strides[k][d];
        if (++at[d] < r.shape[d]) break;
        for (size_t k = 0; k < K; ++k) off[k] -= r.shape[d] * r.strides[k][d];
        at[d] = 0;
      }
    }
  });
}

}  // namespace posgrad::cpu
