// Plots: heatmap cells take the colour map's colour, hidden cells the mask colour, highlighted
// cells a border, cell text inks pixels; tick values are round; line plots draw their series;
// a Figure lays panels out in a grid; and a full count24-style figure saves as a PNG.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "apps/common/plot.h"
#include "tensor/error.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::TempDir;
using namespace posgrad::apps;

namespace {

bool close(Color a, Color b, int tolerance) {
  return std::abs(a.r - b.r) <= tolerance && std::abs(a.g - b.g) <= tolerance &&
         std::abs(a.b - b.b) <= tolerance;
}

int count_colour(const Canvas& c, const Rect& r, Color colour) {
  int n = 0;
  for (int y = r.y; y < r.bottom(); ++y)
    for (int x = r.x; x < r.right(); ++x) n += c.pixel(x, y) == colour;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(plot)

BOOST_AUTO_TEST_CASE(heatmap_cells_follow_the_colour_map) {
  Canvas c(400, 300, colors::white);
  const std::vector<float> values{0, 1, 2, 3, 4, 5};
  HeatmapOptions o;
  o.title = "values";
  const HeatmapLayout l = draw_heatmap(c, c.bounds(), values, 2, 3, o);
  BOOST_REQUIRE(l.cell_w > 10);
  BOOST_REQUIRE(l.cell_h > 10);
  BOOST_TEST(l.vmin == 0.0);
  BOOST_TEST(l.vmax == 5.0);
  for (int r = 0; r < 2; ++r)
    for (int col = 0; col < 3; ++col) {
      const Rect cell = l.cell(r, col);
      const Color expected = colormap(Colormap::Viridis, (r * 3 + col) / 5.0);
      BOOST_TEST((c.pixel(cell.x + cell.w / 2, cell.y + cell.h / 2) == expected), r << "," << col);
      BOOST_TEST((c.pixel(cell.x + 2, cell.y + 2) == expected));
    }
  // The colour bar: high values on top.
  BOOST_REQUIRE(l.colorbar.w > 0);
  BOOST_TEST(close(c.pixel(l.colorbar.x + 5, l.colorbar.y + 1), colormap(Colormap::Viridis, 1.0), 12));
  BOOST_TEST(close(c.pixel(l.colorbar.x + 5, l.colorbar.bottom() - 2), colormap(Colormap::Viridis, 0.0), 12));
}

BOOST_AUTO_TEST_CASE(heatmap_text_highlight_and_mask) {
  Canvas c(500, 300, colors::white);
  const std::vector<float> values{0.1f, 0.9f, 0.5f, 0.0f};
  HeatmapOptions o;
  o.cell_text = {"2", "4", "7", ""};
  o.highlight = {1, 0, 0, 0};
  o.mask = {1, 1, 0, 1};
  o.vmin = 0.0;
  o.vmax = 1.0;
  o.colorbar = false;
  const HeatmapLayout l = draw_heatmap(c, c.bounds(), values, 2, 2, o);
  BOOST_TEST(l.colorbar.w == 0);

  const Rect hl = l.cell(0, 0);
  BOOST_TEST((c.pixel(hl.x + 1, hl.y + hl.h / 2) == o.highlight_color));  // the border
  const Color fill00 = colormap(Colormap::Viridis, 0.1);
  BOOST_TEST(c.pixel(hl.x + hl.w / 4, hl.y + hl.h / 4) == fill00);
  // Text inks pixels that are neither the fill nor the border.
  int ink = 0;
  for (int y = hl.y; y < hl.bottom() - 1; ++y)
    for (int x = hl.x; x < hl.right() - 1; ++x) {
      const Color p = c.pixel(x, y);
      ink += !(p == fill00) && !(p == o.highlight_color);
    }
  BOOST_TEST(ink > 20);

  const Rect plain = l.cell(1, 1);  // visible, no text: a single colour
  const Color fill11 = colormap(Colormap::Viridis, 0.0);
  BOOST_TEST(count_colour(c, plain.inset(0, 0, 1, 1), fill11) == (plain.w - 1) * (plain.h - 1));

  const Rect hidden = l.cell(1, 0);  // masked: the mask colour, no text
  BOOST_TEST(count_colour(c, hidden.inset(0, 0, 1, 1), o.mask_color) == (hidden.w - 1) * (hidden.h - 1));
}

BOOST_AUTO_TEST_CASE(heatmap_value_text_and_diverging_range) {
  Canvas c(400, 200, colors::white);
  const std::vector<float> values{-2, 1, 0.5f, 0};
  HeatmapOptions o;
  o.value_format = "{:.1f}";
  o.colormap = Colormap::Diverging;
  const HeatmapLayout l = draw_heatmap(c, c.bounds(), values, 1, 4, o);
  BOOST_TEST(l.vmin == -2.0);  // symmetric about 0
  BOOST_TEST(l.vmax == 2.0);
  const Rect zero = l.cell(0, 3);
  BOOST_TEST((c.pixel(zero.x + 2, zero.y + 2) == colormap(Colormap::Diverging, 0.5)));
  BOOST_CHECK_THROW(draw_heatmap(c, c.bounds(), values, 2, 3, o), posgrad::Error);
  o.cell_text = {"a"};
  BOOST_CHECK_THROW(draw_heatmap(c, c.bounds(), values, 1, 4, o), posgrad::Error);
  o.cell_text.clear();
  o.value_format = "{:.1q}";
  BOOST_CHECK_THROW(draw_heatmap(c, c.bounds(), values, 1, 4, o), posgrad::Error);
}

BOOST_AUTO_TEST_CASE(ticks_are_round) {
  const std::vector<double> unit = nice_ticks(0, 1, 5);
  const std::vector<double> expected{0, 0.2, 0.4, 0.6, 0.8, 1};
  BOOST_REQUIRE(unit.size() == expected.size());
  for (size_t i = 0; i < unit.size(); ++i)
    BOOST_TEST(unit[i] == expected[i], boost::test_tools::tolerance(1e-12));
  const std::vector<double> t = nice_ticks(0.013, 2.9, 6);
  BOOST_REQUIRE(t.size() >= 3u);
  BOOST_TEST(t.front() >= 0.013);
  BOOST_TEST(t.back() <= 2.9);
  const double step = t[1] - t[0];
  BOOST_TEST(step == 0.5, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(nice_ticks(3, 3).size() == 1u);
  BOOST_TEST(format_tick(0.5, 0.5) == "0.5");
  BOOST_TEST(format_tick(0.25, 0.25) == "0.25");
  BOOST_TEST(format_tick(1000, 500) == "1000");
  BOOST_TEST(format_tick(0.0, 0.2) == "0.0");
  BOOST_TEST(format_tick(2e-6, 1e-6) == "2e-06");
  BOOST_TEST(threshold_mask({0.05f, 0.2f, 0.1f}, 0.1f) == std::vector<uint8_t>({0, 1, 0}));
  BOOST_TEST(format_cells({1.234f, -0.5f}, "{:.1f}") == std::vector<std::string>({"1.2", "-0.5"}));
}

BOOST_AUTO_TEST_CASE(line_plot_draws_series_inside_the_axes) {
  Canvas c(500, 350, colors::white);
  std::vector<double> xs, ys;
  for (int i = 0; i <= 100; ++i) xs.push_back(i), ys.push_back(std::exp(-i / 20.0));
  Series s{"loss", xs, ys, Color{200, 0, 0}};
  s.thickness = 3;
  LinePlotOptions o;
  o.title = "loss";
  o.x_label = "step";
  o.y_label = "loss";
  const PlotLayout l = draw_line_plot(c, c.bounds(), {s}, o);
  BOOST_REQUIRE(l.plot.w > 100);
  const int red = count_colour(c, l.plot, Color{200, 0, 0});
  BOOST_TEST(red > 200);
  BOOST_TEST(count_colour(c, c.bounds(), Color{200, 0, 0}) == red);  // nothing outside the axes
  // The first point is at the left edge, at y = 1.
  const int x0 = static_cast<int>(l.x_to_px(0)), y0 = static_cast<int>(l.y_to_px(1.0));
  BOOST_TEST(x0 == l.plot.x);
  int near = 0;
  for (int dy = -2; dy <= 2; ++dy)
    for (int dx = 0; dx <= 2; ++dx) near += c.pixel(x0 + dx, y0 + dy) == Color{200, 0, 0};
  BOOST_TEST(near > 0);

  // Log y with zeros and NaNs: no throw, the positive part is drawn.
  Canvas d(500, 350, colors::white);
  ys[10] = 0;
  ys[20] = std::nan("");
  o.log_y = true;
  const PlotLayout ll = draw_line_plot(d, d.bounds(), {s, Series{"other", {}, {1, 2, 3}, std::nullopt}}, o);
  BOOST_TEST(ll.log_y);
  BOOST_TEST(count_colour(d, ll.plot, Color{200, 0, 0}) > 100);
  BOOST_TEST(std::isnan(ll.y_to_px(0.0)));

  BOOST_CHECK_THROW(draw_line_plot(d, d.bounds(), {Series{"bad", {1, 2}, {1}, std::nullopt}}, o), posgrad::Error);
}

BOOST_AUTO_TEST_CASE(figure_grid) {
  Figure f(2, 3, 100, 80, "title");
  BOOST_TEST(f.canvas().width() == 300);
  BOOST_TEST(f.canvas().height() > 160);
  const Rect a = f.panel(0, 0), b = f.panel(1, 2), wide = f.panel(1, 0, 1, 3);
  BOOST_TEST(a.right() <= b.x);
  BOOST_TEST(a.bottom() <= b.y);
  BOOST_TEST(b.bottom() <= f.canvas().height());
  BOOST_TEST(wide.w > 2 * 100);
  BOOST_CHECK_THROW(f.panel(2, 0), posgrad::Error);
  BOOST_CHECK_THROW(f.panel(0, 2, 1, 2), posgrad::Error);
  BOOST_CHECK_THROW(Figure(0, 1, 10, 10), posgrad::Error);
}

BOOST_AUTO_TEST_CASE(count24_style_figure_saves) {
  TempDir tmp;
  const int rows = 8, cols = 10;
  std::vector<float> attention(rows * cols), values(rows * cols);
  std::vector<std::string> digits(rows * cols);
  std::vector<uint8_t> chosen(rows * cols);
  for (int i = 0; i < rows * cols; ++i) {
    const int d = (i * 7 + 3) % 10;
    digits[i] = std::to_string(d);
    chosen[i] = d == 2 || d == 4;
    attention[i] = chosen[i] ? 0.3f : 0.02f;
    values[i] = d == 2 ? 1.0f : d == 4 ? 2.0f : 0.0f;
  }
  Figure fig(2, 2, 480, 360, "count24");
  HeatmapOptions a;
  a.title = "attention";
  a.cell_text = digits;
  a.highlight = chosen;
  draw_heatmap(fig.canvas(), fig.panel(0, 0), attention, rows, cols, a);
  HeatmapOptions b;
  b.title = "values where attention > 0.1";
  b.value_format = "{:.1f}";
  b.mask = threshold_mask(attention, 0.1f);
  b.colormap = Colormap::Diverging;
  draw_heatmap(fig.canvas(), fig.panel(0, 1), values, rows, cols, b);
  LinePlotOptions lo;
  lo.log_y = true;
  draw_line_plot(fig.canvas(), fig.panel(1, 0, 1, 2), {Series{"loss", {}, {3, 1, 0.5, 0.1, 0.05}, std::nullopt}}, lo);
  const fs::path p = tmp.path() / "figures" / "count24.png";
  fig.save_png(p);
  BOOST_TEST(fs::file_size(p) > 1000u);
}

BOOST_AUTO_TEST_SUITE_END()
