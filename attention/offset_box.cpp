// OffsetBox (see offset_box.h).
// Shapes: letters of shape_legend.h.
#include "attention/offset_box.h"

#include <algorithm>

#include "tensor/error.h"

namespace posgrad {

OffsetBox OffsetBox::full(const PositionPair& positions) {
  positions.keys().structure();  // grids and sequences only
  return OffsetBox{positions.relative_lo(), positions.relative_hi()};
}

OffsetBox OffsetBox::intersect(const OffsetBox& other) const {
  if (lo.size() != other.lo.size())
    fail("OffsetBox: cannot intersect a {}-D box with a {}-D box", lo.size(), other.lo.size());
  OffsetBox out = *this;
  for (size_t d = 0; d < lo.size(); ++d) {
    out.lo[d] = std::max(lo[d], other.lo[d]);
    out.hi[d] = std::min(hi[d], other.hi[d]);
  }
  return out;
}

bool OffsetBox::empty() const {
  for (size_t d = 0; d < lo.size(); ++d)
    if (lo[d] > hi[d]) return true;
  return false;
}

int64_t OffsetBox::volume() const {
  if (empty()) return 0;
  int64_t v = 1;
  for (size_t d = 0; d < lo.size(); ++d) v *= hi[d] - lo[d] + 1;
  return v;
}

double OffsetBox::pairs(const std::vector<int64_t>& structure) const {
  if (structure.size() != lo.size())
    fail("OffsetBox::pairs: a {}-D box for a {}-D grid", lo.size(), structure.size());
  double total = 1.0;
  for (size_t d = 0; d < structure.size(); ++d) {
    const int64_t S = structure[d];
    int64_t count = 0;
    for (int64_t i = 0; i < S; ++i)
      count += std::max<int64_t>(0, std::min(S - 1, i + hi[d]) - std::max<int64_t>(0, i + lo[d]) + 1);
    total *= static_cast<double>(count);
  }
  return total;
}

bool OffsetBox::contains(const std::vector<int64_t>& offset) const {
  for (size_t d = 0; d < lo.size(); ++d)
    if (offset[d] < lo[d] || offset[d] > hi[d]) return false;
  return true;
}

}  // namespace posgrad
