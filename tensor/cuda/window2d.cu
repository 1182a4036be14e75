// CUDA kernels of the 2-D sliding-window primitives (tensor/window2d.h): im2col, col2im and the
// max_pool2d forward. One thread per element written, in grid-stride loops: im2col per cols
// element, col2im per input element (it gathers every tap that read the element, so it needs no
// atomics and is deterministic), pooling per output element. The GEMMs around im2col are cuBLAS
// calls made by the matmul primitive. Deliberately not here: a fused implicit-GEMM convolution
// (cuDNN-style), other pooling kinds.
// Shapes: tensor/window2d.h's Y, X, Yo, Xo, k; B and C of shape_legend.h.
#include "tensor/cuda/device_utils.cuh"

namespace posgrad::cuda {

namespace {

// cols[b, c * kh * kw + i * kw + j, oy * Xo + ox] = x[b, c, y, x] at the tap's (y, x), or 0.
template <typename T>
__global__ void im2col_kernel(const T* x, T* cols, int64_t batch, Window2d w) {
  const int64_t out_plane = w.out_h * w.out_w, taps = w.kernel_h * w.kernel_w;
  const int64_t total = batch * w.channels * taps * out_plane;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ox = e % w.out_w, oy = (e / w.out_w) % w.out_h;
    const int64_t tap = (e / out_plane) % taps, plane = e / (out_plane * taps);  // plane = b * C + c
    const int64_t i = tap / w.kernel_w, j = tap % w.kernel_w;
    const int64_t y = oy * w.stride_h - w.pad_h + i * w.dilation_h;
    const int64_t xx = ox * w.stride_w - w.pad_w + j * w.dilation_w;
    const bool inside = y >= 0 && y < w.height && xx >= 0 && xx < w.width;
    cols[e] = inside ? x[(plane * w.height + y) * w.width + xx] : T(0);
  }
}

// x[b, c, y, x] = sum over taps (i, j) and outputs (oy, ox) that read (y, x) of cols.
template <typename T>
__global__ void col2im_kernel(const T* cols, T* x, int64_t batch, Window2d w) {
  const int64_t out_plane = w.out_h * w.out_w, taps = w.kernel_h * w.kernel_w;
  const int64_t total = batch * w.channels * w.height * w.width;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t xx = e % w.width, y = (e / w.width) % w.height, plane = e / (w.width * w.height);
    const T* rows = cols + plane * taps * out_plane;
    T acc = 0;
    for (int64_t i = 0; i < w.kernel_h; ++i) {
      const int64_t ty = y + w.pad_h - i * w.dilation_h;  // = oy * stride_h
      if (ty < 0 || ty % w.stride_h != 0 || ty / w.stride_h >= w.out_h) continue;
      const int64_t oy = ty / w.stride_h;
      for (int64_t j = 0; j < w.kernel_w; ++j) {
        const int64_t tx = xx + w.pad_w - j * w.dilation_w;
        if (tx < 0 || tx % w.stride_w != 0 || tx / w.stride_w >= w.out_w) continue;
        acc += rows[(i * w.kernel_w + j) * out_plane + oy * w.out_w + tx / w.stride_w];
      }
    }
    x[e] = acc;
  }
}

// As the CPU loop: -inf at the first cell, any larger or NaN cell wins.
template <typename T>
__global__ void max_pool2d_kernel(const T* x, T* out, int64_t* argmax, int64_t planes, Window2d w) {
  const int64_t total = planes * w.out_h * w.out_w;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ox = e % w.out_w, oy = (e / w.out_w) % w.out_h, plane = e / (w.out_w * w.out_h);
    const int64_t y0 = oy * w.stride_h - w.pad_h, x0 = ox * w.stride_w - w.pad_w;
    const int64_t y_lo = y0 > 0 ? y0 : 0, x_lo = x0 > 0 ? x0 : 0;
    const int64_t y_hi = y0 + w.kernel_h < w.height ? y0 + w.kernel_h : w.height;
    const int64_t x_hi = x0 + w.kernel_w < w.width ? x0 + w.kernel_w : w.width;
    const T* p = x + plane * w.height * w.width;
    T best = -static_cast<T>(CUDART_INF);
    int64_t best_index = y_lo * w.width + x_lo;
    for (int64_t y = y_lo; y < y_hi; ++y)
      for (int64_t xx = x_lo; xx < x_hi; ++xx) {
        const T v = p[y * w.width + xx];
        if (v > best || v != v) {
          best = v;
          best_index = y * w.width + xx;
        }
      }
    out[e] = best;
    argmax[e] = best_index;
  }
}

}  // namespace

void launch_im2col(KType type, const void* x, void* cols, int64_t batch, const Window2d& window, cudaStream_t stream) {
  const int64_t total = batch * window.patch() * window.out_plane();
  if (total == 0) return;
  dispatch_float_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    im2col_kernel<T><<<grid_for(total), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(cols), batch,
                                                              window);
  });
  check_launch("im2col", "im2col_kernel");
}

void launch_col2im(KType type, const void* cols, void* x, int64_t batch, const Window2d& window, cudaStream_t stream) {
  const int64_t total = batch * window.channels * window.plane();
  if (total == 0) return;
  dispatch_float_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    col2im_kernel<T><<<grid_for(total), kThreads, 0, stream>>>(static_cast<const T*>(cols), static_cast<T*>(x), batch,
                                                              window);
  });
  check_launch("col2im", "col2im_kernel");
}

void launch_max_pool2d(KType type, const void* x, void* out, int64_t* argmax, int64_t planes, const Window2d& window,
                       cudaStream_t stream) {
  const int64_t total = planes * window.out_plane();
  if (total == 0) return;
  dispatch_float_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    max_pool2d_kernel<T><<<grid_for(total), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(out),
                                                                  argmax, planes, window);
  });
  check_launch("max_pool2d", "max_pool2d_kernel");
}

}  // namespace posgrad::cuda
