// Greedy decoding with an EncoderDecoder: encode the source once, then feed the decoder its own
// argmax, one token at a time. On sequence positions (greedy_decode), for a fixed number of steps:
//
//   tokens[:, 0] = first (SOS, or the given first output token of REPEAT and REVERSE)
//   tokens[:, t+1] = argmax_v logits(decode(tokens[:, 0..t]))[:, t, v]    (the first index on ties)
//
// With the cache (the default) each step runs the decoder on the one new token: every
// self-attention keeps the keys and values of the tokens before it (KeyValueCache), so a step
// costs O(t) instead of the O(t^2) of decoding the whole prefix again; the cross-attention's
// memory is the encoder's output, computed once. Both ways give the same tokens (a test checks it).
// The model runs without gradients and in evaluation mode (dropout off); its mode is restored.
// On tree positions (greedy_decode_tree, below) the next node's heap position follows from the
// labels decoded so far, so that decoder runs without the cache, on the whole prefix per step.
// Deliberately not here: stopping at EOS (the tasks know their lengths; the caller cuts) and beam
// search.
// Shapes: letters of shape_legend.h (N source tokens, T decoded steps).
#pragma once

#include <functional>

#include "attention/transduction/encoder_decoder.h"

namespace posgrad {

struct GreedyDecoding {
  int64_t steps = 0;       // T: tokens predicted after the first
  bool use_cache = true;   // false: decode the whole prefix at every step (the reference)
};

// source int64 [B, N], source_padding [B, N] (non-zero = padded), first int64 [B]
// -> int64 [B, T + 1]: first, then the T predicted tokens.
Tensor greedy_decode(EncoderDecoder& model, const Tensor& source, const Tensor& source_padding, const Tensor& first,
                     const GreedyDecoding& options);

}  // namespace posgrad

namespace posgrad {

// Greedy decoding of trees on heap positions (tree APE), without a cache: the position of the next
// output node follows from the labels decoded so far, as the output order lists the nodes:
//   depth-first (pre-order)  a stack of pending children: after an operator at heap p, its
//                            children 2p + 1 then 2p are pushed, so the left one comes next;
//   breadth-first            a queue: after an operator at heap p, 2p and 2p + 1 are appended;
// a leaf adds nothing; the first output node is the root (heap 1, after SOS at 0). An example is
// done when nothing is pending, or after max_nodes nodes, or when a child would lie deeper than
// max_depth (then it stops there: its output cannot be a tree of the task).
struct TreeGreedyDecoding {
  bool depth_first = true;                   // the output order
  std::function<bool(int64_t)> is_operator;  // a label with two children
  int64_t max_nodes = 0;                     // the most output nodes per example
  int64_t max_depth = 16;                    // the deepest child position (Positions::tree's limit)
};

struct DecodedTree {
  std::vector<int64_t> labels;  // SOS, then the output nodes in the output order
  std::vector<int64_t> heap;    // their heap positions (0 for SOS)
};

// source int64 [B, N], source_padding [B, N], source_heap int64 [B, N] -> one DecodedTree per row.
std::vector<DecodedTree> greedy_decode_tree(EncoderDecoder& model, const Tensor& source, const Tensor& source_padding,
                                            const Tensor& source_heap, const TreeGreedyDecoding& options);

}  // namespace posgrad
