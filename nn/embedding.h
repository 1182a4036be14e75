// Embedding: a learned table weight [num, dim]; forward looks rows up by int64 index.
// indices (any shape, e.g. [B, N]) -> [..., dim] (e.g. [B, N, D]). Default init N(0, 1) like
// PyTorch's nn.Embedding. An index outside [0, num) is an Error naming it and the table size.
// Option scale_grad_by_freq (PyTorch's flag of the same name; the APE paper's tied embedding uses
// it, spec ape.md 3.5): the gradient a forward sends to row r is divided by how often r occurs in
// that forward's indices, so frequent tokens (padding, SOS) do not dominate the table's updates;
// in a data-parallel rank under a TokenCountsScope (nn/token_counts.h), by its count in the
// global batch, as in the single process.
// That backward is deliberately not the gradient of the lookup: gradcheck does not apply to it.
//
// Deliberately not here: padding_idx, max_norm and sparse gradients (the gradient is a dense
// [num, dim] tensor, accumulated with index_add).
// Shapes: letters of shape_legend.h.
#pragma once

#include "nn/module.h"
#include "tensor/random.h"

namespace posgrad {

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator& gen);

  Variable forward(const Tensor& indices);          // int64 [...] -> [..., dim]
  Variable forward(const Variable& indices) override;  // the same, for Sequential (no gradient to indices)

  void set_scale_grad_by_freq(bool on) { scale_grad_by_freq_ = on; }
  bool scale_grad_by_freq() const { return scale_grad_by_freq_; }

  const Variable& weight() const { return weight_; }  // [num, dim]
  int64_t num_embeddings() const { return num_; }
  int64_t embedding_dim() const { return dim_; }
  std::string extra_repr() const override;

 private:
  int64_t num_, dim_;
  Variable weight_;
  bool scale_grad_by_freq_ = false;
};

}  // namespace posgrad
