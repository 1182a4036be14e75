// The IDX format (MNIST and its relatives): a big-endian header, then raw bytes.
//   bytes 0-1: zero; byte 2: element type (0x08 = unsigned byte); byte 3: number of dims d;
//   then d uint32 sizes (big-endian); then prod(sizes) elements, row-major.
// So the magic of a uint8 image file [n, rows, cols] is 0x00000803, of a label file [n] 0x00000801.
// Both raw and .gz files are read (see file_bytes.h).
// This file deliberately supports only unsigned-byte IDX (every MNIST-family file is one);
// other element types are an Error that says so.
// Shapes: letters of shape_legend.h, except n here: the number of items, not positional dims.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

namespace posgrad {

inline constexpr uint32_t kIdxImagesMagic = 0x00000803;  // uint8 [n, rows, cols]
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // uint8 [n]

struct IdxArray {
  std::vector<int64_t> dims;  // e.g. {60000, 28, 28}
  std::vector<uint8_t> data;  // prod(dims) bytes, row-major
};

// Reads an IDX file and checks it against `expected_magic`. `what` names the payload in errors
// ("pixels", "labels"). Errors name the file and the problem: wrong magic, truncated header,
// truncated data ("expected 47040000 bytes of pixels, file has 1000"), trailing bytes.
IdxArray read_idx(const std::filesystem::path& path, uint32_t expected_magic, std::string_view what);

// Parses IDX bytes already in memory; `name` stands for the file in error messages.
IdxArray parse_idx(const std::vector<uint8_t>& bytes, uint32_t expected_magic, std::string_view what,
                   std::string_view name);

}  // namespace posgrad
