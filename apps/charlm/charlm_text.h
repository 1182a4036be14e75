// The text of a charlm run and the record of what the run trained on. load_text() reads the data
// file into both splits, with the run's own vocabulary when it is given (eval, sample, --resume)
// or a new one (training: the characters of the training split, or all 256 bytes). The run keeps
// its vocabulary and the data file's fingerprint (size and CRC-32 of the text as read, gunzipped)
// in vocab.json and in every checkpoint (the model buffer vocab_bytes; the position's extra
// "data"), so a job that reads the run later scores with the ids the model learned and can tell
// when the file changed since:
//   {"bytes": [10, 32, 33, ...], "byte_mode": false, "data": {"file": "input.txt", "bytes": 1115394, "crc32": "..."}}
// Older runs lack some of it (vocab_bytes since 2026-11-24, the data fingerprint since this
// file); their jobs rebuild the vocabulary from the data file and say so.
//
// Deliberately does not: tokenise beyond bytes, or decide what a changed data file means (eval
// warns, --resume refuses: charlm_run.cpp).
// Shapes: letters of shape_legend.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/charlm/charlm_run.h"
#include "datasets/char_vocab.h"
#include "tensor/tensor.h"

namespace posgrad::apps {
class RunDir;
}

namespace posgrad::charlm {

// What identifies a data file's text: its size and CRC-32 (zlib) after gunzip.
struct DataFingerprint {
  std::string file;  // the file name, for messages (not compared: a run folder may move)
  int64_t bytes = 0;
  std::string crc32;  // 8 lowercase hex digits
  bool same_text(const DataFingerprint& other) const { return bytes == other.bytes && crc32 == other.crc32; }
  std::string describe() const;  // "1115394 bytes, CRC-32 3ef1c0a2"
};
nlohmann::json to_json(const DataFingerprint& f);
DataFingerprint fingerprint_from_json(const nlohmann::json& j);  // throws Error when malformed

// The text of a run: the vocabulary and both splits.
struct TextData {
  CharVocab vocab;
  Tensor train, val;  // int64 [L]
  std::string name;   // the file name
  std::filesystem::path path;
  DataFingerprint data;
};

// The data file named by data.path (relative paths not found here are looked up in the data
// folder).
std::filesystem::path resolve_data(const CharlmSettings& c);
// Reads and encodes the data file; `vocab` (the run's) when given, else a new vocabulary. A
// character outside the vocabulary is an Error naming it and its offset.
TextData load_text(const CharlmSettings& c, const CharVocab* vocab = nullptr);
// The same without the training split (left undefined): what eval scores.
TextData load_validation(const CharlmSettings& c, const CharVocab& vocab);
// The fingerprint of the data file data.path names, as load_text() computes it.
DataFingerprint read_fingerprint(const CharlmSettings& c);
// `text` as ids; `what` names the text in errors.
Tensor encode_checked(const CharVocab& vocab, const std::string& text, const std::string& what);

// The run's record of its text, RUN/vocab.json.
void write_vocab(apps::RunDir& run, const TextData& text, bool byte_mode);
struct TrainedOn {
  std::optional<CharVocab> vocab;       // absent: an older run without vocab.json
  std::optional<DataFingerprint> data;  // absent: a run from before the fingerprint
};
TrainedOn read_vocab(const std::filesystem::path& run_dir);

// The checkpointed copy of the vocabulary: the model buffer vocab_bytes, the bytes in id order,
// int64 [V].
inline constexpr const char* kVocabBuffer = "vocab_bytes";
Tensor vocab_tensor(const CharVocab& vocab);
CharVocab vocab_from_tensor(const Tensor& bytes);
// The key of the data fingerprint in a checkpoint's TrainingPosition::extra.
inline constexpr const char* kDataKey = "data";

}  // namespace posgrad::charlm
