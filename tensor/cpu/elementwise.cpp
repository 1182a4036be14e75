// CPU elementwise primitives: copy/cast, fill, unary, binary, where, accumulate, and the backend
// registry. Every kernel is a row function handed to strided_for_each, so broadcasting and
// views cost nothing extra; each op is its own template instantiation so the inner loops
// vectorise.
#include <cmath>
#include <cstring>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/device.h"

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

template <typename T>
T gelu_exact(T x) {
  return static_cast<T>(0.5) * x * (static_cast<T>(1) + std::erf(x * static_cast<T>(0.70710678118654752440)));
}
template <typename T>
T gelu_exact_grad(T x) {
  const T cdf = static_cast<T>(0.5) * (static_cast<T>(1) + std::erf(x * static_cast<T>(0.70710678118654752440)));
  const T pdf = std::exp(static_cast<T>(-0.5) * x * x) * static_cast<T>(0.39894228040143267794);
  return cdf + x * pdf;
}

template <typename T>
void unary_float(UnaryOp op, const Tensor& x, Tensor& out, T p, T q) {
  const T one = 1, zero = 0;
  switch (op) {
    case UnaryOp::Neg: return map1<T>(x, out, [](T v) { return -v; });
    case UnaryOp::Exp: return map1<T>(x, out, [](T v) { return std::exp(v); });
    case UnaryOp::Log: return map1<T>(x, out, [](T v) { return std::log(v); });
    case UnaryOp::Sqrt: return map1<T>(x, out, [](T v) { return std::sqrt(v); });
    case UnaryOp::Rsqrt: return map1<T>(x, out, [one](T v) { return one / std::sqrt(v); });
    case UnaryOp::Abs: return map1<T>(x, out, [](T v) { return std::abs(v); });
    case UnaryOp::Sign: return map1<T>(x, out, [zero](T v) { return static_cast<T>((v > zero) - (v < zero)); });
    case UnaryOp::Sin: return map1<T>(x, out, [](T v) { return std::sin(v); });
    case UnaryOp::Cos: return map1<T>(x, out, [](T v) { return std::cos(v); });
    case UnaryOp::Tanh: return map1<T>(x, out, [](T v) { return std::tanh(v); });
    case UnaryOp::Sigmoid: return map1<T>(x, out, [one](T v) { return one / (one + std::exp(-v)); });
    case UnaryOp::Relu: return map1<T>(x, out, [zero](T v) { return v > zero ? v : zero; });
    case UnaryOp::ReluMask: return map1<T>(x, out, [zero, one](T v) { return v > zero ? one : zero; });
    case UnaryOp::Gelu: return map1<T>(x, out, [](T v) { return gelu_exact(v); });
    case UnaryOp::GeluGrad: return map1<T>(x, out, [](T v) { return gelu_exact_grad(v); });
    case UnaryOp::Square: return map1<T>(x, out, [](T v) { return v * v; });
    case UnaryOp::Reciprocal: return map1<T>(x, out, [one](T v) { return one / v; });
    case UnaryOp::AddScalar: return map1<T>(x, out, [p](T v) { return v + p; });
    case UnaryOp::MulScalar: return map1<T>(x, out, [p](T v) { return v * p; });
    case UnaryOp::PowScalar:
      if (p == static_cast<T>(2)) return map1<T>(x, out, [](T v) { return v * v; });
      return map1<T>(x, out, [p](T v) { return std::pow(v, p); });
    case UnaryOp::Clamp: return map1<T>(x, out, [p, q](T v) { return v < p ? p : (v > q ? q : v); });
  }
  fail("unary: unknown op {}", static_cast<int>(op));
}

void unary_int(UnaryOp op, const Tensor& x, Tensor& out, int64_t p, int64_t q) {
  using T = int64_t;
  switch (op) {
    case UnaryOp::Neg: return map1<T>(x, out, [](T v) { return -v; });
    case UnaryOp::Abs: return map1<T>(x, out, [](T v) { return v < 0 ? -v : v; });
    case UnaryOp::Sign: return map1<T>(x, out, [](T v) { return static_cast<T>((v > 0) - (v < 0)); });
    case UnaryOp::AddScalar: return map1<T>(x, out, [p](T v) { return v + p; });
    case UnaryOp::MulScalar: return map1<T>(x, out, [p](T v) { return v * p; });
    case UnaryOp::Clamp: return map1<T>(x, out, [p, q](T v) { return v < p ? p : (v > q ? q : v); });
    default: fail("unary: op {} is not defined for int64", static_cast<int>(op));
  }
}

template <typename T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  const T one = 1, zero = 0;
  switch (op) {
    case BinaryOp::Add: return map2<T>(a, b, out, [](T x, T y) { return x + y; });
    case BinaryOp::Sub: return map2<T>(a, b, out, [](T x, T y) { return x - y; });
    case BinaryOp::Mul: return map2<T>(a, b, out, [](T x, T y) { return x * y; });
    case BinaryOp::Div:
      if constexpr (std::is_integral_v<T>) {
        bool by_zero = false;
        map2<T>(a, b, out, [&by_zero](T x, T y) {
          if (y == 0) { by_zero = true; return T(0); }
          return x / y;
        });
        if (by_zero) fail("div: integer division by zero");
        return;
      } else {
        return map2<T>(a, b, out, [](T x, T y) { return x / y; });
      }
    case BinaryOp::Pow:
      return map2<T>(a, b, out, [](T x, T y) { return static_cast<T>(std::pow(x, y)); });
    case BinaryOp::Maximum: return map2<T>(a, b, out, [](T x, T y) { return x > y ? x : y; });
    case BinaryOp::Minimum: return map2<T>(a, b, out, [](T x, T y) { return x < y ? x : y; });
    case BinaryOp::Eq: return map2<T>(a, b, out, [=](T x, T y) { return x == y ? one : zero; });
    case BinaryOp::Ne: return map2<T>(a, b, out, [=](T x, T y) { return x != y ? one : zero; });
    case BinaryOp::Lt: return map2<T>(a, b, out, [=](T x, T y) { return x < y ? one : zero; });
    case BinaryOp::Le: return map2<T>(a, b, out, [=](T x, T y) { return x <= y ? one : zero; });
    case BinaryOp::Gt: return map2<T>(a, b, out, [=](T x, T y) { return x > y ? one : zero; });
    case BinaryOp::Ge: return map2<T>(a, b, out, [=](T x, T y) { return x >= y ? one : zero; });
  }
}

template <typename D, typename S>
void copy_typed(const Tensor& src, Tensor& dst) {
  const S* sp = static_cast<const S*>(src.raw_data());
  D* dp = static_cast<D*>(dst.raw_data());
  if constexpr (std::is_same_v<D, S>) {
    if (src.is_contiguous() && dst.is_contiguous()) {
      std::memcpy(dp, sp, static_cast<size_t>(src.numel()) * sizeof(S));
      return;
    }
  }
  strided_for_each<2>(dst.shape(), {src.strides(), dst.strides()},
                      [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
                        const S* s = sp + off[0];
                        D* d = dp + off[1];
                        for (int64_t i = 0; i < n; ++i) d[i * st[1]] = static_cast<D>(s[i * st[0]]);
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
  if (x.dtype() == kInt64) return unary_int(op, x, out, static_cast<int64_t>(p), static_cast<int64_t>(q));
  dispatch_float(x.dtype(), "unary", [&]<typename T>() {
    unary_float<T>(op, x, out, static_cast<T>(p), static_cast<T>(q));
  });
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
