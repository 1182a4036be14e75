// CPU softmax and log-softmax along the last axis of a contiguous [rows, R] matrix, and their
// backward. Max-subtracted for stability; a row of all -inf gives zeros (softmax) rather than NaN.
// Log-softmax is (x - max) - log(sum), never x - (max + log(sum)): with logits near 1e4 the sum
// max + log(sum) would round to float32's spacing there (1e-3) and lose the small outputs.
// Shapes: letters of shape_legend.h, except R here: the length of one row (the softmax axis).
#include <cmath>
#include <limits>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"

namespace posgrad::cpu {

void CpuBackend::softmax_rows(const Tensor& x, Tensor& out, bool log) {
  const int64_t rows = x.size(0), R = x.size(1);
  dispatch_float(x.dtype(), "softmax", [&]<typename T>() {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    parallel_for(rows, R * 4, [&](int64_t r) {
      const T* in = xp + r * R;
      T* y = yp + r * R;
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t i = 0; i < R; ++i) m = in[i] > m ? in[i] : m;
      if (m == -std::numeric_limits<T>::infinity()) {  // fully masked row
        for (int64_t i = 0; i < R; ++i) y[i] = log ? -std::numeric_limits<T>::infinity() : T(0);
        return;
      }
      T s = 0;
      for (int64_t i = 0; i < R; ++i) {
        const T e = std::exp(in[i] - m);
        s += e;
        if (!log) y[i] = e;
      }
      if (log) {
        const T log_s = std::log(s);
        for (int64_t i = 0; i < R; ++i) y[i] = (in[i] - m) - log_s;
      } else {
        const T inv = T(1) / s;
        for (int64_t i = 0; i < R; ++i) y[i] *= inv;
      }
    });
  });
}

void CpuBackend::softmax_backward_rows(const Tensor& y, const Tensor& dy, Tensor& dx, bool log) {
  const int64_t rows = y.size(0), R = y.size(1);
  dispatch_float(y.dtype(), "softmax_backward", [&]<typename T>() {
    const T* yp = y.data<T>();
    const T* gp = dy.data<T>();
    T* dp = dx.data<T>();
    parallel_for(rows, R * 3, [&](int64_t r) {
      const T* yr = yp + r * R;
      const T* g = gp + r * R;
      T* d = dp + r * R;
      if (log) {  // dx = dy - exp(y) * sum(dy)
        T s = 0;
        for (int64_t i = 0; i < R; ++i) s += g[i];
        for (int64_t i = 0; i < R; ++i) d[i] = g[i] - std::exp(yr[i]) * s;
      } else {  // dx = y * (dy - sum(dy * y))
        T s = 0;
        for (int64_t i = 0; i < R; ++i) s += g[i] * yr[i];
        for (int64_t i = 0; i < R; ++i) d[i] = yr[i] * (g[i] - s);
      }
    });
  });
}

}  // namespace posgrad::cpu
