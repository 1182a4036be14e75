// CPU elementwise primitives: copy/cast, fill, unary, binary, where, accumulate, and the backend
// registry. Every kernel is a row function handed to strided_for_each, so broadcasting and
// views cost nothing extra; each op is its own template instantiation so the inner loops
// vectorise. The per-element formulas are tensor/element_ops.h, shared with the CUDA kernels.
#include <cmath>
#include <cstring>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/device.h"
#include "tensor/element_ops.h"

namespace posgrad {

// ------------------------------------------------------------ registry

namespace {
Backend* g_cuda_backend = nullptr;
}

Backend& cpu_backend() {
  static cpu::CpuBackend backend;
  return backend;
}

void register_cuda_backend(Backend* backend) { g_cuda_backend = backend; }

Backend& backend_for(Device device) {
  if (device.is_cpu()) return cpu_backend();
  if (!g_cuda_backend) require_device(device);  // registers the CUDA backend, or a clear Error
  if (!g_cuda_backend)
    fail("{} requested, but posgrad was built without the CUDA backend (POSGRAD_CUDA=OFF or no "
         "toolkit found)", device.str());
  return *g_cuda_backend;
}

namespace cpu {

namespace {

template <typename T, typename F>
void map1(const Tensor& x, Tensor& out, F f) {
  const T* xp = x.data<T>();
  T* op = out.data<T>();
  strided_for_each<2>(out.shape(), {x.strides(), out.strides()},
                      [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
                        const T* a = xp + off[0];
                        T* o = op + off[1];
                        if (st[0] == 1 && st[1] == 1) {
                          for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
                        } else {
                          for (int64_t i = 0; i < n; ++i) o[i * st[1]] = f(a[i * st[0]]);
                        }
                      });
}

template <typename T, typename F>
void map2(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const T* ap = a.data<T>();
  const T* bp = b.data<T>();
  T* op = out.data<T>();
  strided_for_each<3>(out.shape(), {a.strides(), b.strides(), out.strides()},
                      [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
                        const T* x = ap + off[0];
                        const T* y = bp + off[1];
                        T* o = op + off[2];
                        if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
                          for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
                        } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
                          const T yv = y[0];
                          for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
                        } else if (st[0] == 0 && st[1] == 1 && st[2] == 1) {
                          const T xv = x[0];
                          for (int64_t i = 0; i < n; ++i) o[i] = f(xv, y[i]);
                        } else {
                          for (int64_t i = 0; i < n; ++i) o[i * st[2]] = f(x[i * st[0]], y[i * st[1]]);
                        }
                      });
}

// One loop per op (the formula is a compile-time choice, so each loop vectorises).
template <typename T>
void unary_typed(UnaryOp op, const Tensor& x, Tensor& out, T p, T q) {
  if constexpr (std::is_integral_v<T>)
    if (!element::unary_defined_for_integers(op)) fail("unary: op {} is not defined for int64", static_cast<int>(op));
  element::with_unary_op(op, [&](auto k) {
    map1<T>(x, out, [p, q](T v) { return element::unary_value<decltype(k)::value>(v, p, q); });
  });
}

template <typename T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  if constexpr (std::is_integral_v<T>) {
    if (op == BinaryOp::Div) {
      bool by_zero = false;
      map2<T>(a, b, out, [&by_zero](T x, T y) {
        by_zero = by_zero || y == 0;
        return element::binary_value<BinaryOp::Div>(x, y);
      });
      if (by_zero) fail("div: integer division by zero");
      return;
    }
  }
  element::with_binary_op(op, [&](auto k) {
    map2<T>(a, b, out, [](T x, T y) { return element::binary_value<decltype(k)::value>(x, y); });
  });
}

template <typename D, typename S>
void copy_typed(const Tensor& src, Tensor& dst) {
  const S* sp = static_cast<const S*>(src.raw_data());
  D* dp = static_cast<D*>(dst.raw_data());
  if constexpr (std::is_same_v<D, S>) {
    // An empty tensor has no storage (null data): memcpy of a null pointer is undefined even for
    // zero bytes, so an empty contiguous copy does nothing here.
    if (src.is_contiguous() && dst.is_contiguous()) {
      if (src.numel() == 0) return;
      std::memcpy(dp, sp, static_cast<size_t>(src.numel()) * sizeof(S));
      return;
    }
  }
  strided_for_each<2>(dst.shape(), {src.strides(), dst.strides()},
                      [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
                        const S* s = sp + off[0];
                        D* d = dp + off[1];
                        if (st[0] == 1 && st[1] == 1) {
                          for (int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(s[i]);
                        } else {
                          for (int64_t i = 0; i < n; ++i) d[i * st[1]] = static_cast<D>(s[i * st[0]]);
                        }
                      });
}

}  // namespace

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  if (!src.device().is_cpu() || !dst.device().is_cpu())
    fail("copy: the CPU backend cannot copy {} -> {}", src.describe(), dst.describe());
  dispatch_all(dst.dtype(), [&]<typename D>() {
    dispatch_all(src.dtype(), [&]<typename S>() { copy_typed<D, S>(src, dst); });
  });
}

void CpuBackend::fill(Tensor& dst, double value) {
  dispatch_all(dst.dtype(), [&]<typename T>() {
    T* p = dst.data<T>();
    const T v = static_cast<T>(value);
    parallel_for(dst.numel(), 1, [&](int64_t i) { p[i] = v; });
  });
}

void CpuBackend::unary(UnaryOp op, const Tensor& x, Tensor& out, double p, double q) {
  dispatch_all(x.dtype(), [&]<typename T>() { unary_typed<T>(op, x, out, static_cast<T>(p), static_cast<T>(q)); });
}

void CpuBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  dispatch_all(out.dtype(), [&]<typename T>() { binary_typed<T>(op, a, b, out); });
}

void CpuBackend::where(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) {
  dispatch_all(out.dtype(), [&]<typename T>() {
    dispatch_all(cond.dtype(), [&]<typename C>() {
      const C* cp = cond.data<C>();
      const T* ap = a.data<T>();
      const T* bp = b.data<T>();
      T* op = out.data<T>();
      strided_for_each<4>(out.shape(), {cond.strides(), a.strides(), b.strides(), out.strides()},
                          [&](const std::array<int64_t, 4>& off, int64_t n, const std::array<int64_t, 4>& st) {
                            for (int64_t i = 0; i < n; ++i)
                              op[off[3] + i * st[3]] = cp[off[0] + i * st[0]] != C(0)
                                                           ? ap[off[1] + i * st[1]]
                                                           : bp[off[2] + i * st[2]];
                          });
    });
  });
}

void CpuBackend::accumulate(Tensor& dst, const Tensor& src) {
  dispatch_all(dst.dtype(), [&]<typename T>() {
    const T* sp = src.data<T>();
    T* dp = dst.data<T>();
    strided_for_each<2>(dst.shape(), {src.strides(), dst.strides()},
                        [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
                          for (int64_t i = 0; i < n; ++i) dp[off[1] + i * st[1]] += sp[off[0] + i * st[0]];
                        });
  });
}

}  // namespace cpu
}  // namespace posgrad
