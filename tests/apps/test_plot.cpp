// Plots: heatmap cells take the colour map's colour, hidden cells the mask colour, highlighted
// cells a border, cell text inks pixels; tick values are round; line plots draw their series
// (also on log axes spanning decades, with a clear error for a non-positive log range); a title
// wider than its figure is set smaller to fit; a Figure lays panels out in a grid and saves a PNG
// whose pixels read back right, its SVG twin and a PDF.
// Pixels are checked on the decoded PNG.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "apps/common/plot.h"
#include "nn/atomic_file.h"
#include "tensor/error.h"
#include "tests/apps/png_pixels.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::PngPixels;
using posgrad::test::TempDir;
using namespace posgrad::apps;

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
  const PngPixels p = PngPixels::render(c);
  for (int r = 0; r < 2; ++r)
    for (int col = 0; col < 3; ++col) {
      const Rect cell = l.cell(r, col);
      const Color expected = colormap(Colormap::Viridis, (r * 3 + col) / 5.0);
      BOOST_TEST(PngPixels::close(p.at(cell.x + cell.w / 2, cell.y + cell.h / 2), expected, 1), r << "," << col);
      BOOST_TEST(PngPixels::close(p.at(cell.x + 2, cell.y + 2), expected, 1));
    }
  // The colour bar: high values on top.
  BOOST_REQUIRE(l.colorbar.w > 0);
  BOOST_TEST(PngPixels::close(p.at(l.colorbar.x + 5, l.colorbar.y + 2), colormap(Colormap::Viridis, 1.0), 12));
  BOOST_TEST(PngPixels::close(p.at(l.colorbar.x + 5, l.colorbar.bottom() - 3), colormap(Colormap::Viridis, 0.0), 12));
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
  const PngPixels p = PngPixels::render(c);

  const Rect hl = l.cell(0, 0);
  BOOST_TEST((p.at(hl.x + 1, hl.y + hl.h / 2) == o.highlight_color));  // the border
  const Color fill00 = colormap(Colormap::Viridis, 0.1);
  BOOST_TEST(PngPixels::close(p.at(hl.x + hl.w / 4, hl.y + hl.h / 4), fill00, 1));
  // Text inks pixels that are neither the fill nor the border.
  const Rect inside = hl.inset(0, 0, 1, 1);
  const int area = inside.w * inside.h;
  BOOST_TEST(area - p.count(inside, fill00, 1) - p.count(inside, o.highlight_color, 1) > 20);

  const Rect plain = l.cell(1, 1).inset(0, 0, 1, 1);  // visible, no text: a single colour
  BOOST_TEST(p.count(plain, colormap(Colormap::Viridis, 0.0), 1) == plain.w * plain.h);
  const Rect hidden = l.cell(1, 0).inset(0, 0, 1, 1);  // masked: the mask colour, no text
  BOOST_TEST(p.count(hidden, o.mask_color) == hidden.w * hidden.h);
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
  const PngPixels p = PngPixels::render(c);
  BOOST_TEST(PngPixels::close(p.at(zero.x + 2, zero.y + 2), colormap(Colormap::Diverging, 0.5), 1));
  // Each cell shows its value: ink that is not the fill.
  const Rect minus_two = l.cell(0, 0).inset(0, 0, 1, 1);
  BOOST_TEST(p.count(minus_two, colormap(Colormap::Diverging, 0.0), 1) < minus_two.w * minus_two.h - 20);
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
  const Color red{200, 0, 0};
  std::vector<double> xs, ys;
  for (int i = 0; i <= 100; ++i) xs.push_back(i), ys.push_back(std::exp(-i / 20.0));
  Series s{"loss", xs, ys, red};
  s.thickness = 3;
  LinePlotOptions o;
  o.title = "loss";
  o.x_label = "step";
  o.y_label = "loss";
  const PlotLayout l = draw_line_plot(c, c.bounds(), {s}, o);
  BOOST_REQUIRE(l.plot.w > 100);
  const PngPixels p = PngPixels::render(c);
  const int in_axes = p.count(l.plot, red);
  BOOST_TEST(in_axes > 200);
  BOOST_TEST(p.count(c.bounds(), red) == in_axes);  // nothing outside the axes
  // The first point is at the left edge, at y = 1.
  const int x0 = static_cast<int>(l.x_to_px(0)), y0 = static_cast<int>(l.y_to_px(1.0));
  BOOST_TEST(x0 == l.plot.x);
  BOOST_TEST(p.count({x0, y0 - 2, 3, 5}, red) > 0);
}

BOOST_AUTO_TEST_CASE(log_axis_spans_decades_and_skips_non_positive_values) {
  Canvas c(500, 350, colors::white);
  const Color red{200, 0, 0};
  std::vector<double> ys;
  for (int i = 0; i <= 90; ++i) ys.push_back(std::pow(10.0, 3.0 - i / 10.0));  // 1e3 .. 1e-6
  ys[10] = 0;             // breaks the line, as NaN does
  ys[20] = -1;
  ys[30] = std::nan("");
  Series s{"loss", {}, ys, red};
  s.thickness = 3;
  LinePlotOptions o;
  o.log_y = true;
  const PlotLayout l = draw_line_plot(c, c.bounds(), {s, Series{"other", {}, {1, 2, 3}, std::nullopt}}, o);
  BOOST_TEST(l.log_y);
  BOOST_TEST(l.y_lo <= -6.0);  // log10 units
  BOOST_TEST(l.y_hi >= 3.0);
  BOOST_TEST(std::isnan(l.y_to_px(0.0)));
  BOOST_TEST(l.y_to_px(1e-6) > l.y_to_px(1e3));
  BOOST_TEST(l.y_to_px(1.0) - l.y_to_px(1e3) == l.y_to_px(1e-3) - l.y_to_px(1.0),  // even decades
             boost::test_tools::tolerance(1e-9));
  const PngPixels p = PngPixels::render(c);
  BOOST_TEST(p.count(l.plot, red) > 200);
  // 1e3 and 1e-6 are both drawn, at the ends of the axis.
  BOOST_TEST(p.count({l.plot.x, static_cast<int>(l.y_to_px(1e3)) - 3, 6, 7}, red) > 0);
  BOOST_TEST(p.count({static_cast<int>(l.x_to_px(90)) - 5, static_cast<int>(l.y_to_px(1e-6)) - 3, 6, 7}, red) > 0);

  o.y_min = 0.0;  // a log axis cannot start at 0
  try {
    draw_line_plot(c, c.bounds(), {s}, o);
    BOOST_ERROR("y_min = 0 on a log axis did not throw");
  } catch (const posgrad::Error& e) {
    BOOST_TEST(std::string(e.what()).find("log y axis needs y_min and y_max > 0") != std::string::npos, e.what());
  }
  o.y_min.reset();
  BOOST_CHECK_THROW(draw_line_plot(c, c.bounds(), {Series{"bad", {1, 2}, {1}, std::nullopt}}, o), posgrad::Error);
}

BOOST_AUTO_TEST_CASE(log_x_axis_spaces_doublings_evenly) {
  // A quantity against a span limit S = 64 .. 1024: each doubling is the same width on a log x axis.
  Canvas c(500, 350, colors::white);
  const Color blue{0, 0, 200};
  const std::vector<double> spans{64, 128, 256, 512, 1024, 0};  // 0 cannot be placed: skipped
  Series s{"bpc", spans, {2.4, 2.3, 2.25, 2.2, 2.18, 2.0}, blue};
  s.marker_radius = 3;
  LinePlotOptions o;
  o.log_x = true;
  const PlotLayout l = draw_line_plot(c, c.bounds(), {s}, o);
  BOOST_TEST(l.log_x);
  BOOST_TEST(!l.log_y);
  BOOST_TEST(l.x_lo <= std::log10(64.0));
  BOOST_TEST(l.x_hi >= std::log10(1024.0));
  BOOST_TEST(std::isnan(l.x_to_px(0.0)));
  BOOST_TEST(l.x_to_px(128) - l.x_to_px(64) == l.x_to_px(1024) - l.x_to_px(512), boost::test_tools::tolerance(1e-9));
  BOOST_TEST(l.y_lo > 2.1);  // the skipped point (y = 2.0) does not widen the y range
  const PngPixels p = PngPixels::render(c);
  for (double x : {64.0, 1024.0})  // both ends drawn
    BOOST_TEST(p.count({static_cast<int>(l.x_to_px(x)) - 3, l.plot.y, 7, l.plot.h}, blue) > 0);
  o.x_min = -1.0;
  BOOST_CHECK_EXCEPTION(draw_line_plot(c, c.bounds(), {s}, o), posgrad::Error, [](const posgrad::Error& e) {
    return std::string(e.what()).find("log x axis needs x_min and x_max > 0") != std::string::npos;
  });
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

BOOST_AUTO_TEST_CASE(figure_pixels_read_back_and_vector_twins) {
  TempDir tmp;
  Figure fig(1, 1, 400, 300, "known values");
  const std::vector<float> values{0.0f, 0.25f, 0.5f, 1.0f, 2.0f, 4.0f};
  HeatmapOptions o;
  o.colormap = Colormap::Diverging;
  o.vmin = -4.0;
  o.vmax = 4.0;
  const HeatmapLayout l = draw_heatmap(fig.canvas(), fig.panel(0, 0), values, 2, 3, o);
  const fs::path png = tmp.path() / "figures" / "known.png";
  fig.save_png(png);
  const PngPixels p = PngPixels::from_file(png);
  BOOST_TEST(p.width() == 400);
  BOOST_TEST(p.height() == fig.canvas().height());
  for (int r = 0; r < 2; ++r)
    for (int col = 0; col < 3; ++col) {
      const Rect cell = l.cell(r, col);
      const Color expected = colormap(Colormap::Diverging, (values[r * 3 + col] + 4.0) / 8.0);
      BOOST_TEST(PngPixels::close(p.at(cell.x + cell.w / 2, cell.y + cell.h / 2), expected, 2), r << "," << col);
    }
  const std::string svg = posgrad::read_file_bytes(tmp.path() / "figures" / "known.svg");
  BOOST_TEST(svg.rfind("<?xml", 0) == 0u);
  BOOST_TEST(svg.find("<svg") != std::string::npos);
  BOOST_TEST(svg.find("</svg>") != std::string::npos);
  fig.save_pdf(tmp.path() / "paper" / "known.pdf");
  BOOST_TEST(posgrad::read_file_bytes(tmp.path() / "paper" / "known.pdf").rfind("%PDF-", 0) == 0u);
  BOOST_CHECK_THROW(fig.save_png(tmp.path() / "known.svg"), posgrad::Error);  // would clobber its twin
}

BOOST_AUTO_TEST_CASE(a_long_title_is_set_smaller_to_fit) {
  TempDir tmp;
  const std::string title = "2-D + span t=0.1 seed 9188: query (white) attention, span box (red), a title far wider than the figure";
  Figure fig(1, 1, 160, 60, title);
  BOOST_TEST(fig.canvas().text_width(title, 13, true) > 2 * 160);  // set at its size it would overflow
  const fs::path png = tmp.path() / "long.png";
  fig.save_png(png);
  const PngPixels p = PngPixels::from_file(png);
  const int band = fig.panel(0, 0).y;  // the title's rows
  int inked = 0;
  for (int y = 0; y < band; ++y) {
    BOOST_TEST(PngPixels::close(p.at(0, y), colors::white, 0), "row " << y);
    BOOST_TEST(PngPixels::close(p.at(p.width() - 1, y), colors::white, 0), "row " << y);
    for (int x = 0; x < p.width(); ++x) inked += !PngPixels::close(p.at(x, y), colors::white, 40);
  }
  BOOST_TEST(inked > 20);  // the title is still drawn
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
  BOOST_TEST(fs::file_size(tmp.path() / "figures" / "count24.svg") > 1000u);
}

BOOST_AUTO_TEST_SUITE_END()
