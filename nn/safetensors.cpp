// safetensors encoding and validating decoder: see safetensors.h for the format.
#include "nn/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "nn/atomic_file.h"

namespace posgrad {

static_assert(std::endian::native == std::endian::little,
              "safetensors.cpp copies raw little-endian bytes; big-endian hosts need byte swapping");

using ordered_json = nlohmann::ordered_json;

namespace {

constexpr const char* kMetadataKey = "__metadata__";

const char* format_dtype(DType t) {
  switch (t) {
    case DType::Float32: return "F32";
    case DType::Float64: return "F64";
    case DType::Int64: return "I64";
  }
  fail("safetensors: unknown dtype {}", static_cast<int>(t));
}

}  // namespace

const Tensor& SafetensorsContents::at(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  std::vector<std::string> names;
  for (const auto& [n, t] : tensors) names.push_back(n);
  fail("safetensors: no tensor named '{}' (have: {})", name, fmt::join(names, ", "));
}

bool SafetensorsContents::contains(const std::string& name) const {
  return std::any_of(tensors.begin(), tensors.end(), [&](const auto& e) { return e.first == name; });
}

std::string encode_safetensors(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  ordered_json header = ordered_json::object();
  std::vector<Tensor> data;  // contiguous CPU copies, in order
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty()) fail("save_safetensors: empty tensor name");
    if (name == kMetadataKey) fail("save_safetensors: '{}' is reserved for metadata", name);
    if (!seen.insert(name).second) fail("save_safetensors: tensor name '{}' appears twice", name);
    if (!tensor.defined()) fail("save_safetensors: tensor '{}' is undefined", name);
    Tensor t = tensor.to(kCPU).contiguous();
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * static_cast<uint64_t>(dtype_size(t.dtype()));
    ordered_json entry;
    entry["dtype"] = format_dtype(t.dtype());
    entry["shape"] = t.shape();
    entry["data_offsets"] = {offset, offset + bytes};
    header[name] = std::move(entry);
    offset += bytes;
    data.push_back(std::move(t));
  }
  if (!metadata.empty()) {
    ordered_json meta = ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header[kMetadataKey] = std::move(meta);
  }
  std::string json;
  try {
    json = header.dump();
  } catch (const nlohmann::json::exception& e) {
    fail("save_safetensors: a tensor name or metadata entry is not valid UTF-8 ({})", e.what());
  }
  json.append((8 - json.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + json.size() + offset);
  const uint64_t n = json.size();
  char size_bytes[8];
  std::memcpy(size_bytes, &n, 8);
  out.append(size_bytes, 8);
  out += json;
  for (const Tensor& t : data)
    if (t.numel() > 0)
      out.append(static_cast<const char*>(t.raw_data()), static_cast<size_t>(t.numel() * dtype_size(t.dtype())));
  return out;
}

SafetensorsContents decode_safetensors(std::string_view bytes, const std::string& source) {
  auto bad = [&source](const std::string& what) -> Error {
    return Error(fmt::format("safetensors file '{}': {}", source, what));
  };
  if (bytes.size() < 8)
    throw bad(fmt::format("the file is {} bytes long, shorter than the 8-byte header size", bytes.size()));
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  if (header_size > bytes.size() - 8)
    throw bad(fmt::format("the header size is {} bytes but only {} bytes follow it", header_size,
                          bytes.size() - 8));
  const std::string_view header_text = bytes.substr(8, header_size);
  const std::string_view data = bytes.substr(8 + header_size);

  ordered_json header;
  try {
    header = ordered_json::parse(header_text.begin(), header_text.end());
  } catch (const nlohmann::json::exception& e) {
    throw bad(fmt::format("the header is not valid JSON ({})", e.what()));
  }
  if (!header.is_object()) throw bad("the header is not a JSON object");

  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  SafetensorsContents out;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      if (!value.is_object()) throw bad("'__metadata__' is not a JSON object");
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string()) throw bad(fmt::format("metadata '{}' is not a string (got {})", k, v.dump()));
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    // A named copy of the binding: clang before 16 cannot capture structured bindings.
    const std::string& tensor_name = name;
    auto where = [&tensor_name](const std::string& what) { return fmt::format("tensor '{}': {}", tensor_name, what); };
    if (!value.is_object()) throw bad(where("the entry is not a JSON object"));
    for (const auto& [k, v] : value.items())
      if (k != "dtype" && k != "shape" && k != "data_offsets") throw bad(where(fmt::format("unknown field '{}'", k)));
    if (!value.contains("dtype") || !value.contains("shape") || !value.contains("data_offsets"))
      throw bad(where("the entry needs 'dtype', 'shape' and 'data_offsets'"));
    Entry e;
    e.name = name;
    const ordered_json& dt = value["dtype"];
    if (!dt.is_string()) throw bad(where(fmt::format("dtype {} is not a string", dt.dump())));
    const std::string dts = dt.get<std::string>();
    if (dts == "F32") e.dtype = kFloat32;
    else if (dts == "F64") e.dtype = kFloat64;
    else if (dts == "I64") e.dtype = kInt64;
    else throw bad(where(fmt::format("unsupported dtype '{}' (posgrad reads F32, F64 and I64)", dts)));

    const ordered_json& shape = value["shape"];
    if (!shape.is_array()) throw bad(where(fmt::format("shape {} is not an array", shape.dump())));
    uint64_t numel = 1;
    int64_t extent = 1;  // the product with zero sizes counted as 1: the tensor's strides need it
    bool overflow = false;
    for (const ordered_json& d : shape) {
      if (!d.is_number_unsigned()) throw bad(where(fmt::format("shape {} holds a non-integer or negative size", shape.dump())));
      const uint64_t s = d.get<uint64_t>();
      if (s > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
      overflow = overflow || __builtin_mul_overflow(numel, s, &numel) ||
                 __builtin_mul_overflow(extent, static_cast<int64_t>(std::max<uint64_t>(s, 1)), &extent);
      e.shape.push_back(static_cast<int64_t>(s));
    }
    const uint64_t elem = static_cast<uint64_t>(dtype_size(e.dtype));
    uint64_t nbytes = 0;
    overflow = overflow || __builtin_mul_overflow(numel, elem, &nbytes);
    if (overflow) throw bad(where(fmt::format("shape {} is too large", shape.dump())));

    const ordered_json& offs = value["data_offsets"];
    if (!offs.is_array() || offs.size() != 2 || !offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
      throw bad(where(fmt::format("data_offsets {} is not a pair of non-negative integers", offs.dump())));
    e.begin = offs[0].get<uint64_t>();
    e.end = offs[1].get<uint64_t>();
    if (e.end < e.begin) throw bad(where(fmt::format("data_offsets [{}, {}] end before they begin", e.begin, e.end)));
    if (e.end - e.begin != nbytes)
      throw bad(where(fmt::format("data_offsets [{}, {}] span {} bytes but dtype {} and shape {} need {}", e.begin,
                                  e.end, e.end - e.begin, dts, shape.dump(), nbytes)));
    if (e.end > data.size())
      throw bad(where(fmt::format("data_offsets [{}, {}] lie outside the data ({} bytes after the header)", e.begin,
                                  e.end, data.size())));
    entries.push_back(std::move(e));
  }

  // The tensors must tile the data exactly: no overlap, no gap, nothing after the last one.
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry* e : by_offset) {
    if (e->begin < covered)
      throw bad(fmt::format("tensor '{}' at data_offsets [{}, {}] overlaps tensor '{}' at [{}, {}]", e->name, e->begin,
                            e->end, previous->name, previous->begin, previous->end));
    if (e->begin > covered)
      throw bad(fmt::format("data bytes [{}, {}) before tensor '{}' belong to no tensor", covered, e->begin, e->name));
    covered = e->end;
    if (e->end > e->begin || !previous) previous = e;
  }
  if (covered != data.size())
    throw bad(fmt::format("{} trailing bytes after the last tensor (data is {} bytes, tensors cover {})",
                          data.size() - covered, data.size(), covered));

  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(t.raw_data(), data.data() + e.begin, static_cast<size_t>(e.end - e.begin));
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::string bytes;
  try {
    bytes = encode_safetensors(tensors, metadata);
  } catch (const Error& e) {
    fail("cannot save '{}': {}", path.string(), e.what());
  }
  write_file_atomically(path, bytes);
}

SafetensorsContents load_safetensors(const std::filesystem::path& path) {
  return decode_safetensors(read_file_bytes(path), path.string());
}

}  // namespace posgrad
