// DType and Device: what a tensor's elements are and where they live.
// float32 is the working dtype, float64 exists on the CPU (gradcheck), int64 holds indices.
// This file deliberately knows nothing about storage or kernels.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/error.h"

namespace posgrad {

enum class DType : uint8_t { Float32, Float64, Int64 };

inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;
inline constexpr DType kInt64 = DType::Int64;

inline int64_t dtype_size(DType t) { return t == DType::Float32 ? 4 : 8; }
inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
  }
  return "?";
}
inline bool is_floating(DType t) { return t != DType::Int64; }

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }

// Calls fn.template operator()<T>() with T the C++ type of `t`: the one place that maps a runtime
// dtype to a compile-time type. `op` names the caller for the error message.
template <typename Fn>
decltype(auto) dispatch_float(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::Float32: return fn.template operator()<float>();
    case DType::Float64: return fn.template operator()<double>();
    default: fail("{}: expected a floating-point tensor, got {}", op, dtype_name(t));
  }
}
template <typename Fn>
decltype(auto) dispatch_all(DType t, Fn&& fn) {
  switch (t) {
    case DType::Float32: return fn.template operator()<float>();
    case DType::Float64: return fn.template operator()<double>();
    case DType::Int64: return fn.template operator()<int64_t>();
  }
  fail("unknown dtype {}", static_cast<int>(t));
}

enum class DeviceType : uint8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool operator==(const Device&) const = default;
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
  // Parses "cpu", "cuda" or "cuda:N"; anything else is an Error naming the string.
  static Device parse(const std::string& name);
};

inline const Device kCPU{};

}  // namespace posgrad
