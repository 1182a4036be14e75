// Canvas and colours: PNG bytes (signature, IHDR size), SVG and PDF output, atomic saving,
// rectangles, lines, dashes, clipping, text that inks pixels inside its box (also rotated, bold
// and with invalid UTF-8), and the colour maps. Pixels are checked on the decoded PNG.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/common/canvas.h"
#include "apps/common/color.h"
#include "nn/atomic_file.h"
#include "tensor/error.h"
#include "tests/apps/png_pixels.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::PngPixels;
using posgrad::test::TempDir;
using namespace posgrad::apps;

namespace {

uint32_t big_endian32(const std::string& b, size_t at) {
  auto byte = [&](size_t i) { return uint32_t{static_cast<unsigned char>(b[at + i])}; };
  return (byte(0) << 24) | (byte(1) << 16) | (byte(2) << 8) | byte(3);
}

int count_not(const PngPixels& p, const Rect& r, Color background) {
  return std::max(0, std::min(r.right(), p.width()) - std::max(r.x, 0)) *
             std::max(0, std::min(r.bottom(), p.height()) - std::max(r.y, 0)) -
         p.count(r, background);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(canvas)

BOOST_AUTO_TEST_CASE(png_signature_and_size) {
  TempDir tmp;
  Canvas c(123, 45, colors::white);
  c.fill_rect({10, 10, 20, 20}, colors::red);
  const fs::path p = tmp.path() / "sub" / "image.png";
  c.save(p, ImageFormat::Png);
  const std::string bytes = posgrad::read_file_bytes(p);
  BOOST_REQUIRE(bytes.size() > 33u);
  BOOST_TEST(bytes.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n"));
  BOOST_TEST(bytes.substr(12, 4) == "IHDR");
  BOOST_TEST(big_endian32(bytes, 16) == 123u);  // width
  BOOST_TEST(big_endian32(bytes, 20) == 45u);   // height
  BOOST_TEST(bytes[24] == 8);                   // bits per channel
  BOOST_TEST(bytes[25] == 2);                   // colour type: RGB
  BOOST_TEST(bytes == c.encode(ImageFormat::Png));
  for (const auto& e : fs::directory_iterator(p.parent_path()))
    BOOST_TEST(e.path().filename() == "image.png");  // no temporary file left
  const PngPixels px = PngPixels::from_file(p);
  BOOST_TEST(px.at(15, 15) == colors::red);
  BOOST_TEST(px.at(5, 5) == colors::white);
}

BOOST_AUTO_TEST_CASE(svg_and_pdf_are_vector_twins) {
  Canvas c(200, 100, colors::white);
  c.fill_rect({10, 10, 50, 30}, colors::blue);
  c.text(20, 60, "loss 0.25");
  const std::string svg = c.encode(ImageFormat::Svg);
  BOOST_TEST(svg.rfind("<?xml", 0) == 0u);
  BOOST_TEST(svg.find("<svg") != std::string::npos);
  BOOST_TEST(svg.find("width=\"200pt\"") != std::string::npos);
  BOOST_TEST(svg.find("rgb(12.156863%,39.215686%,78.431373%)") != std::string::npos);  // colors::blue
  BOOST_TEST(svg.find("<image") == std::string::npos);  // drawn as vectors, not a raster
  BOOST_TEST(svg.find("</svg>") != std::string::npos);
  const std::string pdf = c.encode(ImageFormat::Pdf);
  BOOST_TEST(pdf.rfind("%PDF-", 0) == 0u);
  BOOST_TEST(pdf.find("%%EOF") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(rectangles_and_clipping) {
  Canvas c(20, 10, colors::black);
  BOOST_TEST(c.width() == 20);
  c.fill_rect({-5, -5, 10, 10}, colors::white);  // partly outside
  c.stroke_rect({10, 2, 6, 6}, colors::red, 1);
  c.line(-50, -50, 100, 100, colors::blue, 3);  // clipped to the canvas, no error
  const PngPixels p = PngPixels::render(c);
  BOOST_TEST(p.at(0, 4) == colors::white);
  BOOST_TEST(p.at(4, 0) == colors::white);
  BOOST_TEST(p.at(5, 0) == colors::black);
  BOOST_TEST(p.at(10, 2) == colors::red);
  BOOST_TEST(p.at(15, 7) == colors::red);
  BOOST_TEST(p.at(12, 4) == colors::black);
  BOOST_TEST(p.at(8, 8) == colors::blue);
  BOOST_CHECK_THROW(Canvas(0, 10), posgrad::Error);

  Canvas d(40, 40, colors::white);
  d.clip({10, 10, 10, 10});
  d.fill_rect(d.bounds(), colors::green);
  d.unclip();
  d.fill_rect({30, 30, 5, 5}, colors::green);
  const PngPixels q = PngPixels::render(d);
  BOOST_TEST(q.count(d.bounds(), colors::green) == 100 + 25);
  BOOST_TEST(q.count({10, 10, 10, 10}, colors::green) == 100);
}

BOOST_AUTO_TEST_CASE(lines_cover_their_thickness) {
  Canvas c(50, 50, colors::white);
  c.line(5, 25.5, 45, 25.5, colors::black, 5);
  c.line(10, 5, 40, 15, colors::red, 1);  // diagonal: inked near its middle
  c.circle(10, 40, 3, colors::green);
  c.line(0, 45.5, 50, 45.5, colors::blue, 1, /*dashed=*/true);
  const PngPixels p = PngPixels::render(c);
  for (int y = 23; y <= 27; ++y) BOOST_TEST(p.at(25, y) == colors::black);
  BOOST_TEST(p.at(25, 22) == colors::white);
  BOOST_TEST(p.at(25, 28) == colors::white);
  BOOST_TEST(!(p.at(25, 10) == colors::white));
  BOOST_TEST(p.at(10, 40) == colors::green);
  // Dashes: 6 on, 4 off.
  int changes = 0;
  for (int x = 1; x < 50; ++x) changes += (p.at(x, 45) == colors::white) != (p.at(x - 1, 45) == colors::white);
  BOOST_TEST(changes >= 8);
  BOOST_TEST(p.count({0, 45, 50, 1}, colors::blue) >= 25);
}

BOOST_AUTO_TEST_CASE(text_inks_pixels_inside_its_box) {
  Canvas c(200, 80, colors::white);
  TextStyle st;
  st.size = 20;
  const Rect box = c.text(10, 10, "Loss 0.25 gy", st);
  BOOST_TEST(box.x == 10);
  BOOST_TEST(box.y == 10);
  BOOST_TEST(box.w == static_cast<int>(std::ceil(c.text_width("Loss 0.25 gy", 20))));
  BOOST_TEST(box.h >= static_cast<int>(Canvas::cap_height(20)));
  BOOST_TEST(c.text_width("abc", 30) == 3 * c.text_width("abc", 10), boost::test_tools::tolerance(0.05));
  BOOST_TEST(c.text_width("", 20) == 0);
  const PngPixels p = PngPixels::render(c);
  const int inked = count_not(p, box.inset(-1), colors::white);
  BOOST_TEST(inked > 100);
  BOOST_TEST(count_not(p, c.bounds(), colors::white) == inked);  // nothing outside
  // The capitals start at the box's top: the top rows of the box are inked, the rows above not.
  BOOST_TEST(count_not(p, {box.x, box.y, box.w, 3}, colors::white) > 5);
  BOOST_TEST(count_not(p, {0, 0, 200, box.y - 1}, colors::white) == 0);

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
  BOOST_TEST(tall.h > 2 * tall.w);
  const PngPixels pv = PngPixels::render(v);
  BOOST_TEST(count_not(pv, tall.inset(-1), colors::white) > 100);
  BOOST_TEST(count_not(pv, v.bounds(), colors::white) == count_not(pv, tall.inset(-1), colors::white));

  // UTF-8 is drawn; invalid bytes (a lone continuation byte, an overlong '/', a truncated
  // sequence) do not break the drawing.
  Canvas e(200, 30, colors::white);
  e.text(0, 0, "caf\xc3\xa9 \x80 \xc0\xaf \xe2\x82", {});
  BOOST_TEST(count_not(PngPixels::render(e), e.bounds(), colors::white) > 0);
}

BOOST_AUTO_TEST_CASE(bold_text_is_heavier) {
  Canvas a(100, 30, colors::white), b(100, 30, colors::white);
  TextStyle st;
  a.text(2, 2, "24", st);
  st.bold = true;
  b.text(2, 2, "24", st);
  const Color white = colors::white;
  BOOST_TEST(count_not(PngPixels::render(b), b.bounds(), white) > count_not(PngPixels::render(a), a.bounds(), white));
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
