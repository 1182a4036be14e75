// TokenCountsScope (see token_counts.h).
#include "nn/token_counts.h"

#include "tensor/error.h"
#include "tensor/ops.h"

namespace posgrad {

namespace {

thread_local const TokenCountsScope* current = nullptr;

// How often each of `indices` occurs in `among` (both flat int64): [n] of dtype.
Tensor counts_among(const Tensor& indices, const Tensor& among, int64_t num, DType dtype) {
  const Tensor ones = Tensor::ones({among.numel()}, dtype, among.device());
  return index_select(index_add({num}, 0, among, ones), 0, indices);
}

// Whether rows [first, first + B) of `global` are `indices` [B, ...] (shape and values).
bool rows_are(const Tensor& global, int64_t first, const Tensor& indices) {
  if (!global.defined() || global.dtype() != kInt64 || global.dim() != indices.dim() || indices.dim() < 1) return false;
  for (int64_t d = 1; d < indices.dim(); ++d)
    if (global.size(d) != indices.size(d)) return false;
  if (global.size(0) < first + indices.size(0)) return false;
  return global.narrow(0, first, indices.size(0)).contiguous().to_vector<int64_t>() ==
         indices.contiguous().to_vector<int64_t>();
}

std::string describe_shape(const Tensor& t) { return fmt::format("[{}]", fmt::join(t.shape(), ", ")); }

}  // namespace

TokenCountsScope::TokenCountsScope(std::vector<Tensor> global_indices, int64_t first_row)
    : previous_(current), global_(std::move(global_indices)), first_row_(first_row) {
  if (first_row < 0) fail("TokenCountsScope: the first row must be >= 0, got {}", first_row);
  current = this;
}

TokenCountsScope::~TokenCountsScope() { current = previous_; }

Tensor token_counts_of_rows(const Tensor& indices, int64_t num, DType dtype, const char* what) {
  const Tensor flat = indices.contiguous().reshape({indices.numel()});  // [n]
  if (!current) return counts_among(flat, flat, num, dtype);
  const Tensor* match = nullptr;
  for (const Tensor& global : current->global_indices()) {
    if (!rows_are(global, current->first_row(), indices)) continue;
    if (match)
      fail("{}: the indices {} are rows {}..{} of two global tensors of the TokenCountsScope; the counts are ambiguous",
           what, describe_shape(indices), current->first_row(), current->first_row() + indices.size(0) - 1);
    match = &global;
  }
  if (!match)
    fail("{}: the indices {} are not rows {}..{} of any global tensor of the TokenCountsScope ({} tensors)", what,
         describe_shape(indices), current->first_row(), current->first_row() + indices.size(0) - 1,
         current->global_indices().size());
  return counts_among(flat, match->contiguous().reshape({match->numel()}), num, dtype);
}

}  // namespace posgrad
