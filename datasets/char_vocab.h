// A byte-level character vocabulary: the sorted unique bytes of a text, token id = rank.
// Tiny Shakespeare gives 65 symbols ('\n', ' ', '!', ..., 'z'). Multi-byte UTF-8 characters are
// several tokens (enwik8 convention); decode(encode(s)) == s for every byte string s whose bytes
// are in the vocabulary.
// This file deliberately has no special tokens (no padding, no unknown symbol): encoding a byte
// that is not in the vocabulary is an Error naming it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace posgrad {

class CharVocab {
 public:
  CharVocab() { index_.fill(-1); }
  static CharVocab from_text(std::string_view text);  // sorted unique bytes of `text`

  int64_t size() const { return static_cast<int64_t>(symbols_.size()); }
  bool contains(uint8_t byte) const { return index_[byte] >= 0; }
  int64_t id(uint8_t byte) const;        // Error when absent
  uint8_t symbol(int64_t id) const;      // Error when out of range
  std::vector<int64_t> encode(std::string_view text) const;
  std::string decode(const std::vector<int64_t>& ids) const;
  const std::vector<uint8_t>& symbols() const { return symbols_; }

 private:
  std::vector<uint8_t> symbols_;       // id -> byte, ascending
  std::array<int16_t, 256> index_{};   // byte -> id, -1 when absent
};

}  // namespace posgrad
