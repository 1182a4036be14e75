// Tensor: a typed, strided view onto a shared Storage. Copying a Tensor is cheap and shares the
// data (like a shared_ptr); views (reshape, permute, slice, expand, ...) share storage too.
// `clone()` copies the data. This class knows nothing about gradients (see autograd/variable.h);
// the op set lives in tensor/ops.h as plain functions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/shape.h"
#include "tensor/storage.h"

namespace posgrad {

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor: defined() is false

  // ------------------------------------------------------------ factories
  static Tensor empty(const Shape& shape, DType dtype = kFloat32, Device device = kCPU);
  static Tensor zeros(const Shape& shape, DType dtype = kFloat32, Device device = kCPU);
  static Tensor ones(const Shape& shape, DType dtype = kFloat32, Device device = kCPU);
  static Tensor full(const Shape& shape, double value, DType dtype = kFloat32, Device device = kCPU);
  static Tensor scalar(double value, DType dtype = kFloat32, Device device = kCPU);  // shape []
  static Tensor arange(int64_t n, DType dtype = kInt64, Device device = kCPU);
  // Copies `values` into a new CPU tensor of the given shape (numel must match).
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);
  static Tensor from_vector(std::initializer_list<float> values, const Shape& shape) {
    return from_vector(std::vector<float>(values), shape);
  }
  static Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.dtype(), t.device()); }
  static Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }

  // ------------------------------------------------------------ metadata
  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t axis) const;  // negative axes count from the end
  int64_t stride(int64_t axis) const;
  int64_t numel() const { return shape_numel(shape_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool is_contiguous() const;
  const StoragePtr& storage() const { return storage_; }
  std::string describe() const;  // "float32[2, 3] on cpu", for error messages

  // Pointer to the first element (storage + offset). Checks the dtype; data is not contiguous
  // unless is_contiguous().
  template <typename T> T* data() const;
  void* raw_data() const;

  // ------------------------------------------------------------ copies and conversion
  Tensor contiguous() const;  // returns *this when already contiguous
  Tensor clone() const;       // always a fresh contiguous copy
  Tensor to(DType dtype) const;
  Tensor to(Device device) const;
  void copy_(const Tensor& src);  // copies src (broadcast to this shape, any dtype) into this
  void fill_(double value);
  double item() const;  // the value of a one-element tensor
  template <typename T> std::vector<T> to_vector() const;  // element values in row-major order
  template <typename T> T at(std::initializer_list<int64_t> index) const;  // one element

  // ------------------------------------------------------------ views (share storage)
  Tensor reshape(const Shape& shape) const;  // a view when possible, else a copy; one -1 allowed
  Tensor view(const Shape& shape) const;     // a view, or an Error when strides do not allow it
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor transpose(int64_t a, int64_t b) const;
  Tensor slice(int64_t axis, int64_t start, int64_t end, int64_t step = 1) const;  // [start, end)
  Tensor narrow(int64_t axis, int64_t start, int64_t length) const;
  Tensor select(int64_t axis, int64_t index) const;  // removes the axis
  Tensor expand(const Shape& shape) const;           // size-1 axes broadcast with stride 0
  Tensor squeeze(int64_t axis) const;
  Tensor unsqueeze(int64_t axis) const;
  Tensor flatten(int64_t start_axis = 0, int64_t end_axis = -1) const;
  Tensor as_strided(const Shape& shape, const Shape& strides, int64_t offset) const;

  std::string to_string() const;  // readable printing (fmt), abbreviated for large tensors

 private:
  StoragePtr storage_;
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;
  DType dtype_ = kFloat32;
  Device device_;
};

// Throws when `t` is undefined or its dtype differs from `expected`; `op` names the caller.
void check_dtype(const Tensor& t, DType expected, const char* op);
void check_same_device(const Tensor& a, const Tensor& b, const char* op);

}  // namespace posgrad

template <>
struct fmt::formatter<posgrad::Tensor> : fmt::formatter<std::string> {
  auto format(const posgrad::Tensor& t, format_context& ctx) const {
    return fmt::formatter<std::string>::format(t.to_string(), ctx);
  }
};
