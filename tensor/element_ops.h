// The formula of every elementwise op for one element, written once for both backends: the CPU
// loops (tensor/cpu/elementwise.cpp) instantiate unary_value<op> / binary_value<op> per op so
// each loop vectorises; the CUDA kernels (tensor/cuda/elementwise.cu) pick the op per launch
// with with_unary_op / with_binary_op. The CPU tests of every op (values, gradcheck, golden
// files) therefore check the very formulas a GPU evaluates; what can still differ is libm vs
// libdevice in the last bits of transcendental functions.
//
// int64 takes the ops that make sense for integers (Neg, Abs, Sign, AddScalar, MulScalar, Clamp
// and every binary op); the front-end rejects the others before a backend is reached. Integer
// division by zero returns 0 here; each backend reports it (an Error).
// Deliberately not here: loops, strides, launches.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "tensor/host_device.h"
#include "tensor/op_codes.h"

namespace posgrad::element {

template <UnaryOp kOp, typename T>
POSGRAD_HD T unary_value(T v, T p, T q) {
  constexpr T one = 1, zero = 0;
  if constexpr (kOp == UnaryOp::Neg) return -v;
  else if constexpr (kOp == UnaryOp::Sign) return static_cast<T>((v > zero) - (v < zero));
  else if constexpr (kOp == UnaryOp::AddScalar) return v + p;
  else if constexpr (kOp == UnaryOp::MulScalar) return v * p;
  else if constexpr (kOp == UnaryOp::Clamp) return v < p ? p : (v > q ? q : v);
  else if constexpr (kOp == UnaryOp::Abs) {
    if constexpr (std::is_integral_v<T>) return v < zero ? -v : v;
    else return std::abs(v);
  }
  else if constexpr (std::is_integral_v<T>) return v;  // not an integer op (rejected up front)
  else if constexpr (kOp == UnaryOp::Exp) return std::exp(v);
  else if constexpr (kOp == UnaryOp::Log) return std::log(v);
  else if constexpr (kOp == UnaryOp::Sqrt) return std::sqrt(v);
  else if constexpr (kOp == UnaryOp::Rsqrt) return one / std::sqrt(v);
  else if constexpr (kOp == UnaryOp::Sin) return std::sin(v);
  else if constexpr (kOp == UnaryOp::Cos) return std::cos(v);
  else if constexpr (kOp == UnaryOp::Tanh) return std::tanh(v);
  else if constexpr (kOp == UnaryOp::Sigmoid) return one / (one + std::exp(-v));
  else if constexpr (kOp == UnaryOp::Relu) return v > zero ? v : zero;
  else if constexpr (kOp == UnaryOp::ReluMask) return v > zero ? one : zero;
  else if constexpr (kOp == UnaryOp::Square) return v * v;
  else if constexpr (kOp == UnaryOp::Reciprocal) return one / v;
  else if constexpr (kOp == UnaryOp::PowScalar) return p == static_cast<T>(2) ? v * v : std::pow(v, p);
  else if constexpr (kOp == UnaryOp::Gelu)  // exact: x * Phi(x)
    return static_cast<T>(0.5) * v * (one + std::erf(v * static_cast<T>(0.70710678118654752440)));
  else if constexpr (kOp == UnaryOp::GeluGrad) {  // Phi(x) + x * phi(x)
    const T cdf = static_cast<T>(0.5) * (one + std::erf(v * static_cast<T>(0.70710678118654752440)));
    const T pdf = std::exp(static_cast<T>(-0.5) * v * v) * static_cast<T>(0.39894228040143267794);
    return cdf + v * pdf;
  } else {
    static_assert(kOp == UnaryOp::Neg, "unary_value: an op without a formula");
    return v;
  }
}

// True for the unary ops defined on int64.
constexpr bool unary_defined_for_integers(UnaryOp op) {
  return op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Sign || op == UnaryOp::AddScalar ||
         op == UnaryOp::MulScalar || op == UnaryOp::Clamp;
}

template <BinaryOp kOp, typename T>
POSGRAD_HD T binary_value(T x, T y) {
  constexpr T one = 1, zero = 0;
  if constexpr (kOp == BinaryOp::Add) return x + y;
  else if constexpr (kOp == BinaryOp::Sub) return x - y;
  else if constexpr (kOp == BinaryOp::Mul) return x * y;
  else if constexpr (kOp == BinaryOp::Div) {
    if constexpr (std::is_integral_v<T>) return y == zero ? zero : x / y;
    else return x / y;
  } else if constexpr (kOp == BinaryOp::Pow) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(std::pow(static_cast<double>(x), static_cast<double>(y)));
    else return std::pow(x, y);
  }
  else if constexpr (kOp == BinaryOp::Maximum) return x > y ? x : y;
  else if constexpr (kOp == BinaryOp::Minimum) return x < y ? x : y;
  else if constexpr (kOp == BinaryOp::Eq) return x == y ? one : zero;
  else if constexpr (kOp == BinaryOp::Ne) return x != y ? one : zero;
  else if constexpr (kOp == BinaryOp::Lt) return x < y ? one : zero;
  else if constexpr (kOp == BinaryOp::Le) return x <= y ? one : zero;
  else if constexpr (kOp == BinaryOp::Gt) return x > y ? one : zero;
  else {
    static_assert(kOp == BinaryOp::Ge, "binary_value: an op without a formula");
    return x >= y ? one : zero;
  }
}

// Calls f(std::integral_constant<UnaryOp, op>{}) for the runtime `op`: turns a runtime op code
// into the compile-time one unary_value needs (one switch, here, for both backends).
template <typename F>
POSGRAD_HD decltype(auto) with_unary_op(UnaryOp op, F&& f) {
  using U = UnaryOp;
  switch (op) {
    case U::Neg: return f(std::integral_constant<U, U::Neg>{});
    case U::Exp: return f(std::integral_constant<U, U::Exp>{});
    case U::Log: return f(std::integral_constant<U, U::Log>{});
    case U::Sqrt: return f(std::integral_constant<U, U::Sqrt>{});
    case U::Rsqrt: return f(std::integral_constant<U, U::Rsqrt>{});
    case U::Abs: return f(std::integral_constant<U, U::Abs>{});
    case U::Sign: return f(std::integral_constant<U, U::Sign>{});
    case U::Sin: return f(std::integral_constant<U, U::Sin>{});
    case U::Cos: return f(std::integral_constant<U, U::Cos>{});
    case U::Tanh: return f(std::integral_constant<U, U::Tanh>{});
    case U::Sigmoid: return f(std::integral_constant<U, U::Sigmoid>{});
    case U::Relu: return f(std::integral_constant<U, U::Relu>{});
    case U::Gelu: return f(std::integral_constant<U, U::Gelu>{});
    case U::Square: return f(std::integral_constant<U, U::Square>{});
    case U::Reciprocal: return f(std::integral_constant<U, U::Reciprocal>{});
    case U::AddScalar: return f(std::integral_constant<U, U::AddScalar>{});
    case U::MulScalar: return f(std::integral_constant<U, U::MulScalar>{});
    case U::PowScalar: return f(std::integral_constant<U, U::PowScalar>{});
    case U::Clamp: return f(std::integral_constant<U, U::Clamp>{});
    case U::GeluGrad: return f(std::integral_constant<U, U::GeluGrad>{});
    case U::ReluMask: return f(std::integral_constant<U, U::ReluMask>{});
  }
  return f(std::integral_constant<U, U::Neg>{});  // not reached: every enumerator is listed
}

template <typename F>
POSGRAD_HD decltype(auto) with_binary_op(BinaryOp op, F&& f) {
  using B = BinaryOp;
  switch (op) {
    case B::Add: return f(std::integral_constant<B, B::Add>{});
    case B::Sub: return f(std::integral_constant<B, B::Sub>{});
    case B::Mul: return f(std::integral_constant<B, B::Mul>{});
    case B::Div: return f(std::integral_constant<B, B::Div>{});
    case B::Pow: return f(std::integral_constant<B, B::Pow>{});
    case B::Maximum: return f(std::integral_constant<B, B::Maximum>{});
    case B::Minimum: return f(std::integral_constant<B, B::Minimum>{});
    case B::Eq: return f(std::integral_constant<B, B::Eq>{});
    case B::Ne: return f(std::integral_constant<B, B::Ne>{});
    case B::Lt: return f(std::integral_constant<B, B::Lt>{});
    case B::Le: return f(std::integral_constant<B, B::Le>{});
    case B::Gt: return f(std::integral_constant<B, B::Gt>{});
    case B::Ge: return f(std::integral_constant<B, B::Ge>{});
  }
  return f(std::integral_constant<B, B::Add>{});  // not reached: every enumerator is listed
}

}  // namespace posgrad::element
