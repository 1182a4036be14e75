// SequencePooling (see sequence_pooling.h).
// Shapes: letters of shape_legend.h.
#include "nn/sequence_pooling.h"

#include "autograd/functions.h"

namespace posgrad {

SequencePooling::SequencePooling(int64_t width, Generator& gen) : width_(width) {
  if (width < 1) fail("SequencePooling: width must be >= 1, got {}", width);
  score_ = register_module("attention_pool", std::make_shared<Linear>(width, 1, true, gen));
}

Variable SequencePooling::forward(const Variable& x) {
  if (x.dim() != 3 || x.size(2) != width_)
    fail("SequencePooling: input must be [B, N, {}], got {}", width_, x.value().describe());
  const Variable a = softmax(score_->forward(x), 1);  // [B, N, 1]
  last_weights_ = a.value().reshape({x.size(0), x.size(1)});
  return reshape(matmul(transpose(a, 1, 2), x), {x.size(0), width_});  // [B, 1, N] @ [B, N, D]
}

}  // namespace posgrad
