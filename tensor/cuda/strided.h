// Strided<K>: K same-shaped strided operands as a kernel argument (fixed-size arrays, passed by
// value), built on the host from the coalesced axes (tensor/coalesce.h), and strided_offsets,
// which turns a linear element index into each operand's element offset inside a kernel.
// strided_offsets is POSGRAD_HD, so tests/tensor/test_cuda_host_logic.cpp runs the GPU's own
// index arithmetic on the CPU. Deliberately no kernels here.
#pragma once

#include <cstdint>

#include "tensor/host_device.h"

#ifndef __CUDACC__
#include <array>

#include "tensor/coalesce.h"
#include "tensor/error.h"
#endif

namespace posgrad::cuda {

// Element i (row-major over `sizes`) of operand k is at base_k + sum_d idx_d * strides[k][d].
inline constexpr int kMaxDims = 10;
template <int K>
struct Strided {
  int ndim = 1;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[K][kMaxDims] = {};
};

// Element offsets of linear index i (row-major over s.sizes) in each of the K operands.
template <int K>
POSGRAD_HD void strided_offsets(const Strided<K>& s, int64_t i, int64_t (&off)[K]) {
  if (s.ndim == 1) {
    for (int k = 0; k < K; ++k) off[k] = i * s.strides[k][0];
    return;
  }
  for (int k = 0; k < K; ++k) off[k] = 0;
  for (int d = s.ndim - 1; d >= 0; --d) {
    const int64_t size = s.sizes[d];
    const int64_t idx = i % size;
    i /= size;
    for (int k = 0; k < K; ++k) off[k] += idx * s.strides[k][d];
  }
}

#ifndef __CUDACC__
// The kernel argument for K operands of shape `shape` with the given strides (host side only).
// More than kMaxDims axes that cannot be merged is an Error naming `op`.
template <int K>
Strided<K> make_strided(const Shape& shape, const std::array<Shape, K>& strides, const char* op) {
  const CoalescedAxes<K> c = coalesce<K>(shape, strides);
  const int nd = static_cast<int>(c.shape.size());
  if (nd > kMaxDims)
    fail("{}: a view with more than {} axes that cannot be merged is not supported on CUDA (call "
         ".contiguous() first)", op, kMaxDims);
  Strided<K> s;
  s.ndim = nd;
  s.numel = shape_numel(shape);
  for (int d = 0; d < nd; ++d) {
    s.sizes[d] = c.shape[d];
    for (int k = 0; k < K; ++k) s.strides[k][d] = c.strides[k][d];
  }
  return s;
}
#endif

}  // namespace posgrad::cuda
