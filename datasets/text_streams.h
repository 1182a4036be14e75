// TextStreams: the contiguous streams of segment-recurrent language-model training (spec
// adaptive_span.md section 3.2, the original `_batchify` and trainer):
//
//   the token stream [L] is cut into B rows of n = L / B tokens (the tail is dropped);
//   each step takes columns pos .. pos + M - 1 of every row as input [B, M] and the columns one
//   to the right as target [B, M], then pos += M;
//   when the next segment (and its shifted target) would run past the end of the rows, pos
//   restarts at a random offset in [0, M) and `restarted` tells the caller to zero its caches.
//
// For evaluation (the paper's full-eval protocol, spec section 3.3 and issue #23): the split is
// cut into B = 8 rows, read block by block from pos = 0 with the cache carried and no restart;
// blocks() counts the complete blocks (the final partial block is skipped).
// A row shorter than one segment plus its target is an Error that says so.
// Deliberately not here: shuffling, document boundaries, padding, the cache itself.
// Shapes: letters of shape_legend.h (L: tokens of the stream, n: tokens per row).
#pragma once

#include <cstdint>

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace posgrad {

class TextStreams {
 public:
  // tokens int64 [L]; `what` names the stream in errors ("the training split of input.txt").
  TextStreams(const Tensor& tokens, int64_t batch, int64_t segment, const std::string& what);

  struct Segment {
    Tensor input, target;     // int64 [B, M]
    bool restarted = false;   // pos restarted (training): the caches must be zeroed first
  };
  // Training: the next segment, restarting at a random offset (drawn from `gen`) at the end.
  Segment next(Generator& gen);
  // Evaluation: block k (0 <= k < blocks()) without restarts.
  Segment block(int64_t k) const;
  int64_t blocks() const;              // complete blocks of M with their targets
  int64_t position() const { return pos_; }
  void set_position(int64_t pos);      // to resume a run
  int64_t batch() const { return rows_.size(0); }
  int64_t row_length() const { return rows_.size(1); }  // n
  int64_t segment() const { return segment_; }

 private:
  Segment take(int64_t pos) const;
  Tensor rows_;  // int64 [B, n]
  int64_t segment_;
  int64_t pos_ = 0;
};

}  // namespace posgrad
