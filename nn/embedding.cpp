// Embedding (see embedding.h).
#include "nn/embedding.h"

#include "autograd/functions.h"
#include "nn/init.h"
#include "nn/token_counts.h"

namespace posgrad {

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator& gen)
    : num_(num_embeddings), dim_(embedding_dim) {
  if (num_embeddings < 0 || embedding_dim < 0)
    fail("Embedding: sizes must be >= 0, got num={} dim={}", num_embeddings, embedding_dim);
  Tensor w = Tensor::empty({num_embeddings, embedding_dim});
  init::normal_(w, 0.0, 1.0, gen);
  weight_ = register_parameter("weight", w);
}

Variable Embedding::forward(const Tensor& indices) {
  if (!indices.defined() || indices.dtype() != kInt64)
    fail("Embedding({}, {}): indices must be an int64 tensor, got {}", num_, dim_,
         indices.defined() ? indices.describe() : std::string("an undefined tensor"));
  if (indices.numel() > 0) {  // one clear message instead of the gather kernel's
    // Both extremes in one read-back (one synchronisation when the indices are on a GPU).
    const std::vector<int64_t> range =
        cat(std::vector<Tensor>{amin(indices).reshape({1}), amax(indices).reshape({1})}, 0).to_vector<int64_t>();
    const int64_t lo = range[0], hi = range[1];
    if (lo < 0 || hi >= num_)
      fail("Embedding({}, {}): index {} is out of range [0, {}) (indices {})", num_, dim_, lo < 0 ? lo : hi, num_,
           indices.describe());
  }
  if (!scale_grad_by_freq_) return index_select(weight_, 0, indices);
  // The lookup, with a backward that divides each occurrence's gradient by its row's count.
  const Tensor flat = indices.contiguous().reshape({indices.numel()});                 // [n]
  // [n], >= 1: in these indices, or in the global batch of a data-parallel rank (nn/token_counts.h)
  const Tensor counts = token_counts_of_rows(indices, num_, weight_.dtype(), "Embedding");
  const Shape table = {num_, dim_};
  const int64_t n = indices.numel(), dim = dim_;
  return record("embedding_scale_grad_by_freq", index_select(weight_.value(), 0, indices), {weight_},
                [flat, counts, table, n, dim](const Tensor& g, const std::vector<bool>&) {
                  const Tensor scaled = g.contiguous().reshape({n, dim}) / counts.reshape({n, 1});  // [n, dim]
                  return std::vector<Tensor>{index_add(table, 0, flat, scaled)};
                });
}

Variable Embedding::forward(const Variable& indices) { return forward(indices.value()); }

std::string Embedding::extra_repr() const { return fmt::format("num={}, dim={}", num_, dim_); }

}  // namespace posgrad
