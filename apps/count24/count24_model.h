// The count24 model exactly as the seed describes it: Embedding(10, 5); one learned query
// [1, 5]; keys from Linear(5, 5) and values from Linear(5, 1) of the embeddings; the
// attention-weighted value goes through Linear(1, 200) - ReLU - Linear(200, 1) - Sigmoid.
// Scores are scaled by 1/sqrt(5) (scaled dot-product attention).
// Shapes: letters of shape_legend.h.
#pragma once

#include "nn/nn.h"
#include "posgrad.h"

namespace posgrad::count24 {

class Count24Model : public Module {
 public:
  Count24Model(int64_t embedding_dim, int64_t hidden, Generator& gen);

  struct Output {
    Variable probability;  // [B, 1], P(more 2s than 4s)
    Variable attention;    // [B, 10], softmax over the positions
    Variable values;       // [B, 10], the value of each position
  };
  Output run(const Tensor& digits);  // digits int64 [B, 10]

 private:
  int64_t dim_;
  std::shared_ptr<Embedding> embedding_;
  Variable query_;  // [1, D]
  std::shared_ptr<Linear> key_, value_, hidden_, out_;
};

}  // namespace posgrad::count24
