// Plots drawn on a Canvas (cairo): heatmaps (optionally with text in the cells, highlighted cells,
// hidden cells, tick labels and a colour bar), line plots (axes with round tick values, labels,
// legend, optional log y) and a Figure: a grid of panels saved as one PNG plus its SVG twin
// (same folder and stem: figures/count24.png and figures/count24.svg), or as a PDF.
//
//   Figure fig(2, 2, 520, 380, "count24, step 1000");
//   HeatmapOptions a;  a.title = "attention";  a.cell_text = digits;  a.highlight = is_2_or_4;
//   draw_heatmap(fig.canvas(), fig.panel(0, 0), attention, batch, 10, a);
//   HeatmapOptions b;  b.title = "values where attention > 0.1";  b.value_format = "{:.2f}";
//   b.mask = threshold_mask(attention, 0.1f);  b.colormap = Colormap::Diverging;
//   draw_heatmap(fig.canvas(), fig.panel(0, 1), values, batch, 10, b);
//   draw_line_plot(fig.canvas(), fig.panel(1, 0, 1, 2), {{"train loss", steps, losses}}, {...});
//   fig.save_png(run.figure_path("attention"));   // attention.png and attention.svg
//
// Deliberately does not: scatter/bar/histogram plots, automatic layout across panels, or
// anything interactive. Everything is drawn inside the Rect it is given.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "apps/common/canvas.h"
#include "apps/common/color.h"

namespace posgrad::apps {

struct HeatmapOptions {
  std::string title;
  std::string x_label;  // under the column ticks
  std::string y_label;  // left of the row ticks, vertical
  // Tick labels; when empty and index_ticks, rows and columns are numbered from 0. Labels that
  // would overlap are thinned (every k-th shown).
  std::vector<std::string> col_labels, row_labels;
  bool index_ticks = true;

  Colormap colormap = Colormap::Viridis;
  // Colour range; unset: the data range over the visible cells (Diverging: symmetric about 0).
  std::optional<double> vmin, vmax;

  // Text in the cells, row-major rows*cols (empty strings are skipped). When empty and
  // value_format is set (an fmt format such as "{:.2f}"), each cell shows its value.
  std::vector<std::string> cell_text;
  std::string value_format;
  double cell_font_size = 0;  // 0: the largest that fits the cells (at most 1.25 x font_size)

  // Cells to point at, row-major rows*cols (non-zero = highlighted): a border in
  // highlight_color and bold text.
  std::vector<uint8_t> highlight;
  Color highlight_color = colors::red;

  // Visible cells, row-major rows*cols (zero = hidden: drawn in mask_color, no text). Empty:
  // all visible.
  std::vector<uint8_t> mask;
  Color mask_color = colors::very_light_gray;

  bool colorbar = true;
  std::string colorbar_label;
  bool cell_borders = true;  // thin white lines between cells
  double font_size = 13;     // title, labels and ticks (units: pixels in the PNG)
};

struct Series {
  std::string name;         // shown in the legend (an unnamed single series has no legend)
  std::vector<double> xs;   // empty: 0, 1, 2, ...
  std::vector<double> ys;   // NaN / inf break the line; in log-y, values <= 0 too
  std::optional<Color> color = std::nullopt;  // unset: palette(index of the series)
  double thickness = 2.0;
  double marker_radius = 0;  // > 0: a dot at each point
  bool dashed = false;
};

struct LinePlotOptions {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;  // log10 axes; values <= 0 are skipped on them
  bool legend = true;
  bool grid = true;
  std::optional<double> x_min, x_max, y_min, y_max;  // unset: the data range (y padded by 5%)
  double font_size = 13;
};

// Where a heatmap was drawn, to annotate it further.
struct HeatmapLayout {
  Rect grid;              // all cells (empty when the area was too small to draw)
  int cell_w = 0, cell_h = 0;
  Rect colorbar;          // empty without a colour bar
  double vmin = 0, vmax = 1;  // the colour range used
  Rect cell(int row, int col) const { return {grid.x + col * cell_w, grid.y + row * cell_h, cell_w, cell_h}; }
};

// Where a line plot was drawn, and its data-to-pixel mapping (for extra marks).
struct PlotLayout {
  Rect plot;  // the axes box
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;  // axis ranges (log10 units on a log axis)
  bool log_x = false, log_y = false;
  double x_to_px(double x) const;  // x and y in data units (NaN for values <= 0 on a log axis)
  double y_to_px(double y) const;
};

// Draws a rows x cols grid of `values` (row-major) inside `area`. Throws when the sizes of
// values, cell_text, highlight or mask do not match rows*cols.
HeatmapLayout draw_heatmap(Canvas& canvas, const Rect& area, const std::vector<float>& values,
                           int rows, int cols, const HeatmapOptions& options = {});

PlotLayout draw_line_plot(Canvas& canvas, const Rect& area, const std::vector<Series>& series,
                          const LinePlotOptions& options = {});

// Draws a title centred at the top of `area`; returns the area left below it.
Rect draw_title(Canvas& canvas, const Rect& area, const std::string& title, double size = 13);

// A grid of panels in one image, with an optional title above them.
class Figure {
 public:
  Figure(int rows, int cols, int panel_width, int panel_height, const std::string& title = "",
         Color background = colors::white);
  Canvas& canvas() { return canvas_; }
  const Canvas& canvas() const { return canvas_; }
  // The area of panel (row, col), spanning row_span x col_span cells of the grid.
  Rect panel(int row, int col, int row_span = 1, int col_span = 1) const;
  // Writes `path` (which must end in .png) and its vector twin with the same stem and ".svg"
  // beside it, each atomically; creates the folder.
  void save_png(const std::filesystem::path& path) const;
  // Writes a PDF (vector, for LaTeX) at `path` as given.
  void save_pdf(const std::filesystem::path& path) const { canvas_.save(path, ImageFormat::Pdf); }

 private:
  int rows_, cols_, panel_w_, panel_h_, top_;
  Canvas canvas_;
};

// Round tick values covering [lo, hi] (1, 2, 5 x 10^k steps), about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target = 6);
// A tick label with just enough decimals for the step between ticks.
std::string format_tick(double value, double step);

// 1 where values[i] > threshold, else 0 (a mask or highlight for draw_heatmap).
std::vector<uint8_t> threshold_mask(const std::vector<float>& values, float threshold);
// Each value formatted with an fmt format such as "{:.2f}" or "{:.0f}".
std::vector<std::string> format_cells(const std::vector<float>& values, const std::string& format);

}  // namespace posgrad::apps
