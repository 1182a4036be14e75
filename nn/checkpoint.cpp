// Training checkpoints: see checkpoint.h for the layout and the checksums.
#include "nn/checkpoint.h"

#include <cerrno>
#include <charconv>
#include <system_error>

#include <nlohmann/json.hpp>
#include <zlib.h>

#include "nn/atomic_file.h"

namespace posgrad {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kStateFile = "state.json";
constexpr const char* kTensorSuffix = ".safetensors";
constexpr const char* kHyperPrefix = "hyper.";
constexpr const char* kChecksumKey = "crc32";
constexpr int64_t kVersion = 2;

// Shortest text that parses back to exactly `v`.
std::string exact(double v) { return fmt::format("{}", v); }

// zlib's CRC-32 of `bytes` as 8 lowercase hex digits.
std::string crc32_hex(std::string_view bytes) {
  uLong crc = ::crc32_z(0L, Z_NULL, 0);
  crc = ::crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size());
  return fmt::format("{:08x}", static_cast<uint32_t>(crc));
}

// The checksum state.json records of itself: of its compact text without the checksum key.
// nlohmann writes integers exactly and doubles in shortest round-trip form, so parsing and
// dumping again gives the same text.
std::string state_checksum(json state) {
  state.erase(kChecksumKey);
  return crc32_hex(state.dump());
}

double parse_double(const std::string& text, const std::string& what, const fs::path& file) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end) fail("checkpoint file '{}': {} '{}' is not a number", file.string(), what, text);
  return v;
}

int64_t parse_int(const std::string& text, const std::string& what, const fs::path& file) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end) fail("checkpoint file '{}': {} '{}' is not an integer", file.string(), what, text);
  return v;
}

const std::string& meta(const SafetensorsContents& c, const std::string& key, const fs::path& file) {
  auto it = c.metadata.find(key);
  if (it == c.metadata.end()) fail("checkpoint file '{}': metadata '{}' is missing", file.string(), key);
  return it->second;
}

std::string encode_or_fail(const fs::path& path, const NamedTensors& tensors,
                           const std::map<std::string, std::string>& metadata) {
  try {
    return encode_safetensors(tensors, metadata);
  } catch (const Error& e) {
    fail("cannot save '{}': {}", path.string(), e.what());
  }
}

std::string encode_optimizer_state(const fs::path& path, const OptimizerState& state, int64_t step) {
  std::map<std::string, std::string> metadata;
  metadata["format"] = "posgrad-optimizer";
  metadata["kind"] = state.kind;
  metadata["step"] = std::to_string(step);
  for (const auto& [k, v] : state.hyper) metadata[kHyperPrefix + k] = exact(v);
  return encode_or_fail(path, state.tensors, metadata);
}

OptimizerState decode_optimizer_state(std::string_view bytes, const fs::path& path, int64_t* step) {
  const SafetensorsContents c = decode_safetensors(bytes, path.string());
  if (meta(c, "format", path) != "posgrad-optimizer")
    fail("checkpoint file '{}': not a posgrad optimizer file (format '{}')", path.string(), meta(c, "format", path));
  OptimizerState state;
  state.kind = meta(c, "kind", path);
  const std::string prefix = kHyperPrefix;
  for (const auto& [k, v] : c.metadata)
    if (k.rfind(prefix, 0) == 0) state.hyper[k.substr(prefix.size())] = parse_double(v, "metadata '" + k + "'", path);
  state.tensors = c.tensors;
  if (step) *step = parse_int(meta(c, "step", path), "metadata 'step'", path);
  return state;
}

// A name for Checkpoint::tensor_files: letters, digits and '_', not the checkpoint's own files.
bool is_tensor_file_name(const std::string& name) {
  return !name.empty() && name != "model" && name != "optimizer" &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos;
}

// Writes `bytes` to dir/name and returns what state.json records of it.
json write_recorded(const fs::path& dir, const char* name, const std::string& bytes) {
  write_file_atomically(dir / name, bytes);
  return json{{"bytes", bytes.size()}, {"crc32", crc32_hex(bytes)}};
}

}  // namespace

void save_optimizer_state(const fs::path& path, const OptimizerState& state, int64_t step) {
  write_file_atomically(path, encode_optimizer_state(path, state, step));
}

OptimizerState load_optimizer_state(const fs::path& path, int64_t* step) {
  return decode_optimizer_state(read_file_bytes(path), path, step);
}

void save_checkpoint(const fs::path& dir, const Checkpoint& ckpt) {
  json extra;
  try {
    extra = json::parse(ckpt.extra_json);
  } catch (const nlohmann::json::exception& e) {
    fail("save_checkpoint '{}': extra_json is not valid JSON ({})", dir.string(), e.what());
  }
  if (!extra.is_object()) fail("save_checkpoint '{}': extra_json must be a JSON object, got {}", dir.string(), extra.dump());
  if (ckpt.step < 0) fail("save_checkpoint '{}': negative step {}", dir.string(), ckpt.step);

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("save_checkpoint: cannot create the directory '{}': {}", dir.string(), ec.message());

  json files;
  files[kModelFile] = write_recorded(
      dir, kModelFile,
      encode_or_fail(dir / kModelFile, ckpt.model, {{"format", "posgrad-model"}, {"step", std::to_string(ckpt.step)}}));
  files[kOptimizerFile] =
      write_recorded(dir, kOptimizerFile, encode_optimizer_state(dir / kOptimizerFile, ckpt.optimizer, ckpt.step));
  for (const auto& [name, tensors] : ckpt.tensor_files) {
    if (!is_tensor_file_name(name))
      fail("save_checkpoint '{}': tensor file name '{}' must be letters, digits and '_', not model or optimizer",
           dir.string(), name);
    const std::string file = name + kTensorSuffix;
    files[file] = write_recorded(dir, file.c_str(),
                                 encode_or_fail(dir / file, tensors, {{"step", std::to_string(ckpt.step)}}));
  }

  json state;
  state["format"] = "posgrad-checkpoint";
  state["version"] = kVersion;
  state["step"] = ckpt.step;
  state["rng"] = {{"seed", ckpt.rng_seed}, {"offset", ckpt.rng_offset}};
  state["optimizer"] = ckpt.optimizer.kind;
  state["files"] = std::move(files);
  state["extra"] = std::move(extra);
  state[kChecksumKey] = state_checksum(state);
  write_file_atomically(dir / kStateFile, state.dump(2) + "\n");
}

Checkpoint load_checkpoint(const fs::path& dir) {
  const fs::path state_path = dir / kStateFile;
  json state;
  try {
    state = json::parse(read_file_bytes(state_path));
  } catch (const nlohmann::json::exception& e) {
    fail("checkpoint file '{}' is corrupt: not valid JSON (truncated?): {}", state_path.string(), e.what());
  }
  auto field = [&](const json& obj, const char* key, auto check, const char* type) -> const json& {
    if (!obj.is_object() || !obj.contains(key) || !check(obj[key]))
      fail("checkpoint file '{}': '{}' is missing or not {}", state_path.string(), key, type);
    return obj[key];
  };
  auto is_str = [](const json& j) { return j.is_string(); };
  auto is_int = [](const json& j) { return j.is_number_integer(); };
  auto is_uint = [](const json& j) { return j.is_number_unsigned(); };
  auto is_obj = [](const json& j) { return j.is_object(); };
  if (field(state, "format", is_str, "a string").get<std::string>() != "posgrad-checkpoint")
    fail("checkpoint file '{}': not a posgrad checkpoint (format '{}')", state_path.string(),
         state["format"].get<std::string>());
  const int64_t version = field(state, "version", is_int, "an integer").get<int64_t>();
  if (version == 1)
    fail("checkpoint file '{}': version 1 checkpoints carry no checksums and cannot be verified; "
         "this build reads version {}", state_path.string(), kVersion);
  if (version != kVersion) fail("checkpoint file '{}': unsupported version {}", state_path.string(), state["version"].dump());
  const std::string recorded = field(state, kChecksumKey, is_str, "a string").get<std::string>();
  const std::string actual = state_checksum(state);
  if (actual != recorded)
    fail("checkpoint file '{}' is corrupt: its contents have CRC-32 {} but it records {} (changed bytes?)",
         state_path.string(), actual, recorded);

  // The tensor files: each must be exactly the bytes state.json recorded.
  const json& files = field(state, "files", is_obj, "an object");
  auto verified_bytes = [&](const std::string& name) {
    const json& record = field(files, name.c_str(), is_obj, "an object");
    const uint64_t size = field(record, "bytes", is_uint, "a non-negative integer").get<uint64_t>();
    const std::string crc = field(record, "crc32", is_str, "a string").get<std::string>();
    const fs::path path = dir / name;
    std::string bytes = read_file_bytes(path);
    if (bytes.size() != size)
      fail("checkpoint file '{}' is corrupt: it is {} bytes but {} recorded {} ({})", path.string(), bytes.size(),
           kStateFile, size, bytes.size() < size ? "truncated?" : "appended to?");
    const std::string got = crc32_hex(bytes);
    if (got != crc)
      fail("checkpoint file '{}' is corrupt: its CRC-32 is {} but {} recorded {} (changed bytes?)", path.string(), got,
           kStateFile, crc);
    return bytes;
  };
  const fs::path model_path = dir / kModelFile, optimizer_path = dir / kOptimizerFile;
  const std::string model_bytes = verified_bytes(kModelFile);
  const std::string optimizer_bytes = verified_bytes(kOptimizerFile);

  Checkpoint ckpt;
  ckpt.step = field(state, "step", is_int, "an integer").get<int64_t>();
  const json& rng = field(state, "rng", is_obj, "an object");
  ckpt.rng_seed = field(rng, "seed", is_uint, "a non-negative integer").get<uint64_t>();
  ckpt.rng_offset = field(rng, "offset", is_uint, "a non-negative integer").get<uint64_t>();
  const std::string kind = field(state, "optimizer", is_str, "a string").get<std::string>();
  ckpt.extra_json = field(state, "extra", is_obj, "an object").dump();

  SafetensorsContents model = decode_safetensors(model_bytes, model_path.string());
  const int64_t model_step = parse_int(meta(model, "step", model_path), "metadata 'step'", model_path);
  int64_t optimizer_step = 0;
  ckpt.optimizer = decode_optimizer_state(optimizer_bytes, optimizer_path, &optimizer_step);
  if (model_step != ckpt.step || optimizer_step != ckpt.step)
    fail("checkpoint '{}' is inconsistent (a save was interrupted?): {} is from step {}, {} from step {}, {} "
         "from step {}", dir.string(), kStateFile, ckpt.step, kModelFile, model_step, kOptimizerFile, optimizer_step);
  if (ckpt.optimizer.kind != kind)
    fail("checkpoint '{}' is inconsistent: {} names optimizer '{}' but {} holds '{}'", dir.string(), kStateFile,
         kind, kOptimizerFile, ckpt.optimizer.kind);
  ckpt.model = std::move(model.tensors);

  // The app's other tensor files: every other file state.json lists.
  for (const auto& [file, record] : files.items()) {
    if (file == kModelFile || file == kOptimizerFile) continue;
    const std::string suffix = kTensorSuffix;
    if (file.size() <= suffix.size() || file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0 ||
        !is_tensor_file_name(file.substr(0, file.size() - suffix.size())))
      fail("checkpoint file '{}': lists '{}', which is not a tensor file name (<letters, digits, _>.safetensors)",
           state_path.string(), file);
    const fs::path path = dir / file;
    SafetensorsContents contents = decode_safetensors(verified_bytes(file), path.string());
    const int64_t step = parse_int(meta(contents, "step", path), "metadata 'step'", path);
    if (step != ckpt.step)
      fail("checkpoint '{}' is inconsistent (a save was interrupted?): {} is from step {}, {} from step {}",
           dir.string(), kStateFile, ckpt.step, file, step);
    ckpt.tensor_files[file.substr(0, file.size() - suffix.size())] = std::move(contents.tensors);
  }
  return ckpt;
}

}  // namespace posgrad
