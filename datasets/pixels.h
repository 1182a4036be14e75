// How 8-bit pixels become float32: [0, 1] (x / 255) or [-1, 1] ((x / 255 - 0.5) / 0.5, i.e.
// torchvision's ToTensor then Normalize(mean 0.5, std 0.5), computed in float32 as it does).
// This file deliberately holds only the mapping, as a 256-entry table; loaders apply it.
#pragma once

#include <array>
#include <cstdint>

namespace posgrad {

enum class PixelRange {
  Unit,       // [0, 1]
  Symmetric,  // [-1, 1]
};

inline std::array<float, 256> pixel_table(PixelRange range) {
  std::array<float, 256> table{};
  for (int x = 0; x < 256; ++x) {
    const float unit = static_cast<float>(x) / 255.0f;
    table[static_cast<size_t>(x)] = range == PixelRange::Unit ? unit : (unit - 0.5f) / 0.5f;
  }
  return table;
}

}  // namespace posgrad
