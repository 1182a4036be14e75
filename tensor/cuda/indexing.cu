// CUDA indexing kernels on [outer, n, inner] views (index_select, index_add, gather,
// scatter_add), the index bounds check, and the Philox random fills. The adds use atomicAdd, so
// when an index repeats, float sums are formed in an unspecified order (results can differ in the
// last bits from run to run); int64 sums are exact. Deliberately not here: a deterministic
// (sorted) index_add; out-of-range indices are caught by launch_check_indices before any kernel
// reads through them.
// Shapes: letters of shape_legend.h, except n, m here: the indexed axis's size and the index count.
#include "tensor/cuda/device_utils.cuh"
#include "tensor/philox.h"

namespace posgrad::cuda {

namespace {

template <typename T>
__device__ __forceinline__ void atomic_add(T* address, T value) {
  if constexpr (std::is_same_v<T, int64_t>)
    atomicAdd(reinterpret_cast<unsigned long long*>(address), static_cast<unsigned long long>(value));
  else
    atomicAdd(address, value);
}

__global__ void check_indices_kernel(const int64_t* index, int64_t count, int64_t n, int64_t* first_bad) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t v = index[i];
    if (v < 0 || v >= n)
      atomicMin(reinterpret_cast<unsigned long long*>(first_bad), static_cast<unsigned long long>(i));
  }
}

// out[o, j, k] = x[o, index[j], k]
template <typename T>
__global__ void index_select_kernel(const T* x, const int64_t* index, T* out, int64_t outer,
                                    int64_t n, int64_t inner, int64_t m) {
  const int64_t total = outer * m * inner;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = i % inner, j = (i / inner) % m, o = i / (inner * m);
    out[i] = x[(o * n + index[j]) * inner + k];
  }
}

// out[o, index[j], k] += src[o, j, k]
template <typename T>
__global__ void index_add_kernel(const int64_t* index, const T* src, T* out, int64_t outer,
                                 int64_t n, int64_t inner, int64_t m) {
  const int64_t total = outer * m * inner;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = i % inner, j = (i / inner) % m, o = i / (inner * m);
    atomic_add(out + (o * n + index[j]) * inner + k, src[i]);
  }
}

// out[o, j, k] = x[o, index[o, j, k], k]
template <typename T>
__global__ void gather_kernel(const T* x, const int64_t* index, T* out, int64_t outer, int64_t n,
                              int64_t inner, int64_t m) {
  const int64_t total = outer * m * inner;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = i % inner, o = i / (inner * m);
    out[i] = x[(o * n + index[i]) * inner + k];
  }
}

// out[o, index[o, j, k], k] += src[o, j, k]
template <typename T>
__global__ void scatter_add_kernel(const int64_t* index, const T* src, T* out, int64_t outer,
                                   int64_t n, int64_t inner, int64_t m) {
  const int64_t total = outer * m * inner;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = i % inner, o = i / (inner * m);
    atomic_add(out + (o * n + index[i]) * inner + k, src[i]);
  }
}

// Thread t computes Philox block offset + t and writes elements 4t .. 4t+3 (those below n).
template <typename T>
__global__ void random_kernel(RandomKind kind, T* out, int64_t n, double a, double b, uint64_t seed,
                              uint64_t offset) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < blocks;
       t += int64_t{gridDim.x} * blockDim.x) {
    const PhiloxBlock r = philox4x32_10(offset + static_cast<uint64_t>(t), 0, seed);
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) {
      const int64_t i = 4 * t + lane;
      if (i >= n) break;
      double value;
      switch (kind) {
        case RandomKind::Uniform:
          value = uniform_between(a, b, uint_to_unit(r[lane]));
          break;
        case RandomKind::Normal:
          value = normal_with(a, b, normal_from_block(r, lane));
          break;
        default:  // Bernoulli(p = a)
          value = uint_to_unit(r[lane]) < a ? 1.0 : 0.0;
          break;
      }
      out[i] = static_cast<T>(value);
    }
  }
}

}  // namespace

void launch_check_indices(const int64_t* index, int64_t count, int64_t n, int64_t* first_bad,
                          cudaStream_t stream) {
  if (count == 0) return;
  check_indices_kernel<<<grid_for(count), kThreads, 0, stream>>>(index, count, n, first_bad);
  check_launch("index check", "check_indices_kernel");
}

void launch_index_select(KType type, const void* x, const int64_t* index, void* out,
                         int64_t outer, int64_t n, int64_t inner, int64_t m, cudaStream_t stream) {
  const int64_t total = outer * m * inner;
  if (total == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    index_select_kernel<T><<<grid_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(x), index, static_cast<T*>(out), outer, n, inner, m);
  });
  check_launch("index_select", "index_select_kernel");
}

void launch_index_add(KType type, const int64_t* index, const void* src, void* out, int64_t outer,
                      int64_t n, int64_t inner, int64_t m, cudaStream_t stream) {
  const int64_t total = outer * m * inner;
  if (total == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    index_add_kernel<T><<<grid_for(total), kThreads, 0, stream>>>(
        index, static_cast<const T*>(src), static_cast<T*>(out), outer, n, inner, m);
  });
  check_launch("index_add", "index_add_kernel");
}

void launch_gather(KType type, const void* x, const int64_t* index, void* out, int64_t outer,
                   int64_t n, int64_t inner, int64_t m, cudaStream_t stream) {
  const int64_t total = outer * m * inner;
  if (total == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    gather_kernel<T><<<grid_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(x), index, static_cast<T*>(out), outer, n, inner, m);
  });
  check_launch("gather", "gather_kernel");
}

void launch_scatter_add(KType type, const int64_t* index, const void* src, void* out,
                        int64_t outer, int64_t n, int64_t inner, int64_t m, cudaStream_t stream) {
  const int64_t total = outer * m * inner;
  if (total == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    scatter_add_kernel<T><<<grid_for(total), kThreads, 0, stream>>>(
        index, static_cast<const T*>(src), static_cast<T*>(out), outer, n, inner, m);
  });
  check_launch("scatter_add", "scatter_add_kernel");
}

void launch_random(KType type, RandomKind kind, void* out, int64_t n, double a, double b,
                   uint64_t seed, uint64_t offset, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    random_kernel<T><<<grid_for((n + 3) / 4), kThreads, 0, stream>>>(kind, static_cast<T*>(out), n,
                                                                      a, b, seed, offset);
  });
  check_launch("random", "random_kernel");
}

}  // namespace posgrad::cuda
