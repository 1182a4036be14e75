// KeyWindow (see key_window.h): slot enumeration and the [N, W] key-index and blocked tables.
// These tables are for the layout and for tests; the kernels never read them.
// Shapes: letters of shape_legend.h.
#include "attention/key_window.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tensor/error.h"

namespace posgrad {

void KeyWindow::validate() const {
  if (structure.empty()) fail("KeyWindow: empty structure (need at least one grid dim)");
  if (lo.size() != structure.size() || hi.size() != structure.size())
    fail("KeyWindow: lo {} and hi {} must have one entry per grid dim of structure {}", lo, hi, structure);
  for (size_t d = 0; d < structure.size(); ++d) {
    if (structure[d] < 1) fail("KeyWindow: structure {} has a dim of size {} < 1", structure, structure[d]);
    if (lo[d] > hi[d]) fail("KeyWindow: empty box in dim {}: lo {} > hi {}", d, lo[d], hi[d]);
  }
}

std::string KeyWindow::describe() const {
  return fmt::format("window structure {}, box {} .. {}", structure, lo, hi);
}

int64_t KeyWindow::tokens() const {
  int64_t n = 1;
  for (int64_t s : structure) n *= s;
  return n;
}

int64_t KeyWindow::slots() const {
  int64_t w = 1;
  for (size_t d = 0; d < lo.size() && d < hi.size(); ++d) w *= hi[d] - lo[d] + 1;
  return w;
}

std::vector<int64_t> KeyWindow::slot_offset(int64_t w) const {
  validate();
  if (w < 0 || w >= slots()) fail("KeyWindow::slot_offset: slot {} outside [0, {})", w, slots());
  std::vector<int64_t> o(structure.size());
  for (int64_t d = dims() - 1; d >= 0; --d) {
    const int64_t extent = hi[d] - lo[d] + 1;
    o[d] = lo[d] + w % extent;
    w /= extent;
  }
  return o;
}

Tensor KeyWindow::key_index() const {
  validate();
  const int64_t N = tokens(), W = slots(), n = dims();
  // Offsets of every slot, flattened [W, n].
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(W * n));
  for (int64_t w = 0; w < W; ++w) {
    const std::vector<int64_t> o = slot_offset(w);
    offsets.insert(offsets.end(), o.begin(), o.end());
  }
  Tensor out = Tensor::empty({N, W}, kInt64);
  int64_t* dst = out.data<int64_t>();
  std::vector<int64_t> c(static_cast<size_t>(n));
  for (int64_t i = 0; i < N; ++i) {
    int64_t rest = i;  // coordinates of query i
    for (int64_t d = n - 1; d >= 0; --d) {
      c[d] = rest % structure[d];
      rest /= structure[d];
    }
    for (int64_t w = 0; w < W; ++w) {
      int64_t key = 0;
      for (int64_t d = 0; d < n; ++d) {
        const int64_t x = c[d] + offsets[w * n + d];
        if (x < 0 || x >= structure[d]) {
          key = -1;
          break;
        }
        key = key * structure[d] + x;
      }
      dst[i * W + w] = key;
    }
  }
  return out;
}

Tensor KeyWindow::blocked_mask(DType dtype) const {
  const Tensor keys = key_index();
  Tensor out = Tensor::empty(keys.shape(), dtype);
  const int64_t* k = keys.data<int64_t>();
  dispatch_all(dtype, [&]<typename T>() {
    T* o = out.data<T>();
    for (int64_t i = 0; i < keys.numel(); ++i) o[i] = k[i] < 0 ? T(1) : T(0);
  });
  return out;
}

}  // namespace posgrad
