// Helpers shared by the .cu files: the KType -> C++ type switch, grid sizes for grid-stride
// loops, and block-wide reductions (strided element offsets are in strided.h). Device code and
// launch arithmetic only; no posgrad headers beyond kernels.h/check.h (nvcc stays fast).
#pragma once

#include <cuda_runtime.h>
#include <math_constants.h>

#include <cstdint>
#include <type_traits>

#include "tensor/cuda/check.h"
#include "tensor/cuda/kernels.h"

namespace posgrad::cuda {

inline constexpr int kThreads = 256;  // threads per block for elementwise and row kernels

// Blocks for a grid-stride loop over n items (capped; each thread then loops).
inline unsigned grid_for(int64_t n, int threads = kThreads) {
  const int64_t blocks = (n + threads - 1) / threads;
  const int64_t cap = int64_t{1} << 20;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > cap ? cap : blocks));
}

// Calls fn(T{}) with T the C++ type of `type`; the kernel launchers read T back with
// `using T = decltype(tag);` (C++17, so nvcc needs no C++20 mode).
template <typename Fn>
void dispatch_type(KType type, Fn&& fn) {
  switch (type) {
    case KType::F32: fn(float{}); return;
    case KType::F64: fn(double{}); return;
    case KType::I64: fn(int64_t{}); return;
  }
}
template <typename Fn>
void dispatch_float_type(KType type, Fn&& fn) {
  switch (type) {
    case KType::F32: fn(float{}); return;
    case KType::F64: fn(double{}); return;
    case KType::I64: return;  // the host side has already rejected int64
  }
}

// Block-wide reduction of one value per thread with a binary functor; every thread gets the
// result. `shared` holds blockDim.x / 32 values. blockDim.x must be a multiple of 32.
template <typename V, typename Combine>
__device__ V block_reduce(V value, Combine combine, V* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
#pragma unroll
  for (int delta = 16; delta > 0; delta /= 2) value = combine(value, __shfl_down_sync(0xffffffffu, value, delta));
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < warps ? shared[lane] : shared[0];
    for (int delta = 16; delta > 0; delta /= 2) {
      const V other = __shfl_down_sync(0xffffffffu, value, delta);
      if (lane + delta < warps) value = combine(value, other);
    }
    if (lane == 0) shared[0] = value;
  }
  __syncthreads();
  return shared[0];
}

// Float/double overloads of the math functions (float uses the single-precision versions).
template <typename T> struct Math;
template <> struct Math<float> {
  static __device__ float exp(float x) { return expf(x); }
  static __device__ float log(float x) { return logf(x); }
  static __device__ float sqrt(float x) { return sqrtf(x); }
  static __device__ float sin(float x) { return sinf(x); }
  static __device__ float cos(float x) { return cosf(x); }
  static __device__ float tanh(float x) { return tanhf(x); }
  static __device__ float erf(float x) { return erff(x); }
  static __device__ float pow(float x, float y) { return powf(x, y); }
  static __device__ float abs(float x) { return fabsf(x); }
};
template <> struct Math<double> {
  static __device__ double exp(double x) { return ::exp(x); }
  static __device__ double log(double x) { return ::log(x); }
  static __device__ double sqrt(double x) { return ::sqrt(x); }
  static __device__ double sin(double x) { return ::sin(x); }
  static __device__ double cos(double x) { return ::cos(x); }
  static __device__ double tanh(double x) { return ::tanh(x); }
  static __device__ double erf(double x) { return ::erf(x); }
  static __device__ double pow(double x, double y) { return ::pow(x, y); }
  static __device__ double abs(double x) { return fabs(x); }
};

struct SumOp {
  template <typename V> __device__ V operator()(V a, V b) const { return a + b; }
};

}  // namespace posgrad::cuda
