// TransductionExample: one source -> target pair of the APE transduction tasks (sequence tasks,
// sequence_tasks.h; tree tasks, tree_tasks.h), as token lists, before batching
// (transduction_batch.h). The special tokens of the tasks are here too.
//
// The decoder is trained by teacher forcing on `target`: it reads target[0 .. L-2] and predicts
// target[1 .. L-1], so target[0] (SOS, or the first output token of REPEAT and REVERSE, which
// have none) is given and never scored.
// Tree tasks also carry heap positions (root 1, children 2p and 2p + 1; 0 = SOS, no position) and
// the traversal enumeration of the target, from which the decoder's causal mask is derived:
// target token i may attend target token j exactly when order[j] <= order[i] (SOS has order 0).
// This file deliberately holds data only: generation and batching live in their own files.
// Shapes: letters of shape_legend.h (N source tokens, L target tokens).
#pragma once

#include <cstdint>
#include <vector>

namespace posgrad {

inline constexpr int64_t kSosToken = 0;  // start of sequence (COPY and the tree tasks)
// End of sequence (COPY only): vocab_size + 1 for a task whose content tokens are 1..vocab_size.
inline int64_t eos_token(int64_t vocab_size) { return vocab_size + 1; }

struct TransductionExample {
  std::vector<int64_t> source;        // N tokens, the encoder's input
  std::vector<int64_t> target;        // L tokens, teacher-forced (see above)
  std::vector<int64_t> source_heap;   // trees: N heap positions (SOS 0); empty for sequence tasks
  std::vector<int64_t> target_heap;   // trees: L heap positions (SOS 0); empty for sequence tasks
  std::vector<int64_t> target_order;  // trees: L traversal numbers (SOS 0); empty: the index order
  bool operator==(const TransductionExample&) const = default;
};

// The three parts of a task's data, drawn one after another from one stream (train, dev, test).
struct TransductionSplits {
  std::vector<TransductionExample> train, dev, test;
};

// How many examples each part gets (the paper: 6000 / 2000 / 2000).
struct SplitSizes {
  int64_t train = 6000, dev = 2000, test = 2000;
};

}  // namespace posgrad
