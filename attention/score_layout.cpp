// ScoreLayout (see score_layout.h).
// Shapes: letters of shape_legend.h.
#include "attention/score_layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace posgrad {

// ------------------------------------------------------------------ OffsetBox

OffsetBox OffsetBox::full(const Positions& positions) {
  OffsetBox box;
  for (int64_t s : positions.structure()) {
    box.lo.push_back(-(s - 1));
    box.hi.push_back(s - 1);
  }
  return box;
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

std::string OffsetBox::describe() const {
  std::vector<std::string> parts;
  for (size_t d = 0; d < lo.size(); ++d) parts.push_back(fmt::format("[{}, {}]", lo[d], hi[d]));
  return fmt::format("{}", fmt::join(parts, " x "));
}

// ------------------------------------------------------------------ ScoreLayout

ScoreLayout ScoreLayout::dense(const Positions& positions, const std::optional<OffsetBox>& box) {
  ScoreLayout layout(positions);
  layout.slots_ = positions.tokens();
  if (positions.is_tree()) {
    if (box) fail("attention: a key range (span box or causal window) needs grid positions, not {}", positions.describe());
    return layout;
  }
  layout.relative_index_ = positions.dense_relative_index();
  if (box) {
    const OffsetBox clipped = box->intersect(OffsetBox::full(positions));
    const int64_t R = positions.relative_size(), n = positions.dims();
    const std::vector<int64_t> offsets = positions.relative_offsets().to_vector<int64_t>();
    std::vector<double> outside(static_cast<size_t>(R));
    for (int64_t r = 0; r < R; ++r) {
      std::vector<int64_t> o(offsets.begin() + r * n, offsets.begin() + (r + 1) * n);
      outside[static_cast<size_t>(r)] = clipped.contains(o) ? 0.0 : 1.0;
    }
    layout.outside_box_ = Tensor::from_vector(outside, {R});
    layout.box_ = clipped;
  }
  return layout;
}

ScoreLayout ScoreLayout::window(const Positions& positions, const OffsetBox& box) {
  if (positions.is_tree()) fail("attention: the fast (window) path needs grid positions, not {}", positions.describe());
  ScoreLayout layout(positions);
  const OffsetBox clipped = box.intersect(OffsetBox::full(positions));
  if (clipped.empty()) fail("attention: the key range {} leaves no key for {}", box.describe(), positions.describe());
  KeyWindow window{positions.structure(), clipped.lo, clipped.hi};
  window.validate();
  layout.slots_ = window.slots();
  std::vector<int64_t> rel(static_cast<size_t>(layout.slots_));
  for (int64_t w = 0; w < layout.slots_; ++w) rel[static_cast<size_t>(w)] = positions.relative_index(window.slot_offset(w));
  layout.relative_index_ = Tensor::from_vector(rel, {layout.slots_});
  layout.key_index_ = window.key_index();
  layout.box_ = clipped;
  layout.window_ = std::move(window);
  return layout;
}

const KeyWindow& ScoreLayout::key_window() const {
  if (!window_) fail("ScoreLayout: the dense layout has no key window");
  return *window_;
}

const Tensor& ScoreLayout::relative_index() const {
  if (positions_.is_tree()) fail("attention: this scheme needs relative offsets, which {} does not have", positions_.describe());
  return relative_index_;
}

Tensor ScoreLayout::blocked(DType dtype, Device device) const {
  if (window_) return window_->blocked_mask(dtype).to(device);
  if (!outside_box_.defined()) return Tensor();
  const int64_t N = queries();
  return index_select(outside_box_, 0, relative_index_.reshape({N * N})).reshape({N, N}).to(dtype).to(device);
}

Tensor ScoreLayout::keys_to_slots(const Tensor& key_mask) const {
  const int64_t N = queries();
  if (key_mask.dim() != 4 || key_mask.size(1) != 1 || key_mask.size(2) != 1 || key_mask.size(3) != N)
    fail("attention: a mask over keys must be [B, 1, 1, N] with N = {}, got {}", N, key_mask.describe());
  if (!window_) return key_mask;
  const int64_t B = key_mask.size(0);
  // Slots outside the grid have key -1: read key 0 there (they are blocked anyway).
  Tensor keys = maximum(key_index_, Tensor::zeros({}, DType::Int64)).reshape({N * slots_}).to(key_mask.device());
  return index_select(key_mask, 3, keys).reshape({B, 1, N, slots_});
}

Variable ScoreLayout::gather_relative(const Variable& table) const {
  const Tensor& rel = relative_index();
  const int64_t R = positions_.relative_size(), N = queries();
  if (table.dim() < 1 || table.size(-1) != R)
    fail("attention: a relative table must end in R = {} entries for {}, got {}", R, positions_.describe(),
         table.value().describe());
  Shape lead(table.value().shape().begin(), table.value().shape().end() - 1);
  Shape out_shape = lead;
  if (window_) {
    out_shape.push_back(1);
    out_shape.push_back(slots_);
    return reshape(index_select(table, -1, rel.to(table.value().device())), out_shape);
  }
  out_shape.push_back(N);
  out_shape.push_back(N);
  return reshape(index_select(table, -1, rel.reshape({N * N}).to(table.value().device())), out_shape);
}

Variable ScoreLayout::query_relative(const Variable& q, const Variable& table) const {
  const Tensor& rel = relative_index();
  const int64_t R = positions_.relative_size(), N = queries();
  if (q.dim() != 4 || q.size(2) != N)
    fail("attention: queries must be [B, H, N, Dh] with N = {}, got {}", N, q.value().describe());
  const int64_t B = q.size(0), H = q.size(1), Dh = q.size(3);
  if (table.dim() != 3 || table.size(0) != H || table.size(1) != R || table.size(2) != Dh)
    fail("attention: relative table must be [H, R, Dh] = [{}, {}, {}], got {}", H, R, Dh, table.value().describe());
  if (window_) {
    Variable slots = index_select(table, 1, rel.to(table.value().device()));  // [H, W, Dh]
    return matmul(q, transpose(slots, -1, -2));               // [B, H, N, W]
  }
  Variable per_entry = matmul(q, transpose(table, -1, -2));   // [B, H, N, R]
  // out[b, h, i, j] = per_entry[b, h, i, rel(i, j)]: one index_select over the flattened (i, r).
  const Tensor& flat = positions_.dense_row_relative_index();
  return reshape(index_select(reshape(per_entry, {B, H, N * R}), 2, flat.reshape({N * N}).to(q.value().device())),
                 {B, H, N, N});
}

Variable ScoreLayout::key_dot(const Variable& a, const Variable& k) const {
  if (!window_) return matmul(a, transpose(k, -1, -2));
  return window_scores(contiguous(expand(a, k.value().shape())), k, *window_);
}

Variable ScoreLayout::weighted_sum(const Variable& p, const Variable& v) const {
  if (!window_) return matmul(p, v);
  return window_weighted_sum(p, v, *window_);
}

}  // namespace posgrad
