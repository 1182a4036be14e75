// TextStreams (see text_streams.h).
// Shapes: letters of shape_legend.h.
#include "datasets/text_streams.h"

#include "tensor/error.h"

namespace posgrad {

TextStreams::TextStreams(const Tensor& tokens, int64_t batch, int64_t segment, const std::string& what)
    : segment_(segment) {
  if (tokens.dim() != 1 || tokens.dtype() != DType::Int64)
    fail("text streams: {} must be int64 [L], got {}", what, tokens.describe());
  if (batch < 1) fail("text streams: batch must be >= 1, got {}", batch);
  if (segment < 1) fail("text streams: segment must be >= 1, got {}", segment);
  const int64_t n = tokens.size(0) / batch;
  if (n < segment + 1)
    fail("text streams: {} has {} tokens, {} rows of {} each; a segment of {} needs {} per row (the segment and its "
         "shifted target): use a shorter segment, fewer rows, or more text",
         what, tokens.size(0), batch, n, segment, segment + 1);
  rows_ = tokens.narrow(0, 0, batch * n).contiguous().reshape({batch, n});
}

TextStreams::Segment TextStreams::take(int64_t pos) const {
  Segment s;
  s.input = rows_.narrow(1, pos, segment_).contiguous();
  s.target = rows_.narrow(1, pos + 1, segment_).contiguous();
  return s;
}

TextStreams::Segment TextStreams::next(Generator& gen) {
  bool restarted = false;
  if (pos_ + segment_ + 1 > row_length()) {
    // The original trainer: a random offset in [0, M), and zeroed caches.
    const int64_t span = std::min(segment_, row_length() - segment_);
    pos_ = std::min(static_cast<int64_t>(gen.next_uniform() * static_cast<double>(span)), span - 1);
    restarted = true;
  }
  Segment s = take(pos_);
  s.restarted = restarted;
  pos_ += segment_;
  return s;
}

int64_t TextStreams::blocks() const { return (row_length() - 1) / segment_; }

TextStreams::Segment TextStreams::block(int64_t k) const {
  if (k < 0 || k >= blocks()) fail("text streams: block {} is out of range [0, {})", k, blocks());
  return take(k * segment_);
}

void TextStreams::set_position(int64_t pos) {
  if (pos < 0 || pos > row_length()) fail("text streams: position {} is out of range [0, {}]", pos, row_length());
  pos_ = pos;
}

}  // namespace posgrad
