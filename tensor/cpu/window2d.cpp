// CPU kernels of the 2-D sliding-window primitives (tensor/window2d.h): im2col and its adjoint
// col2im for conv2d, and the max_pool2d forward. Work items are (image, channel) planes, so no
// two threads ever write the same element (no atomics, no per-thread buffers); the GEMMs around
// im2col run on the packed SGEMM through the matmul primitive (tensor/conv.cpp).
// Along a row of outputs, the taps that land inside the plane form one run [lo, hi) computed
// once per (tap, row), so the inner loops have no bounds tests (a plain copy at stride 1).
// Deliberately not here: a direct (GEMM-free) convolution, other pooling kinds.
// Shapes: tensor/window2d.h's Y, X, Yo, Xo, k; B and C of shape_legend.h.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"

namespace posgrad::cpu {

namespace {

// The outputs ox in [lo, hi) whose tap at input offset `start + ox * stride` lies in [0, size).
struct Run {
  int64_t lo, hi;
};
Run inside_run(int64_t start, int64_t stride, int64_t size, int64_t outputs) {
  // start + ox * stride >= 0  <=>  ox >= ceil(-start / stride)
  int64_t lo = start >= 0 ? 0 : (-start + stride - 1) / stride;
  // start + ox * stride <= size - 1  <=>  ox <= floor((size - 1 - start) / stride)
  int64_t hi = size - 1 - start < 0 ? 0 : (size - 1 - start) / stride + 1;
  lo = std::min(lo, outputs);
  hi = std::clamp(hi, lo, outputs);
  return {lo, hi};
}

}  // namespace

void CpuBackend::im2col(const Tensor& x, const Window2d& w, Tensor& cols) {
  const int64_t planes = x.size(0) * w.channels, taps = w.kernel_h * w.kernel_w;
  const int64_t Yo = w.out_h, Xo = w.out_w, out_plane = w.out_plane();
  dispatch_float(x.dtype(), "im2col", [&]<typename T>() {
    const T* xp = x.data<T>();
    T* cp = cols.data<T>();
    parallel_for(planes, taps * out_plane, [&](int64_t p) {
      const T* plane = xp + p * w.plane();
      // plane p = (b, c) fills rows c * taps .. of image b, which follow each other in cols
      T* rows = cp + p * taps * out_plane;
      for (int64_t i = 0; i < w.kernel_h; ++i)
        for (int64_t j = 0; j < w.kernel_w; ++j) {
          T* dst = rows + (i * w.kernel_w + j) * out_plane;
          const Run run = inside_run(j * w.dilation_w - w.pad_w, w.stride_w, w.width, Xo);
          for (int64_t oy = 0; oy < Yo; ++oy, dst += Xo) {
            const int64_t y = oy * w.stride_h - w.pad_h + i * w.dilation_h;
            if (y < 0 || y >= w.height) {
              std::fill(dst, dst + Xo, T(0));
              continue;
            }
            const T* src = plane + y * w.width + j * w.dilation_w - w.pad_w;
            std::fill(dst, dst + run.lo, T(0));
            if (w.stride_w == 1)
              std::copy(src + run.lo, src + run.hi, dst + run.lo);
            else
              for (int64_t ox = run.lo; ox < run.hi; ++ox) dst[ox] = src[ox * w.stride_w];
            std::fill(dst + run.hi, dst + Xo, T(0));
          }
        }
    });
  });
}

void CpuBackend::col2im(const Tensor& cols, const Window2d& w, Tensor& x) {
  const int64_t planes = x.size(0) * w.channels, taps = w.kernel_h * w.kernel_w;
  const int64_t Yo = w.out_h, Xo = w.out_w, out_plane = w.out_plane();
  dispatch_float(x.dtype(), "col2im", [&]<typename T>() {
    const T* cp = cols.data<T>();
    T* xp = x.data<T>();
    parallel_for(planes, taps * out_plane, [&](int64_t p) {
      T* plane = xp + p * w.plane();
      std::fill(plane, plane + w.plane(), T(0));
      const T* rows = cp + p * taps * out_plane;
      for (int64_t i = 0; i < w.kernel_h; ++i)
        for (int64_t j = 0; j < w.kernel_w; ++j) {
          const T* src = rows + (i * w.kernel_w + j) * out_plane;
          const Run run = inside_run(j * w.dilation_w - w.pad_w, w.stride_w, w.width, Xo);
          for (int64_t oy = 0; oy < Yo; ++oy, src += Xo) {
            const int64_t y = oy * w.stride_h - w.pad_h + i * w.dilation_h;
            if (y < 0 || y >= w.height) continue;
            T* dst = plane + y * w.width + j * w.dilation_w - w.pad_w;
            for (int64_t ox = run.lo; ox < run.hi; ++ox) dst[ox * w.stride_w] += src[ox];
          }
        }
    });
  });
}

void CpuBackend::max_pool2d(const Tensor& x, const Window2d& w, Tensor& out, Tensor& argmax) {
  const int64_t planes = x.size(0), out_plane = w.out_plane();
  dispatch_float(x.dtype(), "max_pool2d", [&]<typename T>() {
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    int64_t* ap = argmax.data<int64_t>();
    parallel_for(planes, w.kernel_h * w.kernel_w * out_plane, [&](int64_t p) {
      const T* plane = xp + p * w.plane();
      for (int64_t oy = 0; oy < w.out_h; ++oy)
        for (int64_t ox = 0; ox < w.out_w; ++ox) {
          const int64_t y0 = oy * w.stride_h - w.pad_h, x0 = ox * w.stride_w - w.pad_w;
          const int64_t y_lo = std::max<int64_t>(y0, 0), y_hi = std::min(y0 + w.kernel_h, w.height);
          const int64_t x_lo = std::max<int64_t>(x0, 0), x_hi = std::min(x0 + w.kernel_w, w.width);
          // As PyTorch's CPU loop: start at -inf on the first cell, take any cell that is larger or NaN.
          T best = -std::numeric_limits<T>::infinity();
          int64_t best_index = y_lo * w.width + x_lo;
          for (int64_t y = y_lo; y < y_hi; ++y)
            for (int64_t xx = x_lo; xx < x_hi; ++xx) {
              const T v = plane[y * w.width + xx];
              if (v > best || std::isnan(v)) {
                best = v;
                best_index = y * w.width + xx;
              }
            }
          op[p * out_plane + oy * w.out_w + ox] = best;
          ap[p * out_plane + oy * w.out_w + ox] = best_index;
        }
    });
  });
}

}  // namespace posgrad::cpu
