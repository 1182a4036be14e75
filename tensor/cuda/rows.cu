// CUDA kernels over the rows of a contiguous [rows, R] matrix: reductions (sum, mean, max, min,
// var), argmax, softmax / log-softmax and their backward, LayerNorm and its backward. A block
// owns a row (or, for reductions of few long rows, a chunk of a row: partial results go to
// scratch and a second kernel combines them in a fixed order, so results are deterministic).
// Accumulation follows tensor/cpu/: float32 sums and LayerNorm statistics accumulate in double,
// softmax in the input dtype. Deliberately not here: warp-per-row specialisations, Welford
// variance, fusing softmax with the matmul around it.
// Shapes: letters of shape_legend.h, except R here: the length of one row.
#include <climits>

#include "tensor/cuda/allocator.h"
#include "tensor/cuda/device_utils.cuh"

namespace posgrad::cuda {

namespace {

// Threads per row block: a power of two from 32 to 256, no more than the row needs.
int row_threads(int64_t R) {
  int t = 32;
  while (t < 256 && t < R) t *= 2;
  return t;
}
// Blocks for a grid-stride loop over `rows` row blocks.
unsigned row_grid(int64_t rows) {
  const int64_t cap = int64_t{1} << 20;
  return static_cast<unsigned>(rows < 1 ? 1 : (rows > cap ? cap : rows));
}

template <typename T> __device__ __forceinline__ T lowest() {
  if constexpr (std::is_same_v<T, float>) return -CUDART_INF_F;
  else if constexpr (std::is_same_v<T, double>) return -CUDART_INF;
  else return LLONG_MIN;
}
template <typename T> __device__ __forceinline__ T highest() {
  if constexpr (std::is_same_v<T, float>) return CUDART_INF_F;
  else if constexpr (std::is_same_v<T, double>) return CUDART_INF;
  else return LLONG_MAX;
}
template <typename T> __device__ __forceinline__ bool is_nan(T v) {
  if constexpr (std::is_same_v<T, int64_t>) return false;
  else return v != v;
}

// Max/min that let NaN win, like the CPU loop.
struct MaxOp {
  template <typename V> __device__ V operator()(V a, V b) const { return (b > a || is_nan(b)) ? b : a; }
};
struct MinOp {
  template <typename V> __device__ V operator()(V a, V b) const { return (b < a || is_nan(b)) ? b : a; }
};

// ------------------------------------------------------------ reductions

enum class Pass : int { Sum, Max, Min, SquaredDeviation };

// Sums accumulate in double for floating types and in int64 for int64.
template <typename T> using SumAcc = std::conditional_t<std::is_same_v<T, int64_t>, int64_t, double>;

// One block per (row, chunk): partial[row * chunks + chunk] = the chunk's reduction.
template <typename T, typename Acc, Pass kPass>
__global__ void reduce_partial_kernel(const T* x, int64_t rows, int64_t R, int64_t chunks,
                                      int64_t chunk_len, const double* row_mean, Acc* partial) {
  __shared__ Acc shared[32];
  for (int64_t b = blockIdx.x; b < rows * chunks; b += gridDim.x) {
    const int64_t row = b / chunks, chunk = b % chunks;
    const int64_t lo = chunk * chunk_len;
    const int64_t hi = lo + chunk_len < R ? lo + chunk_len : R;
    const T* in = x + row * R;
    Acc acc;
    if constexpr (kPass == Pass::Max) acc = lowest<Acc>();
    else if constexpr (kPass == Pass::Min) acc = highest<Acc>();
    else acc = 0;
    const double mu = kPass == Pass::SquaredDeviation ? row_mean[row] : 0.0;
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
      if constexpr (kPass == Pass::Sum) acc += static_cast<Acc>(in[i]);
      else if constexpr (kPass == Pass::Max) acc = MaxOp{}(acc, in[i]);
      else if constexpr (kPass == Pass::Min) acc = MinOp{}(acc, in[i]);
      else {
        const double d = static_cast<double>(in[i]) - mu;
        acc += d * d;
      }
    }
    if constexpr (kPass == Pass::Max) acc = block_reduce(acc, MaxOp{}, shared);
    else if constexpr (kPass == Pass::Min) acc = block_reduce(acc, MinOp{}, shared);
    else acc = block_reduce(acc, SumOp{}, shared);
    if (threadIdx.x == 0) partial[b] = acc;
  }
}

// One thread per row: combines the row's chunks in order and writes the result.
//   mode 0: out = T(sum)   1: out = T(sum / R)   2: out = max/min (already combined per chunk)
//   3: row_mean = sum / R (double, for var)   4: out = T(sum / (R - correction)) or NaN
template <typename T, typename Acc, Pass kPass>
__global__ void reduce_finish_kernel(const Acc* partial, int64_t rows, int64_t chunks, int64_t R,
                                     int mode, int64_t correction, T* out, double* row_mean) {
  for (int64_t row = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; row < rows;
       row += int64_t{gridDim.x} * blockDim.x) {
    Acc acc = partial[row * chunks];
    for (int64_t c = 1; c < chunks; ++c) {
      const Acc v = partial[row * chunks + c];
      if constexpr (kPass == Pass::Max) acc = MaxOp{}(acc, v);
      else if constexpr (kPass == Pass::Min) acc = MinOp{}(acc, v);
      else acc += v;
    }
    switch (mode) {
      case 0: out[row] = static_cast<T>(acc); break;
      case 1: out[row] = static_cast<T>(static_cast<double>(acc) / static_cast<double>(R)); break;
      case 2: out[row] = static_cast<T>(acc); break;
      case 3: row_mean[row] = static_cast<double>(acc) / static_cast<double>(R); break;
      case 4: {
        const double denom = static_cast<double>(R - correction);
        out[row] = static_cast<T>(denom > 0 ? static_cast<double>(acc) / denom : CUDART_NAN);
        break;
      }
    }
  }
}

template <typename T, typename Acc, Pass kPass>
void reduce_pass(const T* x, int64_t rows, int64_t R, int mode, int64_t correction, T* out,
                 double* row_mean, const double* mean_in, int device, cudaStream_t stream) {
  // Few long rows are split into chunks so that every SM gets work.
  int64_t chunks = 1;
  if (rows < 1024 && R > 8192) {
    chunks = (R + 4095) / 4096;
    const int64_t cap = (1024 + rows - 1) / rows;
    if (chunks > cap) chunks = cap;
  }
  const int64_t chunk_len = (R + chunks - 1) / chunks;
  DeviceScratch partial(static_cast<size_t>(rows * chunks) * sizeof(Acc), device);
  reduce_partial_kernel<T, Acc, kPass><<<row_grid(rows * chunks), row_threads(chunk_len), 0, stream>>>(
      x, rows, R, chunks, chunk_len, mean_in, partial.as<Acc>());
  check_launch("reduce", "reduce_partial_kernel");
  reduce_finish_kernel<T, Acc, kPass><<<grid_for(rows), kThreads, 0, stream>>>(
      partial.as<Acc>(), rows, chunks, R, mode, correction, out, row_mean);
  check_launch("reduce", "reduce_finish_kernel");
}

// ------------------------------------------------------------ argmax

template <typename T>
__global__ void argmax_kernel(const T* x, int64_t* out, int64_t rows, int64_t R) {
  __shared__ T best_v[256];
  __shared__ int64_t best_i[256];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* in = x + row * R;
    T v = 0;
    int64_t idx = -1;  // -1: nothing seen (or only NaN)
    for (int64_t i = threadIdx.x; i < R; i += blockDim.x) {
      const T c = in[i];
      if (is_nan(c)) continue;
      if (idx < 0 || c > v) { v = c; idx = i; }
    }
    __syncthreads();
    best_v[threadIdx.x] = v;
    best_i[threadIdx.x] = idx;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) {
        const T ov = best_v[threadIdx.x + half];
        const int64_t oi = best_i[threadIdx.x + half];
        const T mv = best_v[threadIdx.x];
        const int64_t mi = best_i[threadIdx.x];
        const bool take = oi >= 0 && (mi < 0 || ov > mv || (ov == mv && oi < mi));
        if (take) { best_v[threadIdx.x] = ov; best_i[threadIdx.x] = oi; }
      }
      __syncthreads();
    }
    // The CPU keeps index 0 when the row starts with NaN (nothing compares greater than NaN).
    if (threadIdx.x == 0) out[row] = (R > 0 && is_nan(in[0])) || best_i[0] < 0 ? 0 : best_i[0];
  }
}

// ------------------------------------------------------------ softmax

template <typename T>
__global__ void softmax_kernel(const T* x, T* y, int64_t rows, int64_t R, bool log) {
  __shared__ T shared[32];
  const T neg_inf = lowest<T>();
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* in = x + row * R;
    T* out = y + row * R;
    T m = neg_inf;
    for (int64_t i = threadIdx.x; i < R; i += blockDim.x) m = in[i] > m ? in[i] : m;
    m = block_reduce(m, [](T a, T b) { return b > a ? b : a; }, shared);
    if (m == neg_inf) {  // fully masked row
      for (int64_t i = threadIdx.x; i < R; i += blockDim.x) out[i] = log ? neg_inf : T(0);
      continue;
    }
    T s = 0;
    for (int64_t i = threadIdx.x; i < R; i += blockDim.x) s += Math<T>::exp(in[i] - m);
    s = block_reduce(s, SumOp{}, shared);
    if (log) {  // (x - max) - log(sum): x - (max + log(sum)) would round at large |max|
      const T log_s = Math<T>::log(s);
      for (int64_t i = threadIdx.x; i < R; i += blockDim.x) out[i] = (in[i] - m) - log_s;
    } else {
      const T inv = T(1) / s;
      for (int64_t i = threadIdx.x; i < R; i += blockDim.x) out[i] = Math<T>::exp(in[i] - m) * inv;
    }
  }
}

template <typename T>
__global__ void softmax_backward_kernel(const T* y, const T* dy, T* dx, int64_t rows, int64_t R,
                                        bool log) {
  __shared__ T shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* yr = y + row * R;
    const T* g = dy + row * R;
    T* d = dx + row * R;
    T s = 0;
    for (int64_t i = threadIdx.x; i < R; i += blockDim.x) s += log ? g[i] : g[i] * yr[i];
    s = block_reduce(s, SumOp{}, shared);
    if (log) {  // dx = dy - exp(y) * sum(dy)
      for (int64_t i = threadIdx.x; i < R; i += blockDim.x) d[i] = g[i] - Math<T>::exp(yr[i]) * s;
    } else {    // dx = y * (dy - sum(dy * y))
      for (int64_t i = threadIdx.x; i < R; i += blockDim.x) d[i] = yr[i] * (g[i] - s);
    }
  }
}

// ------------------------------------------------------------ layer norm

template <typename T>
__global__ void layer_norm_kernel(const T* x, const T* w, const T* b, double eps, T* y, T* mean,
                                  T* rstd, int64_t rows, int64_t D) {
  __shared__ double shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* in = x + row * D;
    T* out = y + row * D;
    double s = 0;
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) s += static_cast<double>(in[i]);
    const double mu = block_reduce(s, SumOp{}, shared) / static_cast<double>(D);
    double ss = 0;
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
      const double d = static_cast<double>(in[i]) - mu;
      ss += d * d;
    }
    ss = block_reduce(ss, SumOp{}, shared);
    const T rs = static_cast<T>(1.0 / ::sqrt(ss / static_cast<double>(D) + eps));
    const T m = static_cast<T>(mu);
    if (threadIdx.x == 0) {
      mean[row] = m;
      rstd[row] = rs;
    }
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
      T v = (in[i] - m) * rs;
      if (w) v *= w[i];
      if (b) v += b[i];
      out[i] = v;
    }
  }
}

template <typename T>
__global__ void layer_norm_backward_kernel(const T* dy, const T* x, const T* w, const T* mean,
                                           const T* rstd, T* dx, int64_t rows, int64_t D) {
  __shared__ double shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* g = dy + row * D;
    const T* in = x + row * D;
    T* d = dx + row * D;
    const T m = mean[row], rs = rstd[row];
    double sum_g = 0, sum_gx = 0;
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
      const T gi = w ? g[i] * w[i] : g[i];
      const T xhat = (in[i] - m) * rs;
      sum_g += static_cast<double>(gi);
      sum_gx += static_cast<double>(gi * xhat);
    }
    sum_g = block_reduce(sum_g, SumOp{}, shared);
    sum_gx = block_reduce(sum_gx, SumOp{}, shared);
    const T mean_g = static_cast<T>(sum_g / static_cast<double>(D));
    const T mean_gx = static_cast<T>(sum_gx / static_cast<double>(D));
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
      const T gi = w ? g[i] * w[i] : g[i];
      const T xhat = (in[i] - m) * rs;
      d[i] = rs * (gi - mean_g - xhat * mean_gx);
    }
  }
}

// Parameter gradients, stage 1: thread = column, blockIdx.y = a chunk of rows; partial sums
// (double) go to pw/pb [chunks, D].
template <typename T>
__global__ void layer_norm_param_partial_kernel(const T* dy, const T* x, const T* mean,
                                                const T* rstd, double* pw, double* pb,
                                                int64_t rows, int64_t D, int64_t chunk_rows) {
  const int64_t col = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (col >= D) return;
  const int64_t lo = blockIdx.y * chunk_rows;
  const int64_t hi = lo + chunk_rows < rows ? lo + chunk_rows : rows;
  double aw = 0, ab = 0;
  for (int64_t r = lo; r < hi; ++r) {
    const T g = dy[r * D + col];
    aw += static_cast<double>(g * (x[r * D + col] - mean[r]) * rstd[r]);
    ab += static_cast<double>(g);
  }
  pw[blockIdx.y * D + col] = aw;
  pb[blockIdx.y * D + col] = ab;
}

// Stage 2: sums the chunks of each column in order.
template <typename T>
__global__ void layer_norm_param_finish_kernel(const double* pw, const double* pb, T* dweight,
                                               T* dbias, int64_t chunks, int64_t D) {
  for (int64_t col = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; col < D;
       col += int64_t{gridDim.x} * blockDim.x) {
    double aw = 0, ab = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      aw += pw[c * D + col];
      ab += pb[c * D + col];
    }
    dweight[col] = static_cast<T>(aw);
    dbias[col] = static_cast<T>(ab);
  }
}

}  // namespace

void launch_reduce_rows(KType type, ReduceOp op, const void* x, void* out, int64_t rows, int64_t R,
                        int64_t correction, int device, cudaStream_t stream) {
  if (rows == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    const T* xp = static_cast<const T*>(x);
    T* op_ = static_cast<T*>(out);
    using Acc = SumAcc<T>;
    switch (op) {
      case ReduceOp::Sum:
        return reduce_pass<T, Acc, Pass::Sum>(xp, rows, R, 0, 0, op_, nullptr, nullptr, device, stream);
      case ReduceOp::Mean:
        return reduce_pass<T, Acc, Pass::Sum>(xp, rows, R, 1, 0, op_, nullptr, nullptr, device, stream);
      case ReduceOp::Max:
        return reduce_pass<T, T, Pass::Max>(xp, rows, R, 2, 0, op_, nullptr, nullptr, device, stream);
      case ReduceOp::Min:
        return reduce_pass<T, T, Pass::Min>(xp, rows, R, 2, 0, op_, nullptr, nullptr, device, stream);
      case ReduceOp::Var: {
        // Two passes, like the CPU: the row means (double), then squared deviations from them.
        DeviceScratch means(static_cast<size_t>(rows) * sizeof(double), device);
        reduce_pass<T, double, Pass::Sum>(xp, rows, R, 3, 0, op_, means.as<double>(), nullptr, device, stream);
        reduce_pass<T, double, Pass::SquaredDeviation>(xp, rows, R, 4, correction, op_, nullptr,
                                                       means.as<double>(), device, stream);
        return;
      }
    }
  });
}

void launch_argmax_rows(KType type, const void* x, int64_t* out, int64_t rows, int64_t R,
                        cudaStream_t stream) {
  if (rows == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    argmax_kernel<T><<<row_grid(rows), row_threads(R), 0, stream>>>(static_cast<const T*>(x), out, rows, R);
  });
  check_launch("argmax", "argmax_kernel");
}

void launch_softmax_rows(KType type, const void* x, void* y, int64_t rows, int64_t R, bool log,
                         cudaStream_t stream) {
  if (rows == 0 || R == 0) return;
  dispatch_float_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    softmax_kernel<T><<<row_grid(rows), row_threads(R), 0, stream>>>(static_cast<const T*>(x),
                                                                      static_cast<T*>(y), rows, R, log);
  });
  check_launch(log ? "log_softmax" : "softmax", "softmax_kernel");
}

void launch_softmax_backward_rows(KType type, const void* y, const void* dy, void* dx,
                                  int64_t rows, int64_t R, bool log, cudaStream_t stream) {
  if (rows == 0 || R == 0) return;
  dispatch_float_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    softmax_backward_kernel<T><<<row_grid(rows), row_threads(R), 0, stream>>>(
        static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx), rows, R, log);
  });
  check_launch("softmax_backward", "softmax_backward_kernel");
}

void launch_layer_norm(KType type, const void* x, const void* weight, const void* bias, double eps,
                       void* y, void* mean, void* rstd, int64_t rows, int64_t D,
                       cudaStream_t stream) {
  if (rows == 0) return;
  dispatch_float_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    layer_norm_kernel<T><<<row_grid(rows), row_threads(D), 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias), eps,
        static_cast<T*>(y), static_cast<T*>(mean), static_cast<T*>(rstd), rows, D);
  });
  check_launch("layer_norm", "layer_norm_kernel");
}

void launch_layer_norm_backward(KType type, const void* dy, const void* x, const void* weight,
                                const void* mean, const void* rstd, void* dx, void* dweight,
                                void* dbias, int64_t rows, int64_t D, int device,
                                cudaStream_t stream) {
  dispatch_float_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    const T* g = static_cast<const T*>(dy);
    const T* xp = static_cast<const T*>(x);
    const T* mp = static_cast<const T*>(mean);
    const T* sp = static_cast<const T*>(rstd);
    if (rows > 0) {
      layer_norm_backward_kernel<T><<<row_grid(rows), row_threads(D), 0, stream>>>(
          g, xp, static_cast<const T*>(weight), mp, sp, static_cast<T*>(dx), rows, D);
      check_launch("layer_norm_backward", "layer_norm_backward_kernel");
    }
    if (!weight || D == 0) return;
    // Columns are independent: chunks of rows give the parallelism, summed in a fixed order.
    int64_t chunks = (rows + 255) / 256;
    if (chunks > 1024) chunks = 1024;
    if (chunks < 1) chunks = 1;
    const int64_t chunk_rows = (rows + chunks - 1) / chunks;
    DeviceScratch pw(static_cast<size_t>(chunks * D) * sizeof(double), device);
    DeviceScratch pb(static_cast<size_t>(chunks * D) * sizeof(double), device);
    const dim3 grid(static_cast<unsigned>((D + kThreads - 1) / kThreads), static_cast<unsigned>(chunks));
    layer_norm_param_partial_kernel<T><<<grid, kThreads, 0, stream>>>(
        g, xp, mp, sp, pw.as<double>(), pb.as<double>(), rows, D, chunk_rows);
    check_launch("layer_norm_backward", "layer_norm_param_partial_kernel");
    layer_norm_param_finish_kernel<T><<<grid_for(D), kThreads, 0, stream>>>(
        pw.as<double>(), pb.as<double>(), static_cast<T*>(dweight), static_cast<T*>(dbias), chunks, D);
    check_launch("layer_norm_backward", "layer_norm_param_finish_kernel");
  });
}

}  // namespace posgrad::cuda
