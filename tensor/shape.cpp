// Shape helpers (see shape.h).
#include "tensor/shape.h"

#include "tensor/error.h"

namespace posgrad {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      fail("{}: shapes {} and {} cannot be broadcast together (axis {}: {} vs {})", op,
           shape_str(a), shape_str(b), i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op) {
  if (axis < -ndim || axis >= std::max<int64_t>(ndim, 1))
    fail("{}: axis {} is out of range for a tensor with {} dimensions", op, axis, ndim);
  return axis < 0 ? axis + ndim : axis;
}

int64_t normalize_axis(int64_t axis, const Shape& shape, const char* op, int64_t extra) {
  const int64_t ndim = static_cast<int64_t>(shape.size()) + extra;
  if (axis < -ndim || axis >= std::max<int64_t>(ndim, 1))
    fail("{}: axis {} is out of range for shape {} (valid axes: {} to {})", op, axis, shape_str(shape), -ndim,
         std::max<int64_t>(ndim, 1) - 1);
  return axis < 0 ? axis + ndim : axis;
}

std::string shape_str(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

}  // namespace posgrad
