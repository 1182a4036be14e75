// The text of a charlm run: see charlm_text.h.
#include "apps/charlm/charlm_text.h"

#include <algorithm>

#include <fmt/format.h>
#include <zlib.h>

#include "apps/common/run_dir.h"
#include "datasets/char_corpus.h"
#include "datasets/data_dir.h"
#include "nn/atomic_file.h"
#include "tensor/error.h"

namespace posgrad::charlm {

namespace {

CharVocab make_vocab(const CharlmSettings& c, const std::string& train_text) {
  if (!c.data.bytes) return CharVocab::from_text(train_text);
  std::string all(256, '\0');
  for (int i = 0; i < 256; ++i) all[static_cast<size_t>(i)] = static_cast<char>(i);
  return CharVocab::from_text(all);
}

// A byte as a reader sees it: 'a', '\n', 0xC3.
std::string describe_byte(uint8_t b) {
  if (b == '\n') return "'\\n'";
  if (b == '\t') return "'\\t'";
  if (b >= 32 && b < 127) return fmt::format("'{}'", static_cast<char>(b));
  return fmt::format("byte 0x{:02X}", b);
}

// The fingerprint of a text given in consecutive parts.
DataFingerprint fingerprint(const std::string& file, std::initializer_list<const std::string*> parts) {
  DataFingerprint f;
  f.file = file;
  uLong crc = ::crc32_z(0L, Z_NULL, 0);
  for (const std::string* part : parts) {
    crc = ::crc32_z(crc, reinterpret_cast<const Bytef*>(part->data()), part->size());
    f.bytes += static_cast<int64_t>(part->size());
  }
  f.crc32 = fmt::format("{:08x}", static_cast<uint32_t>(crc));
  return f;
}

}  // namespace

std::string DataFingerprint::describe() const { return fmt::format("{} bytes, CRC-32 {}", bytes, crc32); }

nlohmann::json to_json(const DataFingerprint& f) {
  return nlohmann::json{{"file", f.file}, {"bytes", f.bytes}, {"crc32", f.crc32}};
}

DataFingerprint fingerprint_from_json(const nlohmann::json& j) {
  try {
    DataFingerprint f;
    f.file = j.value("file", std::string());
    f.bytes = j.at("bytes").get<int64_t>();
    f.crc32 = j.at("crc32").get<std::string>();
    return f;
  } catch (const nlohmann::json::exception& e) {
    fail("the record of the data file is incomplete ({}): {}", j.dump(), e.what());
  }
}

std::filesystem::path resolve_data(const CharlmSettings& c) {
  const std::filesystem::path p(c.data.path);
  if (p.is_absolute() || std::filesystem::exists(p)) return p;
  return find_data_file(p, c.data.data_dir);  // names posgrad-data's command when Tiny Shakespeare is missing
}

Tensor encode_checked(const CharVocab& vocab, const std::string& text, const std::string& what) {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<uint8_t>(text[i]);
    if (!vocab.contains(b))
      fail("{}: character {} at offset {} is not in the vocabulary of {} characters (built from the training split; "
           "data.bytes: true accepts any byte)",
           what, describe_byte(b), i, vocab.size());
    ids.push_back(vocab.id(b));
  }
  return Tensor::from_vector(ids, {static_cast<int64_t>(ids.size())});
}

namespace {

// The data file's two splits as bytes (the validation split cut to data.val_fraction) and the
// fingerprint of the whole text.
struct Splits {
  std::filesystem::path path;
  std::string train, val;
  DataFingerprint data;
};

Splits read_splits(const CharlmSettings& c) {
  Splits s;
  // Validation follows the training split, so the two cannot ask for more than the whole file.
  // (1e-12: 0.7 + 0.3 and the like may round above 1.)
  if (c.data.val_fraction > 0 && c.data.train_fraction + c.data.val_fraction > 1 + 1e-12)
    fail("data.train_fraction ({}) + data.val_fraction ({}) = {} is more than the whole file; lower one of them "
         "(data.val_fraction 0: validate on all the rest)",
         c.data.train_fraction, c.data.val_fraction, c.data.train_fraction + c.data.val_fraction);
  s.path = resolve_data(c);
  const CharCorpus corpus = CharCorpus::load(s.path, c.data.train_fraction);
  s.train = corpus.text(TextSplit::Train);
  s.val = corpus.text(TextSplit::Val);
  s.data = fingerprint(s.path.filename().string(), {&s.train, &s.val});
  if (c.data.val_fraction > 0)  // e.g. enwik8/text8: 90M train, the next 5M dev, the last 5M test
    s.val.resize(std::min(s.val.size(), static_cast<size_t>(c.data.val_fraction * static_cast<double>(corpus.size()))));
  if (s.train.size() < 2)
    fail("{}: the training split has {} character(s); a language model needs at least 2 (the file has {} bytes)",
         s.path.string(), s.train.size(), corpus.size());
  return s;
}

TextData encode(const Splits& s, CharVocab vocab, bool with_train) {
  TextData d;
  d.path = s.path;
  d.name = s.path.filename().string();
  d.data = s.data;
  d.vocab = std::move(vocab);
  if (with_train) d.train = encode_checked(d.vocab, s.train, fmt::format("the training split of {}", s.path.string()));
  d.val = encode_checked(d.vocab, s.val, fmt::format("the validation split of {}", s.path.string()));
  return d;
}

}  // namespace

TextData load_text(const CharlmSettings& c, const CharVocab* vocab) {
  const Splits s = read_splits(c);
  return encode(s, vocab ? *vocab : make_vocab(c, s.train), true);
}

TextData load_validation(const CharlmSettings& c, const CharVocab& vocab) { return encode(read_splits(c), vocab, false); }

DataFingerprint read_fingerprint(const CharlmSettings& c) { return read_splits(c).data; }

void write_vocab(apps::RunDir& run, const TextData& text, bool byte_mode) {
  const auto& symbols = text.vocab.symbols();
  nlohmann::json j{{"bytes", std::vector<int>(symbols.begin(), symbols.end())},
                   {"byte_mode", byte_mode},
                   {kDataKey, to_json(text.data)}};
  run.write_text("vocab.json", j.dump() + "\n");
}

TrainedOn read_vocab(const std::filesystem::path& run_dir) {
  const std::filesystem::path file = run_dir / "vocab.json";
  TrainedOn record;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return record;
  try {
    const nlohmann::json j = nlohmann::json::parse(read_file_bytes(file));
    std::string symbols;
    for (int b : j.at("bytes").get<std::vector<int>>()) {
      if (b < 0 || b > 255) fail("{}: {} is not a byte", file.string(), b);
      symbols.push_back(static_cast<char>(b));
    }
    record.vocab = CharVocab::from_text(symbols);
    if (j.contains(kDataKey)) record.data = fingerprint_from_json(j.at(kDataKey));
  } catch (const nlohmann::json::exception& e) {
    fail("{} is damaged: {}", file.string(), e.what());
  }
  return record;
}

Tensor vocab_tensor(const CharVocab& vocab) {
  return Tensor::from_vector(std::vector<int64_t>(vocab.symbols().begin(), vocab.symbols().end()), {vocab.size()});
}

CharVocab vocab_from_tensor(const Tensor& bytes) {
  std::string symbols;
  for (int64_t b : bytes.to_vector<int64_t>()) symbols.push_back(static_cast<char>(b));
  return CharVocab::from_text(symbols);
}

}  // namespace posgrad::charlm
