// OffsetBox: an inclusive box of relative offsets (key - query) per positional dim. It is how a
// hook limits the keys a query may see (AttentionHook::key_range: Gaussian span threshold,
// adaptive span, local window) and how the causal mask is written; a layer intersects them. The
// reference path masks the keys outside the box, the fused path never visits them.
//
// Deliberately not here: which hooks set a box (attention_hook.h) and trees (no offsets).
// Shapes: letters of shape_legend.h.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/positions.h"

namespace posgrad {

struct OffsetBox {
  std::vector<int64_t> lo, hi;
  // The box that allows every offset of `positions` (the full relative grid).
  static OffsetBox full(const PositionPair& positions);
  OffsetBox intersect(const OffsetBox& other) const;  // error when the dims differ
  bool empty() const;                                  // some lo > hi
  int64_t volume() const;                              // number of offsets (0 when empty)
  // Query-key pairs of a grid `structure` whose offset (key - query) lies in the box: what the
  // fused path computes. Per dim the count of in-grid pairs, multiplied.
  double pairs(const std::vector<int64_t>& structure) const;
  bool contains(const std::vector<int64_t>& offset) const;
};

}  // namespace posgrad
