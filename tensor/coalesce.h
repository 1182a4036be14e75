// Axis coalescing for K same-shaped strided operands: size-1 axes are dropped and an axis is
// merged into the one before it whenever every operand's strides allow it (stride_prev ==
// stride * size), so a contiguous tensor becomes one axis and a broadcast or transposed view
// keeps only the axes it needs. Both backends walk operands through this one rule: the CPU's
// strided_for_each (tensor/cpu/strided_loop.h) and the CUDA kernels' Strided<K>
// (tensor/cuda/strided.h). Element order (row-major over the original shape) is unchanged.
#pragma once

#include <array>
#include <cstddef>

#include "tensor/shape.h"

namespace posgrad {

template <size_t K>
struct CoalescedAxes {
  Shape shape;                   // coalesced shape (at least one axis)
  std::array<Shape, K> strides;  // coalesced strides per operand
};

template <size_t K>
CoalescedAxes<K> coalesce(const Shape& shape, const std::array<Shape, K>& strides) {
  CoalescedAxes<K> r;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;  // size-1 axes carry no information
    bool merge = !r.shape.empty();
    for (size_t k = 0; k < K && merge; ++k)
      merge = r.strides[k].back() == strides[k][i] * shape[i];
    if (merge) {
      r.shape.back() *= shape[i];
      for (size_t k = 0; k < K; ++k) r.strides[k].back() = strides[k][i];
    } else {
      r.shape.push_back(shape[i]);
      for (size_t k = 0; k < K; ++k) r.strides[k].push_back(strides[k][i]);
    }
  }
  if (r.shape.empty()) {  // a scalar, or only size-1 axes: one element
    r.shape.push_back(1);
    for (size_t k = 0; k < K; ++k) r.strides[k].push_back(1);
  }
  return r;
}

}  // namespace posgrad
