// Fuzz harness: text corpora (CharCorpus::load from a plain or gzip file, CharCorpus::from_text)
// and the batches cut from them. The first four input bytes are parameters, the rest is the text:
//   byte 0: train_fraction = byte / 255 (0 is invalid on purpose)
//   byte 1: window length T (0 is invalid on purpose)
//   byte 2: batch size B = byte % 9 (0 is invalid on purpose)
//   byte 3: bit 0 read from a file (else from_text), bit 1 gzip-compress that file, bit 2 use the
//           validation split (else train)
// Properties checked when the corpus loads: the splits decode back to the text; every token is
// in the vocabulary; in every batch (sampled, sequential, from the windows dataset) target[b, t]
// is the token after input[b, t] in the split.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "datasets/char_corpus.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using posgrad::fuzz::fuzz_finding;

// input [B, T] and target [B, T] must be windows of `tokens`: target[b, t] == input[b, t + 1], and
// the last target is a token that follows the window somewhere in the split (checked by
// searching: batches may start anywhere).
void check_batch(const posgrad::Batch& batch, const std::vector<int64_t>& tokens, int64_t window, const char* what) {
  if (batch.input.dim() != 2 || batch.input.size(1) != window || batch.target.shape() != batch.input.shape())
    fuzz_finding(std::string(what) + ": wrong batch shape " + batch.input.describe());
  const posgrad::Tensor in = batch.input.contiguous(), tg = batch.target.contiguous();
  const int64_t* x = in.data<int64_t>();
  const int64_t* y = tg.data<int64_t>();
  for (int64_t b = 0; b < in.size(0); ++b) {
    const int64_t* row = x + b * window;
    const int64_t* next = y + b * window;
    for (int64_t t = 0; t + 1 < window; ++t)
      if (next[t] != row[t + 1]) fuzz_finding(std::string(what) + ": target is not the input shifted by one");
    bool found = false;
    for (size_t s = 0; !found && s + static_cast<size_t>(window) < tokens.size(); ++s)
      found = std::equal(row, row + window, tokens.begin() + static_cast<std::ptrdiff_t>(s)) &&
              tokens[s + static_cast<size_t>(window)] == next[window - 1];
    if (!found) fuzz_finding(std::string(what) + ": a batch row is not a window of the split");
  }
}

void exercise(const posgrad::CharCorpus& corpus, const std::string& text, posgrad::TextSplit split, int64_t batch,
              int64_t window) {
  using posgrad::TextSplit;
  if (corpus.size() != static_cast<int64_t>(text.size()) ||
      corpus.text(TextSplit::Train) + corpus.text(TextSplit::Val) != text)
    fuzz_finding("the corpus splits do not decode back to the text");
  const std::vector<int64_t> tokens = corpus.tokens(split).to_vector<int64_t>();
  for (int64_t id : tokens)
    if (id < 0 || id >= corpus.vocab().size()) fuzz_finding("a token id is outside the vocabulary");

  posgrad::Generator gen(7);
  check_batch(corpus.sample_batch(split, batch, window, gen), tokens, window, "sample_batch");
  const int64_t count = corpus.num_sequential_batches(split, batch, window);
  if (count < 1) fuzz_finding("num_sequential_batches is below 1 for a window that fits");
  check_batch(corpus.sequential_batch(split, batch, window, 0), tokens, window, "sequential_batch(0)");
  check_batch(corpus.sequential_batch(split, batch, window, count - 1), tokens, window, "sequential_batch(last)");
  const auto windows = corpus.windows(split, window);
  if (windows->size() != corpus.num_windows(split, window)) fuzz_finding("windows() size differs from num_windows()");
  const posgrad::Example last = windows->get(windows->size() - 1);
  if (last.input.numel() != window || last.target.numel() != window) fuzz_finding("windows() example has the wrong size");
  check_batch(windows->get_batch({0, windows->size() - 1}), tokens, window, "windows()->get_batch");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace posgrad::fuzz;
  if (size < 4) return 0;
  const double train_fraction = data[0] / 255.0;
  const int64_t window = data[1];
  const int64_t batch = data[2] % 9;
  const bool from_file = data[3] & 1, compress = data[3] & 2;
  const posgrad::TextSplit split = data[3] & 4 ? posgrad::TextSplit::Val : posgrad::TextSplit::Train;
  const std::string text(as_text(data + 4, size - 4));

  expect_error_or_success([&] {
    if (from_file) {
      const std::filesystem::path file = fresh_dir("char_corpus") / (compress ? "corpus.txt.gz" : "corpus.txt");
      compress ? write_gzip_file(file, text) : write_file(file, text);
      exercise(posgrad::CharCorpus::load(file, train_fraction), text, split, batch, window);
    } else {
      exercise(posgrad::CharCorpus::from_text(text, train_fraction, "fuzz input"), text, split, batch, window);
    }
  });
  return 0;
}
