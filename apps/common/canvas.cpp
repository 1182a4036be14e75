// Canvas: see canvas.h. The only file that compiles stb_image_write's implementation.
#include "apps/common/canvas.h"

#include <algorithm>
#include <cmath>
#include <string>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb/stb_image_write.h>
#include <stb/stb_easy_font.h>

#include "nn/atomic_file.h"
#include "tensor/error.h"

namespace posgrad::apps {

Canvas::Canvas(int width, int height, Color background) : width_(width), height_(height) {
  POSGRAD_CHECK(width > 0 && height > 0 && width <= 32768 && height <= 32768,
                "Canvas: bad size {}x{} (each side must be 1..32768)", width, height);
  pixels_.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  fill(background);
}

Color Canvas::pixel(int x, int y) const {
  POSGRAD_CHECK(x >= 0 && y >= 0 && x < width_ && y < height_,
                "Canvas::pixel: ({}, {}) is outside the {}x{} canvas", x, y, width_, height_);
  const size_t i = (static_cast<size_t>(y) * width_ + x) * 3;
  return {pixels_[i], pixels_[i + 1], pixels_[i + 2]};
}

void Canvas::set_pixel(int x, int y, Color c) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  const size_t i = (static_cast<size_t>(y) * width_ + x) * 3;
  pixels_[i] = c.r;
  pixels_[i + 1] = c.g;
  pixels_[i + 2] = c.b;
}

void Canvas::blend_pixel(int x, int y, Color c, double alpha) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_ || !(alpha > 0)) return;
  if (alpha >= 1) return set_pixel(x, y, c);
  const size_t i = (static_cast<size_t>(y) * width_ + x) * 3;
  const Color old{pixels_[i], pixels_[i + 1], pixels_[i + 2]};
  set_pixel(x, y, mix(old, c, alpha));
}

void Canvas::fill(Color c) { fill_rect(bounds(), c); }

void Canvas::fill_rect(const Rect& r, Color c) {
  const int x0 = std::max(r.x, 0), x1 = std::min(r.right(), width_);
  const int y0 = std::max(r.y, 0), y1 = std::min(r.bottom(), height_);
  for (int y = y0; y < y1; ++y) {
    uint8_t* p = &pixels_[(static_cast<size_t>(y) * width_ + x0) * 3];
    for (int x = x0; x < x1; ++x, p += 3) {
      p[0] = c.r;
      p[1] = c.g;
      p[2] = c.b;
    }
  }
}

void Canvas::stroke_rect(const Rect& r, Color c, int t) {
  t = std::max(1, std::min({t, (r.w + 1) / 2, (r.h + 1) / 2}));
  fill_rect({r.x, r.y, r.w, t}, c);
  fill_rect({r.x, r.bottom() - t, r.w, t}, c);
  fill_rect({r.x, r.y, t, r.h}, c);
  fill_rect({r.right() - t, r.y, t, r.h}, c);
}

// Coverage of each pixel centre by a capsule around the segment, with a one-pixel ramp.
void Canvas::line(double x0, double y0, double x1, double y1, Color c, double thickness) {
  if (!std::isfinite(x0) || !std::isfinite(y0) || !std::isfinite(x1) || !std::isfinite(y1)) return;
  const double half = std::max(thickness, 0.5) / 2.0;
  // Axis-aligned lines with integer-friendly ends: crisp rectangles, no blur.
  const double dx = x1 - x0, dy = y1 - y0;
  const double len2 = dx * dx + dy * dy;
  const int bx0 = static_cast<int>(std::floor(std::min(x0, x1) - half - 1));
  const int bx1 = static_cast<int>(std::ceil(std::max(x0, x1) + half + 1));
  const int by0 = static_cast<int>(std::floor(std::min(y0, y1) - half - 1));
  const int by1 = static_cast<int>(std::ceil(std::max(y0, y1) + half + 1));
  for (int y = std::max(by0, 0); y <= std::min(by1, height_ - 1); ++y) {
    for (int x = std::max(bx0, 0); x <= std::min(bx1, width_ - 1); ++x) {
      const double px = x + 0.5, py = y + 0.5;
      double t = len2 > 0 ? ((px - x0) * dx + (py - y0) * dy) / len2 : 0.0;
      t = std::clamp(t, 0.0, 1.0);
      const double ex = px - (x0 + t * dx), ey = py - (y0 + t * dy);
      const double d = std::sqrt(ex * ex + ey * ey);
      const double coverage = std::clamp(half + 0.5 - d, 0.0, 1.0);
      if (coverage > 0) blend_pixel(x, y, c, coverage);
    }
  }
}

void Canvas::polyline(const std::vector<double>& xs, const std::vector<double>& ys, Color c,
                      double thickness) {
  const size_t n = std::min(xs.size(), ys.size());
  for (size_t i = 0; i + 1 < n; ++i) line(xs[i], ys[i], xs[i + 1], ys[i + 1], c, thickness);
  if (n == 1) circle(xs[0], ys[0], thickness, c);
}

void Canvas::dashed_line(double x0, double y0, double x1, double y1, Color c, double dash,
                         double gap, double thickness) {
  const double len = std::hypot(x1 - x0, y1 - y0);
  if (!(len > 0) || !(dash > 0)) return;
  const double ux = (x1 - x0) / len, uy = (y1 - y0) / len;
  for (double s = 0; s < len; s += dash + gap) {
    const double e = std::min(s + dash, len);
    line(x0 + ux * s, y0 + uy * s, x0 + ux * e, y0 + uy * e, c, thickness);
  }
}

void Canvas::circle(double cx, double cy, double radius, Color c) {
  if (!std::isfinite(cx) || !std::isfinite(cy) || !(radius > 0)) return;
  const int x0 = static_cast<int>(std::floor(cx - radius - 1)), x1 = static_cast<int>(std::ceil(cx + radius + 1));
  const int y0 = static_cast<int>(std::floor(cy - radius - 1)), y1 = static_cast<int>(std::ceil(cy + radius + 1));
  for (int y = std::max(y0, 0); y <= std::min(y1, height_ - 1); ++y)
    for (int x = std::max(x0, 0); x <= std::min(x1, width_ - 1); ++x) {
      const double d = std::hypot(x + 0.5 - cx, y + 0.5 - cy);
      blend_pixel(x, y, c, std::clamp(radius + 0.5 - d, 0.0, 1.0));
    }
}

// ------------------------------------------------------------------ text

namespace {

std::string printable(std::string_view s) {
  std::string out(s);
  for (char& ch : out)
    if (ch != '\n' && (static_cast<unsigned char>(ch) < 32 || static_cast<unsigned char>(ch) > 126))
      ch = '?';
  return out;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines(1);
  for (char ch : s) {
    if (ch == '\n') lines.emplace_back();
    else lines.back() += ch;
  }
  return lines;
}

int bold_offset(int scale) { return std::max(1, scale / 2); }

int line_width_units(const std::string& line) {
  if (line.empty()) return 0;
  // stb_easy_font_width counts the gap after the last letter; drop it.
  return std::max(0, stb_easy_font_width(const_cast<char*>(line.c_str())) - 1);
}

}  // namespace

int Canvas::text_width(std::string_view s, int scale, bool bold) {
  int units = 0;
  for (const std::string& line : split_lines(printable(s))) units = std::max(units, line_width_units(line));
  if (units == 0) return 0;
  return units * scale + (bold ? bold_offset(scale) : 0);
}

int Canvas::text_height(std::string_view s, int scale) {
  const int lines = static_cast<int>(split_lines(printable(s)).size());
  return ((lines - 1) * 12 + 7) * scale;
}

Rect Canvas::text(int x, int y, std::string_view s, const TextStyle& style) {
  const int scale = std::max(1, style.scale);
  const std::string clean = printable(s);
  const std::vector<std::string> lines = split_lines(clean);
  const int block_w = text_width(clean, scale, style.bold);
  const int block_h = text_height(clean, scale);

  // The box in text space (before rotation): left/top of the first line's capitals.
  int left = x, top = y;
  if (!style.vertical) {
    if (style.align == Align::Center) left = x - block_w / 2;
    if (style.align == Align::Right) left = x - block_w;
    if (style.valign == VAlign::Middle) top = y - block_h / 2;
    if (style.valign == VAlign::Bottom) top = y - block_h;
  }
  // Vertical text reads bottom to top: "along" is -y, "across" is +x. Align is along the text
  // (Left: starts at y and goes up), VAlign across it (Top: the capitals' top edge is at x).
  int along0 = 0, across0 = 0;
  if (style.vertical) {
    along0 = y;
    if (style.align == Align::Center) along0 = y + block_w / 2;
    if (style.align == Align::Right) along0 = y + block_w;
    across0 = x;
    if (style.valign == VAlign::Middle) across0 = x - block_h / 2;
    if (style.valign == VAlign::Bottom) across0 = x - block_h;
  }

  static thread_local std::vector<char> buffer;
  const int passes = style.bold ? 2 : 1;
  for (size_t li = 0; li < lines.size(); ++li) {
    const std::string& line = lines[li];
    if (line.empty()) continue;
    int line_offset = 0;  // per-line alignment inside the block
    const int lw = text_width(line, scale, style.bold);
    if (style.align == Align::Center) line_offset = (block_w - lw) / 2;
    if (style.align == Align::Right) line_offset = block_w - lw;
    buffer.resize(line.size() * 1024 + 1024);  // a letter takes up to ~12 quads of 64 bytes
    const int quads = stb_easy_font_print(0, 0, const_cast<char*>(line.c_str()), nullptr,
                                          buffer.data(), static_cast<int>(buffer.size()));
    for (int pass = 0; pass < passes; ++pass) {
      const int shift = pass * bold_offset(scale);
      for (int q = 0; q < quads; ++q) {
        const float* v0 = reinterpret_cast<const float*>(buffer.data() + (q * 4 + 0) * 16);
        const float* v2 = reinterpret_cast<const float*>(buffer.data() + (q * 4 + 2) * 16);
        const int u0 = static_cast<int>(std::lround(v0[0])) * scale + line_offset + shift;
        const int u1 = static_cast<int>(std::lround(v2[0])) * scale + line_offset + shift;
        const int w0 = (static_cast<int>(std::lround(v0[1])) + static_cast<int>(li) * 12) * scale;
        const int w1 = (static_cast<int>(std::lround(v2[1])) + static_cast<int>(li) * 12) * scale;
        if (!style.vertical) {
          fill_rect({left + u0, top + w0, u1 - u0, w1 - w0}, style.color);
        } else {
          fill_rect({across0 + w0, along0 - u1, w1 - w0, u1 - u0}, style.color);
        }
      }
    }
  }
  if (!style.vertical) return {left, top, block_w, block_h};
  return {across0, along0 - block_w, block_h, block_w};
}

void Canvas::draw(const Canvas& other, int x, int y) {
  for (int yy = 0; yy < other.height_; ++yy) {
    const int ty = y + yy;
    if (ty < 0 || ty >= height_) continue;
    for (int xx = 0; xx < other.width_; ++xx) {
      const int tx = x + xx;
      if (tx < 0 || tx >= width_) continue;
      const size_t s = (static_cast<size_t>(yy) * other.width_ + xx) * 3;
      set_pixel(tx, ty, {other.pixels_[s], other.pixels_[s + 1], other.pixels_[s + 2]});
    }
  }
}

// ------------------------------------------------------------------ PNG

namespace {
void append_bytes(void* context, void* data, int size) {
  auto* out = static_cast<std::vector<uint8_t>*>(context);
  const auto* p = static_cast<const uint8_t*>(data);
  out->insert(out->end(), p, p + size);
}
}  // namespace

std::vector<uint8_t> Canvas::encode_png() const {
  std::vector<uint8_t> out;
  const int ok = stbi_write_png_to_func(append_bytes, &out, width_, height_, 3, pixels_.data(),
                                        width_ * 3);
  POSGRAD_CHECK(ok != 0 && !out.empty(), "Canvas: PNG encoding of a {}x{} image failed", width_,
                height_);
  return out;
}

void Canvas::save_png(const std::filesystem::path& path) const {
  const std::vector<uint8_t> png = encode_png();
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  write_file_atomically(path, std::string_view(reinterpret_cast<const char*>(png.data()), png.size()));
}

}  // namespace posgrad::apps
