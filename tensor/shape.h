// Shape helpers: element counts, contiguous strides, broadcasting, axis normalisation.
// Shapes are std::vector<int64_t>; strides count elements (not bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace posgrad {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
// NumPy broadcasting of two shapes; throws an Error naming `op` and both shapes when they clash.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Maps a possibly negative axis into [0, ndim); throws naming `op` when out of range.
int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op);
// The same for an axis of a tensor of `shape`, naming the shape in the error. `extra` widens the
// range for ops that add axes (unsqueeze and stack take axes in [-(ndim + 1), ndim + 1)).
int64_t normalize_axis(int64_t axis, const Shape& shape, const char* op, int64_t extra = 0);
std::string shape_str(const Shape& shape);

}  // namespace posgrad
