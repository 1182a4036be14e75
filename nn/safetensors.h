// safetensors: the tensor file format of Hugging Face's `safetensors`, readable by its Python
// package and by PyTorch tooling.
//
// Layout: 8 bytes little-endian uint64 N, then N bytes of UTF-8 JSON
//   {"<name>": {"dtype": "F32"|"F64"|"I64", "shape": [..], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"<key>": "<string value>", ...}}
// padded with spaces so that N is a multiple of 8, then the data: each tensor's elements in
// row-major order, little-endian, at [begin, end) relative to the first byte after the header.
// We write the tensors contiguously in the order given (the header lists them in that order).
//
// Loading validates everything and throws posgrad::Error naming the file and the problem: a
// file shorter than 8 bytes, a header size beyond the file, invalid JSON, an entry that is not
// {dtype, shape, data_offsets}, an unknown or unsupported dtype, end - begin != numel * size,
// offsets that overlap, leave a gap, lie outside the data, or trailing bytes after the last
// tensor (the data must be covered exactly, as the reference implementation requires).
//
// Deliberately not here: dtypes other than F32/F64/I64 (F16/BF16/I32/U8/BOOL... are rejected by
// name), memory mapping and lazy loading, big-endian hosts.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace posgrad {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct SafetensorsContents {
  NamedTensors tensors;  // in header order (for our files: the order they were saved in)
  std::map<std::string, std::string> metadata;
  // The tensor named `name`, or an Error listing the names there are.
  const Tensor& at(const std::string& name) const;
  bool contains(const std::string& name) const;
};

// The file's bytes. Tensors may be strided or on any device (they are copied to contiguous CPU
// memory). Throws for duplicate or empty names, the reserved name "__metadata__", undefined
// tensors, or names/values that are not valid UTF-8.
std::string encode_safetensors(const NamedTensors& tensors,
                               const std::map<std::string, std::string>& metadata = {});
// Parses and validates `bytes`; `source` names them in error messages (a file path).
SafetensorsContents decode_safetensors(std::string_view bytes, const std::string& source);

// encode + write_file_atomically (nn/atomic_file.h).
void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// read_file_bytes + decode. Tensors come back as contiguous CPU tensors.
SafetensorsContents load_safetensors(const std::filesystem::path& path);

}  // namespace posgrad
