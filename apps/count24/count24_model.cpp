// The count24 model (see count24_model.h).
// Shapes: letters of shape_legend.h.
#include "apps/count24/count24_model.h"

#include <cmath>

namespace posgrad::count24 {

Count24Model::Count24Model(int64_t embedding_dim, int64_t hidden, Generator& gen) : dim_(embedding_dim) {
  embedding_ = register_module("embedding", std::make_shared<Embedding>(10, embedding_dim, gen));
  // The query starts like a Linear weight: U(-1/sqrt(D), 1/sqrt(D)).
  const double bound = 1.0 / std::sqrt(static_cast<double>(embedding_dim));
  query_ = register_parameter("query", uniform({1, embedding_dim}, -bound, bound, gen));
  key_ = register_module("key", std::make_shared<Linear>(embedding_dim, embedding_dim, true, gen));
  value_ = register_module("value", std::make_shared<Linear>(embedding_dim, 1, true, gen));
  hidden_ = register_module("hidden", std::make_shared<Linear>(1, hidden, true, gen));
  out_ = register_module("out", std::make_shared<Linear>(hidden, 1, true, gen));
}

Count24Model::Output Count24Model::run(const Tensor& digits) {
  if (digits.dim() != 2) fail("count24: digits must be int64 [B, 10], got {}", digits.describe());
  const int64_t B = digits.size(0), N = digits.size(1);
  Variable x = embedding_->forward(digits);                      // [B, N, D]
  Variable keys = key_->forward(x);                              // [B, N, D]
  Variable values = reshape(value_->forward(x), {B, N});         // [B, N]
  Variable scores = matmul(keys, transpose(query_, 0, 1));       // [B, N, 1]
  scores = reshape(scores, {B, N}) * (1.0 / std::sqrt(static_cast<double>(dim_)));
  Variable attention = softmax(scores, -1);                      // [B, N]
  Variable context = sum(attention * values, {1}, true);         // [B, 1]
  Variable h = relu(hidden_->forward(context));                  // [B, hidden]
  return {sigmoid(out_->forward(h)), attention, values};
}

}  // namespace posgrad::count24
