// MaskRows: which rows of a global batch this process computes, so that the random masks of
// Dropout and DropPath are the single process's masks of those rows. In a data-parallel run each
// rank computes rows [first, first + count) of a global batch of `global` rows; a mask drawn for
// the rank's tensor [count, ...] then takes its elements from where those rows' elements lie in
// the draw of the global tensor [global, ...] (Philox is counter-based: element e of a draw is
// counter block offset + e / 4, lane e % 4), and the generator moves on by the global draw's
// length, as the single process's does. So every rank's generators stay in the same state as one
// process's, and a checkpoint's generator states load with any rank count.
//
//   MaskRowsScope rows({.first = 8, .count = 8, .global = 16});   // rank 1 of 2, batch 16
//   model.forward(my_rows);        // dropout(x [8, T, D]) = rows 8..15 of dropout(x [16, T, D])
//
// The masked tensors must be batch-major: their first axis runs over the rows (attention
// probabilities [B, H, T, S], activations [B, T, D], or [B * T, D] flattened row by row), so that
// the rank's elements are one contiguous range of the global tensor's. A mask whose first axis is
// not a multiple of the rows is an Error. Without a scope (one process) masks are drawn as they always were.
// Deliberately does not: choose the rows (the app's data shard does) or hold generators.
#pragma once

#include <cstdint>

#include "tensor/ops.h"
#include "tensor/random.h"

namespace posgrad {

struct MaskRows {
  int64_t first = 0;   // the first global row this process computes
  int64_t count = 0;   // how many rows (the masked tensors' batch axis)
  int64_t global = 0;  // the global batch's rows
};

// Sets the rows for the masks drawn on this thread until it is destroyed (scopes nest).
class MaskRowsScope {
 public:
  explicit MaskRowsScope(MaskRows rows);
  ~MaskRowsScope();
  MaskRowsScope(const MaskRowsScope&) = delete;
  MaskRowsScope& operator=(const MaskRowsScope&) = delete;

 private:
  const MaskRows* previous_;
  MaskRows rows_;
};

// The innermost scope's rows on this thread; nullptr outside every scope.
const MaskRows* current_mask_rows();

// bernoulli(shape, p, gen) (tensor/ops.h) for a mask of the current rows: shape [count, ...]
// takes its elements from the global draw [global, ...]; without a scope, bernoulli itself.
// `what` names the layer in the error of a mask that is not whole rows.
Tensor bernoulli_for_rows(const Shape& shape, double p, Generator& gen, DType dtype, Device device, const char* what);

}  // namespace posgrad
