// Test helper: decodes a PNG (bytes in memory or a file) with cairo so tests can check the
// colours a figure put at given pixels.
//
// Deliberately does not: handle alpha (figures are opaque RGB) or compare whole images.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <cairo.h>

#include "apps/common/canvas.h"
#include "apps/common/color.h"
#include "tensor/error.h"

namespace posgrad::test {

class PngPixels {
 public:
  explicit PngPixels(cairo_surface_t* surface) {
    const cairo_status_t status = cairo_surface_status(surface);
    if (status != CAIRO_STATUS_SUCCESS) {
      cairo_surface_destroy(surface);
      fail("PngPixels: cannot decode the PNG: {}", cairo_status_to_string(status));
    }
    cairo_surface_flush(surface);
    width_ = cairo_image_surface_get_width(surface);
    height_ = cairo_image_surface_get_height(surface);
    const int stride = cairo_image_surface_get_stride(surface);
    const unsigned char* data = cairo_image_surface_get_data(surface);
    for (int y = 0; y < height_; ++y)
      for (int x = 0; x < width_; ++x)
        pixels_.push_back(*reinterpret_cast<const uint32_t*>(data + y * stride + x * 4));
    cairo_surface_destroy(surface);
  }
  static PngPixels from_file(const std::filesystem::path& path) {
    return PngPixels(cairo_image_surface_create_from_png(path.c_str()));
  }
  static PngPixels from_bytes(const std::string& png) {
    struct Reader { const std::string& bytes; size_t at = 0; } reader{png};
    auto read = [](void* closure, unsigned char* out, unsigned int length) {
      auto* r = static_cast<Reader*>(closure);
      if (r->at + length > r->bytes.size()) return CAIRO_STATUS_READ_ERROR;
      r->bytes.copy(reinterpret_cast<char*>(out), length, r->at);
      r->at += length;
      return CAIRO_STATUS_SUCCESS;
    };
    return PngPixels(cairo_image_surface_create_from_png_stream(read, &reader));
  }
  static PngPixels render(const apps::Canvas& canvas) { return from_bytes(canvas.encode(apps::ImageFormat::Png)); }

  int width() const { return width_; }
  int height() const { return height_; }
  apps::Color at(int x, int y) const {
    POSGRAD_CHECK(x >= 0 && y >= 0 && x < width_ && y < height_, "PngPixels: ({}, {}) outside {}x{}", x, y,
                  width_, height_);
    const uint32_t p = pixels_[static_cast<size_t>(y) * width_ + x];
    return {static_cast<uint8_t>(p >> 16), static_cast<uint8_t>(p >> 8), static_cast<uint8_t>(p)};
  }
  // Pixels in r (clipped to the image) within `tolerance` of `c` in every channel.
  int count(const apps::Rect& r, apps::Color c, int tolerance = 0) const {
    int n = 0;
    for (int y = std::max(r.y, 0); y < std::min(r.bottom(), height_); ++y)
      for (int x = std::max(r.x, 0); x < std::min(r.right(), width_); ++x) n += close(at(x, y), c, tolerance);
    return n;
  }
  static bool close(apps::Color a, apps::Color b, int tolerance) {
    return std::abs(a.r - b.r) <= tolerance && std::abs(a.g - b.g) <= tolerance && std::abs(a.b - b.b) <= tolerance;
  }

 private:
  int width_ = 0, height_ = 0;
  std::vector<uint32_t> pixels_;  // cairo's native-endian 0x00RRGGBB
};

}  // namespace posgrad::test
