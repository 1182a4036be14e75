// CharCorpus (see char_corpus.h).
// Shapes: letters of shape_legend.h.
#include "datasets/char_corpus.h"

#include <algorithm>
#include <cmath>

#include "datasets/file_bytes.h"
#include "tensor/error.h"

namespace posgrad {

const char* split_name(TextSplit split) { return split == TextSplit::Train ? "train" : "validation"; }

namespace {
// Non-overlapping windows of a token stream: input [T] = tokens[w*T, w*T+T), target shifted by 1.
class WindowDataset : public Dataset {
 public:
  WindowDataset(Tensor tokens, int64_t window)
      : tokens_(std::move(tokens)), window_(window), count_((tokens_.numel() - 1) / window) {}
  int64_t size() const override { return count_; }
  Example get(int64_t i) const override {
    check_index(i);
    return Example{tokens_.narrow(0, i * window_, window_), tokens_.narrow(0, i * window_ + 1, window_)};
  }
  Batch get_batch(const std::vector<int64_t>& indices) const override {
    const int64_t b = static_cast<int64_t>(indices.size());
    if (b == 0) fail("char windows: empty batch requested");
    Batch out{Tensor::empty({b, window_}, kInt64), Tensor::empty({b, window_}, kInt64)};
    const int64_t* src = tokens_.data<int64_t>();
    int64_t* in = out.input.data<int64_t>();
    int64_t* tg = out.target.data<int64_t>();
    for (int64_t r = 0; r < b; ++r) {
      check_index(indices[static_cast<size_t>(r)]);
      const int64_t start = indices[static_cast<size_t>(r)] * window_;
      std::copy_n(src + start, window_, in + r * window_);
      std::copy_n(src + start + 1, window_, tg + r * window_);
    }
    return out;
  }

 private:
  Tensor tokens_;
  int64_t window_, count_;
};
}  // namespace

CharCorpus CharCorpus::load(const std::filesystem::path& path, double train_fraction) {
  const std::vector<uint8_t> bytes = read_data_file(path);
  return from_text(std::string(bytes.begin(), bytes.end()), train_fraction, path.string());
}

CharCorpus CharCorpus::from_text(std::string text, double train_fraction, std::string name) {
  if (text.empty()) fail("{}: the file is empty (a char-level corpus needs text)", name);
  if (!(train_fraction > 0.0 && train_fraction <= 1.0))
    fail("{}: train_fraction must be in (0, 1], got {}", name, train_fraction);
  CharCorpus c;
  c.name_ = std::move(name);
  c.vocab_ = CharVocab::from_text(text);
  const std::vector<int64_t> ids = c.vocab_.encode(text);
  const int64_t n = static_cast<int64_t>(ids.size());
  c.tokens_ = Tensor::from_vector(ids, {n});
  c.train_size_ = static_cast<int64_t>(std::floor(static_cast<double>(n) * train_fraction));
  return c;
}

int64_t CharCorpus::size(TextSplit split) const {
  return split == TextSplit::Train ? train_size_ : size() - train_size_;
}

Tensor CharCorpus::tokens(TextSplit split) const {
  return split == TextSplit::Train ? tokens_.narrow(0, 0, train_size_)
                                   : tokens_.narrow(0, train_size_, size() - train_size_);
}

std::string CharCorpus::text(TextSplit split) const {
  return vocab_.decode(tokens(split).to_vector<int64_t>());
}

void CharCorpus::check_window(TextSplit split, int64_t window) const {
  if (window < 1) fail("{}: window length must be >= 1, got {}", name_, window);
  if (size(split) < window + 1)
    fail("{}: window of {} tokens needs {} tokens (input plus the shifted target), but the {} split "
         "has only {}",
         name_, window, window + 1, split_name(split), size(split));
}

Batch CharCorpus::sample_batch(TextSplit split, int64_t batch, int64_t window, Generator& gen) const {
  if (batch < 1) fail("{}: batch size must be >= 1, got {}", name_, batch);
  check_window(split, window);
  const Tensor toks = tokens(split);
  const int64_t* src = toks.data<int64_t>();
  const int64_t starts = size(split) - window;  // valid starts: 0 .. L - T - 1
  Batch out{Tensor::empty({batch, window}, kInt64), Tensor::empty({batch, window}, kInt64)};
  int64_t* in = out.input.data<int64_t>();
  int64_t* tg = out.target.data<int64_t>();
  const uint64_t offset = gen.reserve(static_cast<uint64_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    const double u = philox_uniform(gen.seed(), offset, static_cast<uint64_t>(b));
    const int64_t start = std::min(starts - 1, static_cast<int64_t>(u * static_cast<double>(starts)));
    std::copy_n(src + start, window, in + b * window);
    std::copy_n(src + start + 1, window, tg + b * window);
  }
  return out;
}

int64_t CharCorpus::num_windows(TextSplit split, int64_t window) const {
  check_window(split, window);
  return (size(split) - 1) / window;
}

std::shared_ptr<Dataset> CharCorpus::windows(TextSplit split, int64_t window) const {
  check_window(split, window);
  return std::make_shared<WindowDataset>(tokens(split).contiguous(), window);
}

int64_t CharCorpus::num_sequential_batches(TextSplit split, int64_t batch, int64_t window) const {
  if (batch < 1) fail("{}: batch size must be >= 1, got {}", name_, batch);
  return (num_windows(split, window) + batch - 1) / batch;
}

Batch CharCorpus::sequential_batch(TextSplit split, int64_t batch, int64_t window, int64_t k) const {
  const int64_t count = num_sequential_batches(split, batch, window);
  if (k < 0 || k >= count)
    fail("{}: sequential batch {} is out of range [0, {}) for the {} split", name_, k, count, split_name(split));
  const int64_t first = k * batch, last = std::min(num_windows(split, window), first + batch);
  std::vector<int64_t> idx;
  for (int64_t w = first; w < last; ++w) idx.push_back(w);
  return WindowDataset(tokens(split), window).get_batch(idx);
}

}  // namespace posgrad
