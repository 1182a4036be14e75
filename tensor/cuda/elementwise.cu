// CUDA elementwise kernels: copy with dtype conversion, fill, unary and binary ops, where, and
// accumulate. One grid-stride kernel per dtype (and op family); the op is a switch inside the
// kernel (uniform across a launch, so it costs no divergence) which keeps the number of template
// instantiations, and nvcc's time, small. Operands are strided (coalesced on the host), so
// broadcasts (stride 0) and transposed views need no copy. Formulas mirror tensor/cpu/
// elementwise.cpp; libdevice's transcendental functions may differ from glibc by a few ulp.
#include "tensor/cuda/device_utils.cuh"

namespace posgrad::cuda {

namespace {

template <typename T>
__device__ __forceinline__ T unary_float_op(KUnary op, T v, T p, T q) {
  using M = Math<T>;
  const T one = 1, zero = 0;
  switch (op) {
    case KUnary::Neg: return -v;
    case KUnary::Exp: return M::exp(v);
    case KUnary::Log: return M::log(v);
    case KUnary::Sqrt: return M::sqrt(v);
    case KUnary::Rsqrt: return one / M::sqrt(v);
    case KUnary::Abs: return M::abs(v);
    case KUnary::Sign: return static_cast<T>((v > zero) - (v < zero));
    case KUnary::Sin: return M::sin(v);
    case KUnary::Cos: return M::cos(v);
    case KUnary::Tanh: return M::tanh(v);
    case KUnary::Sigmoid: return one / (one + M::exp(-v));
    case KUnary::Relu: return v > zero ? v : zero;
    case KUnary::ReluMask: return v > zero ? one : zero;
    case KUnary::Gelu:
      return static_cast<T>(0.5) * v * (one + M::erf(v * static_cast<T>(0.70710678118654752440)));
    case KUnary::GeluGrad: {
      const T cdf = static_cast<T>(0.5) * (one + M::erf(v * static_cast<T>(0.70710678118654752440)));
      const T pdf = M::exp(static_cast<T>(-0.5) * v * v) * static_cast<T>(0.39894228040143267794);
      return cdf + v * pdf;
    }
    case KUnary::Square: return v * v;
    case KUnary::Reciprocal: return one / v;
    case KUnary::AddScalar: return v + p;
    case KUnary::MulScalar: return v * p;
    case KUnary::PowScalar: return p == static_cast<T>(2) ? v * v : M::pow(v, p);
    case KUnary::Clamp: return v < p ? p : (v > q ? q : v);
  }
  return v;
}

__device__ __forceinline__ int64_t unary_int_op(KUnary op, int64_t v, int64_t p, int64_t q) {
  switch (op) {
    case KUnary::Neg: return -v;
    case KUnary::Abs: return v < 0 ? -v : v;
    case KUnary::Sign: return (v > 0) - (v < 0);
    case KUnary::AddScalar: return v + p;
    case KUnary::MulScalar: return v * p;
    case KUnary::Clamp: return v < p ? p : (v > q ? q : v);
    default: return v;  // the op front-end rejects the others for int64
  }
}

template <typename T>
__global__ void unary_kernel(KUnary op, const T* x, T* out, Strided<2> s, T p, T q) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.numel;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[2];
    strided_offsets<2>(s, i, off);
    if constexpr (std::is_same_v<T, int64_t>) out[off[1]] = unary_int_op(op, x[off[0]], p, q);
    else out[off[1]] = unary_float_op<T>(op, x[off[0]], p, q);
  }
}

template <typename T>
__device__ __forceinline__ T binary_op(KBinary op, T x, T y, int64_t* error_flag) {
  const T one = 1, zero = 0;
  switch (op) {
    case KBinary::Add: return x + y;
    case KBinary::Sub: return x - y;
    case KBinary::Mul: return x * y;
    case KBinary::Div:
      if constexpr (std::is_same_v<T, int64_t>) {
        if (y == 0) {
          *error_flag = 1;
          return 0;
        }
      }
      return x / y;
    case KBinary::Pow:
      if constexpr (std::is_same_v<T, int64_t>)
        return static_cast<int64_t>(::pow(static_cast<double>(x), static_cast<double>(y)));
      else
        return Math<T>::pow(x, y);
    case KBinary::Maximum: return x > y ? x : y;
    case KBinary::Minimum: return x < y ? x : y;
    case KBinary::Eq: return x == y ? one : zero;
    case KBinary::Ne: return x != y ? one : zero;
    case KBinary::Lt: return x < y ? one : zero;
    case KBinary::Le: return x <= y ? one : zero;
    case KBinary::Gt: return x > y ? one : zero;
    case KBinary::Ge: return x >= y ? one : zero;
  }
  return zero;
}

template <typename T>
__global__ void binary_kernel(KBinary op, const T* a, const T* b, T* out, Strided<3> s,
                              int64_t* error_flag) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.numel;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[3];
    strided_offsets<3>(s, i, off);
    out[off[2]] = binary_op<T>(op, a[off[0]], b[off[1]], error_flag);
  }
}

template <typename D, typename S>
__global__ void copy_kernel(D* dst, const S* src, Strided<2> s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.numel;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[2];
    strided_offsets<2>(s, i, off);
    dst[off[1]] = static_cast<D>(src[off[0]]);
  }
}

template <typename T>
__global__ void fill_kernel(T* dst, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    dst[i] = value;
}

template <typename T, typename C>
__global__ void where_kernel(const C* cond, const T* a, const T* b, T* out, Strided<4> s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.numel;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[4];
    strided_offsets<4>(s, i, off);
    out[off[3]] = cond[off[0]] != C(0) ? a[off[1]] : b[off[2]];
  }
}

template <typename T>
__global__ void accumulate_kernel(T* dst, const T* src, Strided<2> s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.numel;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[2];
    strided_offsets<2>(s, i, off);
    dst[off[1]] += src[off[0]];
  }
}

}  // namespace

void launch_copy(KType dst_type, void* dst, KType src_type, const void* src, const Strided<2>& s,
                 cudaStream_t stream) {
  if (s.numel == 0) return;
  dispatch_type(dst_type, [&](auto d_tag) {
    using D = decltype(d_tag);
    dispatch_type(src_type, [&](auto s_tag) {
      using S = decltype(s_tag);
      copy_kernel<D, S><<<grid_for(s.numel), kThreads, 0, stream>>>(static_cast<D*>(dst),
                                                                     static_cast<const S*>(src), s);
    });
  });
  check_launch("copy", "copy_kernel");
}

void launch_fill(KType type, void* dst, int64_t n, double value, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    fill_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), n, static_cast<T>(value));
  });
  check_launch("fill", "fill_kernel");
}

void launch_unary(KType type, KUnary op, const void* x, void* out, const Strided<2>& s, double p,
                  double q, cudaStream_t stream) {
  if (s.numel == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    unary_kernel<T><<<grid_for(s.numel), kThreads, 0, stream>>>(
        op, static_cast<const T*>(x), static_cast<T*>(out), s, static_cast<T>(p), static_cast<T>(q));
  });
  check_launch("unary", "unary_kernel");
}

void launch_binary(KType type, KBinary op, const void* a, const void* b, void* out,
                   const Strided<3>& s, int64_t* error_flag, cudaStream_t stream) {
  if (s.numel == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    binary_kernel<T><<<grid_for(s.numel), kThreads, 0, stream>>>(
        op, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), s, error_flag);
  });
  check_launch("binary", "binary_kernel");
}

void launch_where(KType type, KType cond_type, const void* cond, const void* a, const void* b,
                  void* out, const Strided<4>& s, cudaStream_t stream) {
  if (s.numel == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    dispatch_type(cond_type, [&](auto c_tag) {
      using C = decltype(c_tag);
      where_kernel<T, C><<<grid_for(s.numel), kThreads, 0, stream>>>(
          static_cast<const C*>(cond), static_cast<const T*>(a), static_cast<const T*>(b),
          static_cast<T*>(out), s);
    });
  });
  check_launch("where", "where_kernel");
}

void launch_accumulate(KType type, void* dst, const void* src, const Strided<2>& s,
                       cudaStream_t stream) {
  if (s.numel == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    accumulate_kernel<T><<<grid_for(s.numel), kThreads, 0, stream>>>(static_cast<T*>(dst),
                                                                      static_cast<const T*>(src), s);
  });
  check_launch("add_", "accumulate_kernel");
}

}  // namespace posgrad::cuda
