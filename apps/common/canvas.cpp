// Canvas on cairo: see canvas.h.
#include "apps/common/canvas.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>

#include "nn/atomic_file.h"
#include "tensor/error.h"

namespace posgrad::apps {

namespace {

void check(cairo_status_t status, std::string_view what) {
  POSGRAD_CHECK(status == CAIRO_STATUS_SUCCESS, "Canvas: {} failed: {}", what,
                cairo_status_to_string(status));
}

void set_colour(cairo_t* cr, Color c) { cairo_set_source_rgb(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0); }

void set_font(cairo_t* cr, double size, bool bold) {
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

// Dashes scale with the line: 3 thicknesses on, 2 off (at least 6 and 4 units). Polylines get
// round joins, rectangles sharp corners.
void set_stroke(cairo_t* cr, Color c, double thickness, bool dashed, cairo_line_join_t join) {
  set_colour(cr, c);
  cairo_set_line_width(cr, thickness);
  cairo_set_line_join(cr, join);
  const double dashes[2] = {std::max(6.0, 3 * thickness), std::max(4.0, 2 * thickness)};
  cairo_set_dash(cr, dashes, dashed ? 2 : 0, 0);
}

// Cairo's text calls need valid UTF-8 (an invalid string puts the whole drawing in an error
// state): bytes that do not start a valid, shortest-form sequence become '?'.
std::string valid_utf8(std::string_view s) {
  static constexpr uint32_t kSmallest[5] = {0, 0, 0x80, 0x800, 0x10000};
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<unsigned char>(s[i]);
    const size_t len = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : (lead >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    uint32_t code = len > 1 ? lead & (0x7f >> len) : lead;
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
      code = (code << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    }
    ok = ok && code >= kSmallest[len] && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
    out.append(ok ? s.substr(i, len) : "?");
    i += ok ? len : 1;
  }
  return out;
}

cairo_status_t append(void* out, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(out)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

Canvas::Canvas(int width, int height, Color background)
    : width_(width), height_(height), recording_(nullptr, cairo_surface_destroy), cr_(nullptr, cairo_destroy) {
  POSGRAD_CHECK(width > 0 && height > 0 && width <= 32768 && height <= 32768,
                "Canvas: bad size {}x{} (each side must be 1..32768)", width, height);
  const cairo_rectangle_t extents{0, 0, static_cast<double>(width), static_cast<double>(height)};
  recording_.reset(cairo_recording_surface_create(CAIRO_CONTENT_COLOR, &extents));
  check(cairo_surface_status(recording_.get()), "creating the recording surface");
  cr_.reset(cairo_create(recording_.get()));
  check(cairo_status(cr_.get()), "creating the drawing context");
  // Text advances not rounded to pixels: the same layout in the PNG and the vector formats.
  cairo_font_options_t* font_options = cairo_font_options_create();
  cairo_font_options_set_hint_metrics(font_options, CAIRO_HINT_METRICS_OFF);
  cairo_set_font_options(cr_.get(), font_options);
  cairo_font_options_destroy(font_options);
  fill_rect(bounds(), background);
}

Canvas::~Canvas() = default;
Canvas::Canvas(Canvas&&) noexcept = default;
Canvas& Canvas::operator=(Canvas&&) noexcept = default;

void Canvas::fill_rect(const Rect& r, Color c) {
  if (r.w <= 0 || r.h <= 0) return;
  set_colour(cr_.get(), c);
  cairo_rectangle(cr_.get(), r.x, r.y, r.w, r.h);
  cairo_fill(cr_.get());
}

void Canvas::stroke_rect(const Rect& r, Color c, double thickness) {
  const double t = std::min({thickness, r.w / 2.0, r.h / 2.0});
  if (!(t > 0)) return;
  set_stroke(cr_.get(), c, t, false, CAIRO_LINE_JOIN_MITER);
  cairo_rectangle(cr_.get(), r.x + t / 2, r.y + t / 2, r.w - t, r.h - t);
  cairo_stroke(cr_.get());
}

void Canvas::vertical_gradient(const Rect& r, const std::vector<Color>& stops) {
  if (stops.empty() || r.w <= 0 || r.h <= 0) return;
  cairo_pattern_t* p = cairo_pattern_create_linear(0, r.bottom(), 0, r.y);
  for (size_t i = 0; i < stops.size(); ++i)
    cairo_pattern_add_color_stop_rgb(p, stops.size() > 1 ? static_cast<double>(i) / (stops.size() - 1) : 0,
                                     stops[i].r / 255.0, stops[i].g / 255.0, stops[i].b / 255.0);
  cairo_set_source(cr_.get(), p);
  cairo_rectangle(cr_.get(), r.x, r.y, r.w, r.h);
  cairo_fill(cr_.get());
  cairo_pattern_destroy(p);
}

void Canvas::line(double x0, double y0, double x1, double y1, Color c, double thickness, bool dashed) {
  polyline({x0, x1}, {y0, y1}, c, thickness, dashed);
}

void Canvas::polyline(const std::vector<double>& xs, const std::vector<double>& ys, Color c,
                      double thickness, bool dashed) {
  bool pen_down = false;
  for (size_t i = 0; i < std::min(xs.size(), ys.size()); ++i) {
    if (!std::isfinite(xs[i]) || !std::isfinite(ys[i])) {
      pen_down = false;
      continue;
    }
    (pen_down ? cairo_line_to : cairo_move_to)(cr_.get(), xs[i], ys[i]);
    pen_down = true;
  }
  set_stroke(cr_.get(), c, thickness, dashed, CAIRO_LINE_JOIN_ROUND);
  cairo_stroke(cr_.get());
}

void Canvas::circle(double cx, double cy, double radius, Color c) {
  if (!std::isfinite(cx) || !std::isfinite(cy) || !(radius > 0)) return;
  set_colour(cr_.get(), c);
  cairo_new_sub_path(cr_.get());
  cairo_arc(cr_.get(), cx, cy, radius, 0, 2 * std::numbers::pi);
  cairo_fill(cr_.get());
}

void Canvas::clip(const Rect& r) {
  cairo_reset_clip(cr_.get());
  cairo_rectangle(cr_.get(), r.x, r.y, r.w, r.h);
  cairo_clip(cr_.get());
}

void Canvas::unclip() { cairo_reset_clip(cr_.get()); }

double Canvas::text_width(std::string_view s, double size, bool bold) const {
  if (s.empty()) return 0;
  set_font(cr_.get(), size, bold);
  cairo_text_extents_t e;
  cairo_text_extents(cr_.get(), valid_utf8(s).c_str(), &e);
  return e.x_advance;
}

Rect Canvas::text(double x, double y, std::string_view s, const TextStyle& style) {
  const double w = text_width(s, style.size, style.bold), cap = cap_height(style.size);
  // In the text's own frame (origin at the anchor, rotated for vertical text): where the
  // baseline starts.
  const double left = style.align == Align::Left ? 0 : style.align == Align::Center ? -w / 2 : -w;
  const double baseline = style.valign == VAlign::Top ? cap : style.valign == VAlign::Middle ? cap / 2 : 0;
  cairo_t* cr = cr_.get();
  cairo_save(cr);
  cairo_translate(cr, x, y);
  if (style.vertical) cairo_rotate(cr, -std::numbers::pi / 2);
  set_colour(cr, style.color);
  cairo_move_to(cr, left, baseline);
  cairo_show_text(cr, valid_utf8(s).c_str());
  cairo_restore(cr);
  const double descent = 0.24 * style.size;
  const double top = baseline - cap;  // in the text frame: top of the box, below the anchor
  if (!style.vertical)
    return {static_cast<int>(std::floor(x + left)), static_cast<int>(std::floor(y + top)),
            static_cast<int>(std::ceil(w)), static_cast<int>(std::ceil(cap + descent))};
  // Rotated: text x runs up the screen, text y to the right.
  return {static_cast<int>(std::floor(x + top)), static_cast<int>(std::floor(y - left - w)),
          static_cast<int>(std::ceil(cap + descent)), static_cast<int>(std::ceil(w))};
}

std::string Canvas::encode(ImageFormat format) const {
  check(cairo_status(cr_.get()), "drawing");
  std::string out;
  cairo_surface_t* target = nullptr;
  if (format == ImageFormat::Png) target = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width_, height_);
  if (format == ImageFormat::Svg) target = cairo_svg_surface_create_for_stream(append, &out, width_, height_);
  if (format == ImageFormat::Pdf) target = cairo_pdf_surface_create_for_stream(append, &out, width_, height_);
  cairo_t* cr = cairo_create(target);
  cairo_set_source_surface(cr, recording_.get(), 0, 0);
  cairo_paint(cr);
  const cairo_status_t painted = cairo_status(cr);
  cairo_destroy(cr);
  if (format != ImageFormat::Png) cairo_surface_finish(target);  // flushes SVG and PDF into `out`
  cairo_status_t status = painted != CAIRO_STATUS_SUCCESS ? painted : cairo_surface_status(target);
  if (format == ImageFormat::Png && status == CAIRO_STATUS_SUCCESS)
    status = cairo_surface_write_to_png_stream(target, append, &out);
  cairo_surface_destroy(target);
  check(status, "rendering the image");
  return out;
}

void Canvas::save(const std::filesystem::path& path, ImageFormat format) const {
  const std::string bytes = encode(format);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  write_file_atomically(path, bytes);
}

}  // namespace posgrad::apps
