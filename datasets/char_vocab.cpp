// CharVocab (see char_vocab.h).
#include "datasets/char_vocab.h"

#include "tensor/error.h"

namespace posgrad {

namespace {
std::string printable(uint8_t b) {
  if (b >= 0x20 && b < 0x7F) return fmt::format("'{}'", static_cast<char>(b));
  return fmt::format("0x{:02x}", int{b});
}
}  // namespace

CharVocab CharVocab::from_text(std::string_view text) {
  std::array<bool, 256> seen{};
  for (char c : text) seen[static_cast<uint8_t>(c)] = true;
  CharVocab v;
  for (int b = 0; b < 256; ++b) {
    if (!seen[static_cast<size_t>(b)]) continue;
    v.index_[static_cast<size_t>(b)] = static_cast<int16_t>(v.symbols_.size());
    v.symbols_.push_back(static_cast<uint8_t>(b));
  }
  return v;
}

int64_t CharVocab::id(uint8_t byte) const {
  if (index_[byte] < 0) fail("CharVocab: byte {} is not in the vocabulary of {} symbols", printable(byte), size());
  return index_[byte];
}

uint8_t CharVocab::symbol(int64_t id) const {
  if (id < 0 || id >= size()) fail("CharVocab: token id {} is out of range [0, {})", id, size());
  return symbols_[static_cast<size_t>(id)];
}

std::vector<int64_t> CharVocab::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (char c : text) ids.push_back(id(static_cast<uint8_t>(c)));
  return ids;
}

std::string CharVocab::decode(const std::vector<int64_t>& ids) const {
  std::string text;
  text.reserve(ids.size());
  for (int64_t i : ids) text.push_back(static_cast<char>(symbol(i)));
  return text;
}

}  // namespace posgrad
