// The APE paper's sequence transduction tasks COPY, REPEAT and REVERSE (APE spec section 7.2):
// random words over a small vocabulary, lengths ~ Normal(100, 10) truncated to integers,
// 6000 / 2000 / 2000 train / dev / test examples from one random stream seeded 42.
//
//   COPY     w over 1..V        source = target = (SOS = 0, w, EOS = V + 1)
//   REPEAT   w over 1..V-1      source = w, target = w w     (no SOS / EOS)
//   REVERSE  w over 1..V-1      source = w, target = reverse(w) (no SOS / EOS)
//
// with V = vocab_size = 20; a model's vocabulary is V + 2 (0 .. V + 1).
//
// Generation order (spec 7.1, as the released code draws): for each part in turn (train, dev,
// test), first every length of that part, then the words of its examples in order, each word's
// tokens left to right; all from one stream.
// Where the spec leaves a choice, and what we chose:
//   * the random numbers: the released code draws lengths from torch and tokens from Python's
//     `random`, both seeded 42; we draw both from one DrawStream keyed by
//     derive_seed(seed, SeedStream::Transduction) (Philox), so the words are not the released
//     ones, but the same seed always gives the same data, here and on any machine;
//   * a truncated length below 1 (about 1e-23 likely at Normal(100, 10)) becomes 1, so no word is
//     empty.
// This file deliberately has no batching (transduction_batch.h) and no tree tasks (tree_tasks.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "datasets/transduction/draw_stream.h"
#include "datasets/transduction/transduction_example.h"

namespace posgrad {

enum class SequenceTask { Copy, Repeat, Reverse };

// "copy", "repeat", "reverse"; anything else is an Error listing the three.
SequenceTask parse_sequence_task(const std::string& name);
std::string sequence_task_name(SequenceTask task);

struct SequenceTaskSettings {
  int64_t vocab_size = 20;     // V: content tokens 1..V (COPY) or 1..V-1 (REPEAT, REVERSE)
  double length_mean = 100.0;  // word lengths ~ Normal(mean, stddev), truncated, at least 1
  double length_stddev = 10.0;
};

// The example a task makes of one word (tokens checked against the task's range).
TransductionExample sequence_example(SequenceTask task, std::span<const int64_t> word, int64_t vocab_size);

// The content tokens a task draws from: 1..V for COPY, 1..V-1 for REPEAT and REVERSE.
int64_t sequence_task_max_token(SequenceTask task, int64_t vocab_size);

// One word length drawn from the stream (truncated normal, at least 1).
int64_t draw_sequence_length(const SequenceTaskSettings& settings, DrawStream& stream);

// `count` examples: first `count` lengths, then the words in order.
std::vector<TransductionExample> draw_sequence_examples(SequenceTask task, const SequenceTaskSettings& settings,
                                                        int64_t count, DrawStream& stream);

// The three parts from one stream keyed by derive_seed(seed, SeedStream::Transduction).
TransductionSplits make_sequence_splits(SequenceTask task, const SequenceTaskSettings& settings = {},
                                        const SplitSizes& sizes = {}, uint64_t seed = 42);

}  // namespace posgrad
