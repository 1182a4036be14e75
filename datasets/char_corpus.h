// A char-level corpus: a text file (any bytes: Tiny Shakespeare, enwik8, text8, ...), its
// CharVocab, and a contiguous train/validation split (first 90% / last 10% by default).
//
// Batches for next-token prediction with T context positions (T in the causal-sequence notation):
//   sample_batch(split, B, T, gen): B random windows -> input int64 [B, T], target int64 [B, T],
//     target[b, t] = input[b, t + 1] in the text (the window start is uniform over the split).
//   windows(split, T): a Dataset of the non-overlapping windows 0..num_windows-1 in text order
//     (window w = tokens [w*T, w*T + T], example input [T], target [T]); with DataLoader and
//     shuffle = false this is the sequential pass used for evaluation; sequential_batch(k) is the
//     same thing without a loader. Every target token of the split except a tail shorter than
//     T is predicted exactly once.
// A window longer than the split, or an empty file, is an Error that says so.
// This file deliberately has no tokenizer beyond bytes and no document boundaries.
// Shapes: letters of shape_legend.h (L: the token count of a split).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "datasets/char_vocab.h"
#include "datasets/dataset.h"
#include "tensor/random.h"

namespace posgrad {

enum class TextSplit { Train, Val };

class CharCorpus {
 public:
  // Reads `path` (plain or gzip); the first train_fraction of the bytes are the training split.
  static CharCorpus load(const std::filesystem::path& path, double train_fraction = 0.9);
  // The same from text in memory; `name` stands for the file in errors.
  static CharCorpus from_text(std::string text, double train_fraction = 0.9,
                              std::string name = "<text>");

  const CharVocab& vocab() const { return vocab_; }
  const std::string& name() const { return name_; }
  int64_t size() const { return tokens_.numel(); }      // all tokens (= bytes)
  int64_t size(TextSplit split) const;                   // tokens in one split
  Tensor tokens(TextSplit split) const;                  // int64 [L] (a view)
  std::string text(TextSplit split) const;               // the split decoded back to bytes

  Batch sample_batch(TextSplit split, int64_t batch, int64_t window, Generator& gen) const;
  int64_t num_windows(TextSplit split, int64_t window) const;
  std::shared_ptr<Dataset> windows(TextSplit split, int64_t window) const;
  int64_t num_sequential_batches(TextSplit split, int64_t batch, int64_t window) const;
  Batch sequential_batch(TextSplit split, int64_t batch, int64_t window, int64_t k) const;

 private:
  void check_window(TextSplit split, int64_t window) const;
  std::string name_;
  CharVocab vocab_;
  Tensor tokens_;       // int64 [L]
  int64_t train_size_ = 0;
};

const char* split_name(TextSplit split);

}  // namespace posgrad
