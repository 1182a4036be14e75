// KeyWindow: the box of relative key offsets that every query of the fast attention path sees,
// on an n-D grid of tokens (1-D sequences: n = 1). It turns the box into slots: slot w of query
// i is the key at offset slot_offset(w) from i, or nothing when that key lies outside the grid.
//
// Tokens are the grid cells flattened row-major (last dim fastest), N = prod(structure). The box
// is inclusive per dim, lo[d] <= o[d] <= hi[d], and may reach past the grid; W = prod(hi - lo + 1)
// slots enumerate its offsets row-major (last dim fastest). Every query has the same W slots.
//
// Deliberately not here: the kernels that use a window (attention/window_attention_ops.h), how a
// span or causal rule becomes a box (attention/score_layout.h), and trees (no grid, no box).
// Shapes: letters of shape_legend.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace posgrad {

struct KeyWindow {
  std::vector<int64_t> structure;  // S per dim
  std::vector<int64_t> lo, hi;     // inclusive offset box per dim (keys outside the grid are invalid)

  int64_t dims() const { return static_cast<int64_t>(structure.size()); }
  int64_t tokens() const;  // N
  int64_t slots() const;   // W
  std::vector<int64_t> slot_offset(int64_t w) const;  // the offset vector of slot w
  Tensor key_index() const;                // int64 [N, W]: flat key index, -1 outside the grid
  Tensor blocked_mask(DType dtype) const;  // [N, W]: 1 where the key is outside the grid, else 0
  // Throws posgrad::Error for an empty structure, lo/hi sizes that differ from the structure's,
  // lo > hi in some dim, or S < 1.
  void validate() const;
  std::string describe() const;  // "window structure [4, 5], box [-1, -1] .. [1, 1]" for errors
};

}  // namespace posgrad
