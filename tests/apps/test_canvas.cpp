// Canvas and colours: PNG bytes (signature, IHDR size), atomic saving, rectangles, lines, text
// that inks pixels inside its box, and the colour maps.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "apps/common/canvas.h"
#include "apps/common/color.h"
#include "tensor/error.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::TempDir;
using namespace posgrad::apps;

namespace {

uint32_t big_endian32(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) | b[at + 3];
}

int count_not(const Canvas& c, const Rect& r, Color background) {
  int n = 0;
  for (int y = std::max(r.y, 0); y < std::min(r.bottom(), c.height()); ++y)
    for (int x = std::max(r.x, 0); x < std::min(r.right(), c.width()); ++x) n += !(c.pixel(x, y) == background);
  return n;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(canvas)

BOOST_AUTO_TEST_CASE(png_signature_and_size) {
  TempDir tmp;
  Canvas c(123, 45, colors::white);
  c.fill_rect({10, 10, 20, 20}, colors::red);
  const fs::path p = tmp.path() / "sub" / "image.png";
  c.save_png(p);
  std::ifstream in(p, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_REQUIRE(bytes.size() > 33u);
  const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  for (int i = 0; i < 8; ++i) BOOST_TEST(bytes[i] == signature[i]);
  BOOST_TEST(std::string(bytes.begin() + 12, bytes.begin() + 16) == "IHDR");
  BOOST_TEST(big_endian32(bytes, 16) == 123u);  // width
  BOOST_TEST(big_endian32(bytes, 20) == 45u);   // height
  BOOST_TEST(bytes[24] == 8);                   // bits per channel
  BOOST_TEST(bytes[25] == 2);                   // colour type: RGB
  BOOST_TEST(bytes == c.encode_png());
  for (const auto& e : fs::directory_iterator(p.parent_path()))
    BOOST_TEST(e.path().filename() == "image.png");  // no temporary file left
}

BOOST_AUTO_TEST_CASE(rectangles_and_clipping) {
  Canvas c(20, 10, colors::black);
  BOOST_TEST(c.width() == 20);
  BOOST_TEST(c.rgb().size() == 20u * 10u * 3u);
  BOOST_TEST(c.pixel(5, 5) == colors::black);
  c.fill_rect({-5, -5, 10, 10}, colors::white);  // partly outside
  BOOST_TEST(c.pixel(0, 0) == colors::white);
  BOOST_TEST(c.pixel(4, 4) == colors::white);
  BOOST_TEST(c.pixel(5, 5) == colors::black);
  c.stroke_rect({10, 2, 6, 6}, colors::red, 1);
  BOOST_TEST(c.pixel(10, 2) == colors::red);
  BOOST_TEST(c.pixel(15, 7) == colors::red);
  BOOST_TEST(c.pixel(12, 4) == colors::black);
  c.set_pixel(100, 100, colors::red);  // ignored
  c.line(-50, -50, 100, 100, colors::blue, 3);  // clipped, no crash
  BOOST_CHECK_THROW(c.pixel(20, 0), posgrad::Error);
  BOOST_CHECK_THROW(Canvas(0, 10), posgrad::Error);
}

BOOST_AUTO_TEST_CASE(lines_cover_their_thickness) {
  Canvas c(50, 50, colors::white);
  c.line(5, 25.5, 45, 25.5, colors::black, 5);
  BOOST_TEST(c.pixel(25, 25) == colors::black);
  BOOST_TEST(c.pixel(25, 23) == colors::black);
  BOOST_TEST(c.pixel(25, 27) == colors::black);
  BOOST_TEST(c.pixel(25, 20) == colors::white);
  BOOST_TEST(c.pixel(25, 31) == colors::white);
  c.line(10, 5, 40, 15, colors::red, 1);  // diagonal: inked near its middle
  BOOST_TEST(!(c.pixel(25, 10) == colors::white));
  c.circle(10, 40, 3, colors::green);
  BOOST_TEST(c.pixel(10, 40) == colors::green);
}

BOOST_AUTO_TEST_CASE(text_inks_pixels_inside_its_box) {
  Canvas c(200, 80, colors::white);
  TextStyle st;
  st.scale = 2;
  const Rect box = c.text(10, 10, "Loss 0.25", st);
  BOOST_TEST(box.x == 10);
  BOOST_TEST(box.y == 10);
  BOOST_TEST(box.w == Canvas::text_width("Loss 0.25", 2));
  BOOST_TEST(box.h == Canvas::cap_height(2));
  const int inked = count_not(c, box.inset(0, 0, 0, -6), colors::white);  // descenders below
  BOOST_TEST(inked > 50);
  BOOST_TEST(count_not(c, c.bounds(), colors::white) == inked);  // nothing outside
  BOOST_TEST(Canvas::text_width("abc", 3) == 3 * Canvas::text_width("abc", 1));
  BOOST_TEST(Canvas::text_width("", 2) == 0);

  // Centred text straddles its anchor; vertical text is taller than wide.
  Canvas d(200, 200, colors::white);
  st.align = Align::Center;
  st.valign = VAlign::Middle;
  const Rect centred = d.text(100, 100, "1234", st);
  BOOST_TEST(centred.x < 100);
  BOOST_TEST(centred.right() > 100);
  BOOST_TEST(centred.y < 100);
  BOOST_TEST(centred.bottom() > 100);
  Canvas v(100, 200, colors::white);
  st.vertical = true;
  const Rect tall = v.text(50, 100, "vertical", st);
  BOOST_TEST(tall.h > tall.w);
  BOOST_TEST(count_not(v, tall.inset(-20), colors::white) > 50);
  BOOST_TEST(count_not(v, v.bounds(), colors::white) == count_not(v, tall.inset(-20), colors::white));

  // Non-ASCII and control characters do not crash.
  Canvas e(100, 30, colors::white);
  e.text(0, 0, "caf\xc3\xa9 \t\x7f", {});
  BOOST_TEST(count_not(e, e.bounds(), colors::white) > 0);
}

BOOST_AUTO_TEST_CASE(bold_text_is_heavier) {
  Canvas a(100, 30, colors::white), b(100, 30, colors::white);
  TextStyle st;
  a.text(2, 2, "24", st);
  st.bold = true;
  b.text(2, 2, "24", st);
  BOOST_TEST(count_not(b, b.bounds(), colors::white) > count_not(a, a.bounds(), colors::white));
}

BOOST_AUTO_TEST_CASE(colour_maps) {
  BOOST_TEST(colormap(Colormap::Viridis, 0.0) == (Color{68, 1, 84}));
  BOOST_TEST(colormap(Colormap::Viridis, 1.0) == (Color{253, 231, 37}));
  BOOST_TEST(colormap(Colormap::Viridis, -3.0) == colormap(Colormap::Viridis, 0.0));
  BOOST_TEST(colormap(Colormap::Viridis, 7.0) == colormap(Colormap::Viridis, 1.0));
  // Perceptual: brightness rises steadily along the map.
  double last = -1;
  for (int i = 0; i <= 20; ++i) {
    const double l = luminance(colormap(Colormap::Viridis, i / 20.0));
    BOOST_TEST(l > last);
    last = l;
  }
  const Color mid = colormap(Colormap::Diverging, 0.5);
  BOOST_TEST(luminance(mid) > 0.85);  // near white at 0
  BOOST_TEST(colormap(Colormap::Diverging, 0.0).b > colormap(Colormap::Diverging, 0.0).r);
  BOOST_TEST(colormap(Colormap::Diverging, 1.0).r > colormap(Colormap::Diverging, 1.0).b);
  BOOST_TEST(colormap(Colormap::Grays, 0.5) == (Color{128, 128, 128}));
  BOOST_TEST(mix(colors::black, colors::white, 0.5) == (Color{128, 128, 128}));
  BOOST_TEST(!(palette(0) == palette(1)));
  BOOST_TEST(palette(10) == palette(0));
  BOOST_TEST(to_hex(Color{255, 0, 16}) == "#ff0010");
}

BOOST_AUTO_TEST_SUITE_END()
