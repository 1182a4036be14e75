// ScoreLayout: which key every score slot of one attention call holds, and the helpers that put
// positional tables onto those slots. It is what makes the reference and the fast path share
// every positional scheme:
//
//   * dense  (the reference path): K = N slots per query, slot j is key j. Keys outside the
//     offset box (span box, causal) are blocked by a mask; scores are [B, H, N, N].
//   * window (the fast path): K = W slots per query, slot w is the key at offset box[w] from the
//     query (attention/key_window.h); keys outside the grid are blocked. Scores are [B, H, N, W]
//     and cost grows with the window, not with N^2.
//
// A relative scheme never builds a per-pair tensor: it evaluates a table over the R entries of
// the relative grid (Positions::relative_offsets) and the layout gathers it onto the slots
// (dense: an index_select through [N, N] relative indices; window: the W entries of the box,
// identical for every query).
//
// Deliberately not here: the order of the attention pipeline (multi_head_attention.cpp) and any
// scheme's formula.
// Shapes: letters of shape_legend.h.
#pragma once

#include <optional>

#include "attention/key_window.h"
#include "attention/window_attention_ops.h"
#include "attention/positions.h"
#include "autograd/functions.h"

namespace posgrad {

// An inclusive box of relative offsets (key - query) per positional dim.
struct OffsetBox {
  std::vector<int64_t> lo, hi;
  // The box that allows every offset of `positions` (the full relative grid).
  static OffsetBox full(const Positions& positions);
  OffsetBox intersect(const OffsetBox& other) const;  // error when the dims differ
  bool empty() const;                                  // some lo > hi
  int64_t volume() const;                              // number of offsets (0 when empty)
  // Query-key pairs of a grid `structure` whose offset (key - query) lies in the box: what the
  // fused path computes. Per dim the count of in-grid pairs, multiplied.
  double pairs(const std::vector<int64_t>& structure) const;
  bool contains(const std::vector<int64_t>& offset) const;
  std::string describe() const;
};

class ScoreLayout {
 public:
  // The reference layout; `box` (optional) blocks keys outside it. Trees allow no box.
  static ScoreLayout dense(const Positions& positions, const std::optional<OffsetBox>& box);
  // The fast layout over `box` (grids and sequences only).
  static ScoreLayout window(const Positions& positions, const OffsetBox& box);

  bool is_window() const { return window_.has_value(); }
  const Positions& positions() const { return positions_; }
  int64_t queries() const { return positions_.tokens(); }  // N
  int64_t slots() const { return slots_; }                 // K (N dense, W window)
  const std::optional<OffsetBox>& box() const { return box_; }
  const KeyWindow& key_window() const;

  // Relative-grid entry of each slot: int64 [N, K] (dense) or [K] (window). Grids only.
  const Tensor& relative_index() const;
  // Slot blocked (outside the grid or the box): [N, K] in `dtype` on `device`, 1 = blocked;
  // undefined when nothing is blocked. (Index tables live on the CPU; every helper below moves
  // what it needs to the device of its input, so the dense layout runs on any backend.)
  Tensor blocked(DType dtype, Device device = kCPU) const;
  // A mask over keys [B, 1, 1, N] (e.g. the padded keys of attention_block_mask) moved onto the
  // slots: [B, 1, N, K] (window) or unchanged (dense, K = N).
  Tensor keys_to_slots(const Tensor& key_mask) const;

  // table [..., R] (one value per relative entry) -> [..., N, K] (dense) or [..., 1, K] (window).
  Variable gather_relative(const Variable& table) const;
  // q [B, H, N, Dh], table [H, R, Dh] -> [B, H, N, K] with q_i . table[h, rel(i, k)].
  Variable query_relative(const Variable& q, const Variable& table) const;
  // a [B|1, H, N|1, Dh] . k[slot key] -> [B, H, N, K] (dense: [B|1, H, N|1, N]); k [B, H, N, Dh].
  Variable key_dot(const Variable& a, const Variable& k) const;
  // p [B, H, N, K], v [B, H, N, Dv] -> [B, H, N, Dv] = sum over slots p * v[slot key].
  Variable weighted_sum(const Variable& p, const Variable& v) const;

 private:
  ScoreLayout(Positions positions) : positions_(std::move(positions)) {}
  Positions positions_;
  std::optional<OffsetBox> box_;
  std::optional<KeyWindow> window_;
  int64_t slots_ = 0;
  Tensor relative_index_;   // [N, K] or [K]
  Tensor outside_box_;      // float64 [R]: 1 where the relative entry is outside the box (dense + box)
  Tensor key_index_;        // window: int64 [N, W], -1 outside the grid
};

}  // namespace posgrad
