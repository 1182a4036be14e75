// The CPU kernels behind attention/window_attention_ops.h, on raw contiguous buffers. Internal to
// the fast attention path (and its tests and benchmark); the public API is the two ops.
//
// The window seen as a band. Tokens form `rows` rows of S tokens along the last grid dim (the
// leading coordinates fixed). A box of offsets splits into `combos` combinations of leading-dim
// offsets times `width` consecutive last-dim offsets lo .. lo + width - 1; slot w = c * width + j.
// Under combination c, query row r looks at one key row (key_row), and the keys of a block of bq
// consecutive queries are one contiguous run of at most bq + width - 1 keys of that row. So each
// (block, combination) is one small GEMM against that run into a scratch tile, whose band
// (diagonals) is the block's slots. Three kernels cover both ops, forward and backward:
//
//   band_dots              out[i, w] = a[i] . b[key(i, w)]                 (0 outside)   [.., N, W]
//   band_apply             out[i]    = sum_w p[i, w] b[key(i, w)]                        [.., N, D]
//   band_apply_transposed  out[j]    = sum_{(i, w): key(i, w) = j} p[i, w] a[i]          [.., N, D]
//
// band_apply_transposed walks blocks of keys (and the run of queries that sees them), so every
// output row is written by one work item: OpenMP runs over (batch*head, row, block) with no races
// and no per-thread partial sums. GEMMs inside run single-threaded (tensor/cpu/gemm.h).
//
// Deliberately not here: autograd, shape checks (the ops do them), other devices.
// Shapes: letters of shape_legend.h; BH = B * H, and D is a buffer's feature width (Dh or Dv).
#pragma once

#include <cstdint>
#include <vector>

#include "attention/key_window.h"

namespace posgrad::window_detail {

struct BandPlan {
  int64_t S = 1;       // tokens per row (the last grid dim)
  int64_t rows = 1;    // N / S
  int64_t lo = 0;      // lowest last-dim offset of the box
  int64_t width = 1;   // last-dim offsets in the box
  int64_t combos = 1;  // leading-dim offset combinations; W = combos * width
  int64_t block = 64;  // queries (or keys) per GEMM block
  std::vector<int64_t> key_row;    // [rows * combos]: key row of query row r under combo c, -1 outside the grid
  std::vector<int64_t> query_row;  // [rows * combos]: query row whose combo c lands on key row r, -1 outside
  int64_t tokens() const { return rows * S; }
  int64_t slots() const { return combos * width; }
};

// block <= 0 picks the default for the window's width (measured, see the .cpp).
BandPlan make_band_plan(const KeyWindow& window, int64_t block = 0);

// BH = batch * heads; every buffer is contiguous [BH, N, *]. T is float or double.
template <typename T>
void band_dots(const BandPlan& plan, int64_t BH, int64_t D, const T* a, const T* b, T* out);
template <typename T>
void band_apply(const BandPlan& plan, int64_t BH, int64_t D, const T* p, const T* b, T* out);
template <typename T>
void band_apply_transposed(const BandPlan& plan, int64_t BH, int64_t D, const T* p, const T* a, T* out);

}  // namespace posgrad::window_detail
