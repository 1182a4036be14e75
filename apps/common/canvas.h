// Canvas: a drawing area for figures on cairo. Everything drawn is recorded (a cairo recording
// surface) and rendered on saving: to a PNG (antialiased raster, 1 unit = 1 pixel), an SVG or a
// PDF (vectors, 1 unit = 1 pt). Filled and outlined rectangles, lines and polylines (solid or
// dashed), filled circles, a vertical colour gradient, and text in a sans-serif font (DejaVu Sans
// through cairo's toy text API), horizontal or rotated 90 degrees. Coordinates are in units,
// x to the right, y down; drawing outside the canvas is clipped.
//
// Deliberately does not: load images, read pixels back (decode the PNG for that), use alpha,
// lay out text over several lines, or know about axes and data (see plot.h).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "apps/common/color.h"

struct _cairo;
struct _cairo_surface;

namespace posgrad::apps {

struct Rect {
  int x = 0, y = 0, w = 0, h = 0;
  int right() const { return x + w; }   // one past the last column
  int bottom() const { return y + h; }  // one past the last row
  Rect inset(int d) const { return {x + d, y + d, w - 2 * d, h - 2 * d}; }
  Rect inset(int left, int top, int right_, int bottom_) const {
    return {x + left, y + top, w - left - right_, h - top - bottom_};
  }
  bool contains(double px, double py) const { return px >= x && px < right() && py >= y && py < bottom(); }
};

enum class Align { Left, Center, Right };   // where x is on the text
enum class VAlign { Top, Middle, Bottom };  // where y is: top of capitals, their middle, baseline

struct TextStyle {
  double size = 13;           // font size in units (capitals are about 0.73 of it)
  Color color = colors::black;
  Align align = Align::Left;
  VAlign valign = VAlign::Top;
  bool bold = false;
  bool vertical = false;      // rotated 90 degrees counter-clockwise (reads bottom to top); align
                              // is along the text, valign across it (Top: capitals' top at x)
};

enum class ImageFormat { Png, Svg, Pdf };

class Canvas {
 public:
  Canvas(int width, int height, Color background = colors::white);
  ~Canvas();
  Canvas(Canvas&&) noexcept;
  Canvas& operator=(Canvas&&) noexcept;

  int width() const { return width_; }
  int height() const { return height_; }
  Rect bounds() const { return {0, 0, width_, height_}; }

  void fill_rect(const Rect& r, Color c);
  void stroke_rect(const Rect& r, Color c, double thickness = 1);  // the border lies inside r
  // Bottom-to-top gradient through `stops` (evenly spaced), filling r.
  void vertical_gradient(const Rect& r, const std::vector<Color>& stops);
  void line(double x0, double y0, double x1, double y1, Color c, double thickness = 1.0,
            bool dashed = false);
  // Joined segments; a non-finite coordinate breaks the line.
  void polyline(const std::vector<double>& xs, const std::vector<double>& ys, Color c,
                double thickness = 1.0, bool dashed = false);
  void circle(double cx, double cy, double radius, Color c);  // filled
  // Later drawing is clipped to r until unclip().
  void clip(const Rect& r);
  void unclip();

  // One line of UTF-8 text anchored per style.align / style.valign (invalid bytes are drawn as
  // '?'); returns the box of its advance width by its capital height plus descenders.
  Rect text(double x, double y, std::string_view s, const TextStyle& style = {});
  double text_width(std::string_view s, double size, bool bold = false) const;  // advance, units
  static double cap_height(double size) { return 0.73 * size; }  // DejaVu Sans capitals

  std::string encode(ImageFormat format) const;
  // Writes the image atomically (parent folders created); the format is given, not guessed.
  void save(const std::filesystem::path& path, ImageFormat format) const;

 private:
  int width_, height_;
  std::unique_ptr<_cairo_surface, void (*)(_cairo_surface*)> recording_;
  std::unique_ptr<_cairo, void (*)(_cairo*)> cr_;
};

}  // namespace posgrad::apps
