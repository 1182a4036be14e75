// CPU LayerNorm over the last axis of a contiguous [rows, D] matrix, forward and backward.
// Statistics accumulate in double. Backward: dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
// with g = dy * weight; dweight = sum_rows(dy * xhat), dbias = sum_rows(dy).
// Shapes: letters of shape_legend.h.
#include <cmath>
#include <vector>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"

namespace posgrad::cpu {

void CpuBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                            Tensor& y, Tensor& mean, Tensor& rstd) {
  const int64_t rows = x.size(0), D = x.size(1);
  dispatch_float(x.dtype(), "layer_norm", [&]<typename T>() {
    const T* xp = x.data<T>();
    const T* w = weight.defined() ? weight.data<T>() : nullptr;
    const T* b = bias.defined() ? bias.data<T>() : nullptr;
    T* yp = y.data<T>();
    T* mp = mean.data<T>();
    T* sp = rstd.data<T>();
    parallel_for(rows, D * 4, [&](int64_t r) {
      const T* in = xp + r * D;
      T* out = yp + r * D;
      double s = 0;
      for (int64_t i = 0; i < D; ++i) s += in[i];
      const double mu = s / static_cast<double>(D);
      double ss = 0;
      for (int64_t i = 0; i < D; ++i) {
        const double d = in[i] - mu;
        ss += d * d;
      }
      const T rs = static_cast<T>(1.0 / std::sqrt(ss / static_cast<double>(D) + eps));
      const T m = static_cast<T>(mu);
      mp[r] = m;
      sp[r] = rs;
      for (int64_t i = 0; i < D; ++i) {
        T v = (in[i] - m) * rs;
        if (w) v *= w[i];
        if (b) v += b[i];
        out[i] = v;
      }
    });
  });
}

void CpuBackend::layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                     const Tensor& mean, const Tensor& rstd, Tensor& dx,
                                     Tensor& dweight, Tensor& dbias) {
  const int64_t rows = x.size(0), D = x.size(1);
  dispatch_float(x.dtype(), "layer_norm_backward", [&]<typename T>() {
    const T* gp = dy.data<T>();
    const T* xp = x.data<T>();
    const T* w = weight.defined() ? weight.data<T>() : nullptr;
    const T* mp = mean.data<T>();
    const T* sp = rstd.data<T>();
    T* dxp = dx.data<T>();
    parallel_for(rows, D * 6, [&](int64_t r) {
      const T* g = gp + r * D;
      const T* in = xp + r * D;
      T* d = dxp + r * D;
      const T m = mp[r], rs = sp[r];
      double sum_g = 0, sum_gx = 0;
      for (int64_t i = 0; i < D; ++i) {
        const T gi = w ? g[i] * w[i] : g[i];
        const T xhat = (in[i] - m) * rs;
        sum_g += gi;
        sum_gx += gi * xhat;
      }
      const T mean_g = static_cast<T>(sum_g / D), mean_gx = static_cast<T>(sum_gx / D);
      for (int64_t i = 0; i < D; ++i) {
        const T gi = w ? g[i] * w[i] : g[i];
        const T xhat = (in[i] - m) * rs;
        d[i] = rs * (gi - mean_g - xhat * mean_gx);
      }
    });
    if (!w) return;
    // Parameter gradients: columns are independent, so split D across threads.
    T* dw = dweight.data<T>();
    T* db = dbias.data<T>();
    const int64_t block = 64;
    parallel_for((D + block - 1) / block, rows * block * 2, [&](int64_t bi) {
      const int64_t lo = bi * block, hi = std::min(D, lo + block);
      std::vector<double> aw(hi - lo, 0.0), ab(hi - lo, 0.0);
      for (int64_t r = 0; r < rows; ++r) {
        const T* g = gp + r * D;
        const T* in = xp + r * D;
        const T m = mp[r], rs = sp[r];
        for (int64_t i = lo; i < hi; ++i) {
          aw[i - lo] += static_cast<double>(g[i] * (in[i] - m) * rs);
          ab[i - lo] += static_cast<double>(g[i]);
        }
      }
      for (int64_t i = lo; i < hi; ++i) {
        dw[i] = static_cast<T>(aw[i - lo]);
        db[i] = static_cast<T>(ab[i - lo]);
      }
    });
  });
}

}  // namespace posgrad::cpu
