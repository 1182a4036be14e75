// TokenCountsScope: the global batch's token indices, so that an Embedding with scale_grad_by_freq
// in a data-parallel rank divides each token's gradient by the token's count in the whole global
// batch, as the single process does, not by its count in the rank's rows. Every rank builds the
// whole global batch already (the apps' data shards), so the counts need no communication: the
// scope holds the global index tensors the model looks up (e.g. the source [G, N] and the
// decoder input [G, T]) and the first global row the rank computes; an embedding lookup of the
// rank's indices [B, ...] takes its counts from the global tensor whose rows [first, first + B)
// are those indices.
//
//   TokenCountsScope counts({global.source, global.decoder_input}, /*first_row=*/8);  // rank 1 of 2
//   model.forward(my_rows);   // embedding(source rows 8..15): counts over all 16 rows of global.source
//
// Indices that are no such rows of exactly one global tensor are an Error (the scope does not
// fit the forward). Without a scope (one process, evaluation) the counts are those of the
// lookup's own indices, as they always were.
// Deliberately does not: choose the rows (the app's data shard does), hold the counts between
// forwards, or look inside the model: the app lists the tensors.
// Shapes: letters of shape_legend.h.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace posgrad {

// Sets the global index tensors for the lookups on this thread until it is destroyed (scopes nest).
class TokenCountsScope {
 public:
  TokenCountsScope(std::vector<Tensor> global_indices, int64_t first_row);
  ~TokenCountsScope();
  TokenCountsScope(const TokenCountsScope&) = delete;
  TokenCountsScope& operator=(const TokenCountsScope&) = delete;

  const std::vector<Tensor>& global_indices() const { return global_; }
  int64_t first_row() const { return first_row_; }

 private:
  const TokenCountsScope* previous_;
  std::vector<Tensor> global_;
  int64_t first_row_;
};

// The count of each of `indices`' tokens (int64 [B, ...], flattened row by row: [n]) in the global
// tensor of the innermost scope whose rows [first_row, first_row + B) equal `indices`, or, outside
// every scope, in `indices` itself; float [n] of `dtype`, every count >= 1. Tokens are < `num`.
// `what` names the layer in the error of indices that fit no global tensor.
Tensor token_counts_of_rows(const Tensor& indices, int64_t num, DType dtype, const char* what);

}  // namespace posgrad
