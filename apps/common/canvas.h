// Canvas: an RGB raster to draw figures on, saved as PNG. Filled and outlined rectangles,
// antialiased lines of any thickness, filled circles, and text from stb_easy_font (a small
// vector font of axis-aligned strokes) drawn at an integer scale: scale 1 letters are 7 px tall,
// scale 2 letters 14 px. Coordinates are pixels, x to the right, y down; drawing outside the
// canvas is clipped.
//
// Deliberately does not: load images, use alpha channels, draw non-ASCII text, rotate text other
// than by 90 degrees, or know about axes and data (see plot.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "apps/common/color.h"

namespace posgrad::apps {

struct Rect {
  int x = 0, y = 0, w = 0, h = 0;
  int right() const { return x + w; }   // one past the last column
  int bottom() const { return y + h; }  // one past the last row
  Rect inset(int d) const { return {x + d, y + d, w - 2 * d, h - 2 * d}; }
  Rect inset(int left, int top, int right_, int bottom_) const {
    return {x + left, y + top, w - left - right_, h - top - bottom_};
  }
  bool contains(int px, int py) const { return px >= x && px < right() && py >= y && py < bottom(); }
};

enum class Align { Left, Center, Right };   // where x is on the text
enum class VAlign { Top, Middle, Bottom };  // where y is: top of capitals, their middle, baseline

struct TextStyle {
  int scale = 2;              // 1: 7 px capitals; 2: 14 px; 3: 21 px ...
  Color color = colors::black;
  Align align = Align::Left;
  VAlign valign = VAlign::Top;
  bool bold = false;
  bool vertical = false;      // rotated 90 degrees counter-clockwise (reads bottom to top)
};

class Canvas {
 public:
  Canvas(int width, int height, Color background = colors::white);

  int width() const { return width_; }
  int height() const { return height_; }
  Rect bounds() const { return {0, 0, width_, height_}; }
  const std::vector<uint8_t>& rgb() const { return pixels_; }  // row-major, 3 bytes per pixel

  Color pixel(int x, int y) const;  // throws outside the canvas
  void set_pixel(int x, int y, Color c);
  void blend_pixel(int x, int y, Color c, double alpha);  // alpha in [0, 1]

  void fill(Color c);
  void fill_rect(const Rect& r, Color c);
  void stroke_rect(const Rect& r, Color c, int thickness = 1);  // the border lies inside r
  void line(double x0, double y0, double x1, double y1, Color c, double thickness = 1.0);
  // Joined segments; a NaN coordinate breaks the line.
  void polyline(const std::vector<double>& xs, const std::vector<double>& ys, Color c,
                double thickness = 1.0);
  void circle(double cx, double cy, double radius, Color c);  // filled, antialiased
  void dashed_line(double x0, double y0, double x1, double y1, Color c, double dash = 4,
                   double gap = 4, double thickness = 1.0);

  // Text at (x, y) anchored per style.align / style.valign. Newlines start new lines. Characters
  // outside printable ASCII are drawn as '?'. Returns the box it covered.
  Rect text(int x, int y, std::string_view s, const TextStyle& style = {});
  static int text_width(std::string_view s, int scale, bool bold = false);  // inked width, px
  static int text_height(std::string_view s, int scale);  // capitals to baseline of the last line
  static int line_height(int scale) { return 12 * scale; }
  static int cap_height(int scale) { return 7 * scale; }

  // Copies `other` with its top-left corner at (x, y).
  void draw(const Canvas& other, int x, int y);

  std::vector<uint8_t> encode_png() const;
  // Writes a PNG atomically (temporary file + rename).
  void save_png(const std::filesystem::path& path) const;

 private:
  int width_, height_;
  std::vector<uint8_t> pixels_;
};

}  // namespace posgrad::apps
