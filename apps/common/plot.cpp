// Plots: see plot.h.
#include "apps/common/plot.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "tensor/error.h"

namespace posgrad::apps {

namespace {

constexpr int kPad = 6;  // gap between a label and what it labels

bool finite(double v) { return std::isfinite(v); }

std::string format_value(const std::string& format, double v) {
  try {
    return fmt::vformat(format, fmt::make_format_args(v));
  } catch (const fmt::format_error& e) {
    fail("plot: bad value format '{}': {}", format, e.what());
  }
}

// Shows every k-th label so neighbours do not overlap: `extent` is each label's size along the
// axis, `spacing` the distance between neighbouring ticks.
// Steps are round (1, 2, 5, 10, 20, 50, ...) so the shown indices are easy to read.
int thinning_step(double extent, double spacing, double gap) {
  if (spacing <= 0) return 1;
  const int needed = std::max(1, static_cast<int>(std::ceil((extent + gap) / spacing)));
  for (int base = 1;; base *= 10)
    for (int m : {1, 2, 5})
      if (m * base >= needed) return m * base;
}

int max_width(const Canvas& canvas, const std::vector<std::string>& texts, double size) {
  double w = 0;
  for (const std::string& t : texts) w = std::max(w, canvas.text_width(t, size));
  return static_cast<int>(std::ceil(w));
}

double crisp(double v) { return std::floor(v) + 0.5; }  // a 1-unit line on a pixel row

}  // namespace

// ------------------------------------------------------------------ ticks

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!finite(lo) || !finite(hi)) return {};
  if (lo > hi) std::swap(lo, hi);
  if (lo == hi) return {lo};
  target = std::max(2, target);
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * mag;
    if (raw <= step) break;
  }
  std::vector<double> ticks;
  const double first = std::ceil(lo / step - 1e-9);
  for (double k = first; k * step <= hi + step * 1e-9 && ticks.size() < 1000; k += 1)
    ticks.push_back(k == 0 ? 0.0 : k * step);
  return ticks;
}

std::string format_tick(double value, double step) {
  if (!finite(value)) return fmt::format("{}", value);
  const double a = std::abs(value);
  if (value != 0 && (a >= 1e6 || a < 1e-4)) return fmt::format("{:.3g}", value);
  int decimals = 0;
  if (step > 0 && finite(step)) decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), 0, 6);
  // 2.5-steps need one more decimal than their magnitude suggests.
  if (step > 0) {
    const double scaled = step * std::pow(10.0, decimals);
    if (std::abs(scaled - std::round(scaled)) > 1e-6) ++decimals;
  }
  std::string s = fmt::format("{:.{}f}", value, decimals);
  if (s == "-0" || s.find_first_not_of("-0.") == std::string::npos) s = s[0] == '-' ? s.substr(1) : s;
  return s;
}

std::vector<uint8_t> threshold_mask(const std::vector<float>& values, float threshold) {
  std::vector<uint8_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i] > threshold ? 1 : 0;
  return out;
}

std::vector<std::string> format_cells(const std::vector<float>& values, const std::string& format) {
  std::vector<std::string> out;
  out.reserve(values.size());
  for (float v : values) out.push_back(format_value(format, v));
  return out;
}

Rect draw_title(Canvas& canvas, const Rect& area, const std::string& title, double size) {
  if (title.empty()) return area;
  TextStyle st;
  st.size = size;
  st.bold = true;
  st.align = Align::Center;
  // A title wider than its area is set smaller until it fits (its line keeps the height `size`
  // gave it, so the layout below does not move).
  const double room = area.w - 2.0 * kPad, width = canvas.text_width(title, size, true);
  if (width > room && room > 0) st.size = size * room / width;
  canvas.text(area.x + area.w / 2.0, area.y + kPad, title, st);
  return area.inset(0, static_cast<int>(std::ceil(size)) + 2 * kPad, 0, 0);
}

// ------------------------------------------------------------------ heatmap

HeatmapLayout draw_heatmap(Canvas& canvas, const Rect& area, const std::vector<float>& values,
                           int rows, int cols, const HeatmapOptions& o) {
  HeatmapLayout layout;
  POSGRAD_CHECK(rows > 0 && cols > 0, "draw_heatmap: rows and cols must be positive, got {}x{}",
                rows, cols);
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  POSGRAD_CHECK(values.size() == n, "draw_heatmap: {} values for a {}x{} grid (need {})",
                values.size(), rows, cols, n);
  POSGRAD_CHECK(o.cell_text.empty() || o.cell_text.size() == n,
                "draw_heatmap: {} cell texts for a {}x{} grid (need {} or none)", o.cell_text.size(),
                rows, cols, n);
  POSGRAD_CHECK(o.highlight.empty() || o.highlight.size() == n,
                "draw_heatmap: highlight has {} entries for a {}x{} grid (need {} or none)",
                o.highlight.size(), rows, cols, n);
  POSGRAD_CHECK(o.mask.empty() || o.mask.size() == n,
                "draw_heatmap: mask has {} entries for a {}x{} grid (need {} or none)",
                o.mask.size(), rows, cols, n);
  POSGRAD_CHECK(o.font_size > 0, "draw_heatmap: font_size must be positive, got {}", o.font_size);
  const double fs = o.font_size;
  const int line_h = static_cast<int>(std::ceil(fs));  // capitals plus descenders
  auto visible = [&](size_t i) { return o.mask.empty() || o.mask[i] != 0; };

  // Colour range over the visible, finite cells.
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (size_t i = 0; i < n; ++i)
    if (visible(i) && finite(values[i])) {
      lo = std::min(lo, static_cast<double>(values[i]));
      hi = std::max(hi, static_cast<double>(values[i]));
    }
  if (!finite(lo)) lo = 0, hi = 1;
  if (o.colormap == Colormap::Diverging && !o.vmin && !o.vmax) {
    const double m = std::max(std::abs(lo), std::abs(hi));
    lo = -m, hi = m;
  }
  if (o.vmin) lo = *o.vmin;
  if (o.vmax) hi = *o.vmax;
  if (hi == lo) hi = lo + 1;  // constant data: everything at the low end of the map
  layout.vmin = lo, layout.vmax = hi;

  // Tick labels.
  std::vector<std::string> row_labels = o.row_labels, col_labels = o.col_labels;
  if (row_labels.empty() && o.index_ticks)
    for (int r = 0; r < rows; ++r) row_labels.push_back(std::to_string(r));
  if (col_labels.empty() && o.index_ticks)
    for (int c = 0; c < cols; ++c) col_labels.push_back(std::to_string(c));
  POSGRAD_CHECK(row_labels.empty() || static_cast<int>(row_labels.size()) == rows,
                "draw_heatmap: {} row labels for {} rows", row_labels.size(), rows);
  POSGRAD_CHECK(col_labels.empty() || static_cast<int>(col_labels.size()) == cols,
                "draw_heatmap: {} column labels for {} columns", col_labels.size(), cols);

  // Layout: title | y label, row ticks, grid, colour bar | column ticks, x label.
  const Rect r = draw_title(canvas, area, o.title, 1.1 * fs);
  const int left = (o.y_label.empty() ? 0 : line_h + kPad) +
                   (row_labels.empty() ? 0 : max_width(canvas, row_labels, fs) + kPad) + 2;
  const int bottom = (col_labels.empty() ? 0 : line_h + kPad) + (o.x_label.empty() ? 0 : line_h + kPad) + kPad;
  std::vector<double> bar_ticks;
  std::vector<std::string> bar_labels;
  int right = kPad;
  constexpr int kBarWidth = 14, kTickLength = 4;
  if (o.colorbar) {
    bar_ticks = nice_ticks(lo, hi, 5);
    const double step = bar_ticks.size() > 1 ? bar_ticks[1] - bar_ticks[0] : 0.0;
    for (double t : bar_ticks) bar_labels.push_back(format_tick(t, step));
    right = 2 * kPad + kBarWidth + kTickLength + 2 + max_width(canvas, bar_labels, fs) + kPad +
            (o.colorbar_label.empty() ? 0 : line_h + kPad);
  }
  const Rect grid_area = r.inset(left, kPad, right, bottom);
  if (grid_area.w < cols || grid_area.h < rows) return layout;  // no room to draw anything useful
  const int cw = grid_area.w / cols, ch = grid_area.h / rows;
  const Rect grid{grid_area.x, grid_area.y, cw * cols, ch * rows};
  layout.grid = grid, layout.cell_w = cw, layout.cell_h = ch;

  // Cell texts: one size for all (the largest at which two thirds of them fit, so one long
  // "-0.00" does not shrink every number); a text that does not fit it is drawn smaller, or not
  // at all below 6 units.
  std::vector<std::string> texts = o.cell_text;
  if (texts.empty() && !o.value_format.empty()) {
    texts.resize(n);
    for (size_t i = 0; i < n; ++i)
      if (visible(i)) texts[i] = format_value(o.value_format, values[i]);
  }
  const bool any_highlight = std::any_of(o.highlight.begin(), o.highlight.end(), [](uint8_t h) { return h != 0; });
  const double border = std::max(2, std::min(cw, ch) / 12);
  const double margin = any_highlight ? 2 * border + 6 : 6;  // at least 3 units of room each side
  const double max_size = o.cell_font_size > 0 ? o.cell_font_size : 1.25 * fs;
  std::vector<double> fit(texts.size(), 0.0);  // the largest size each text may take
  std::vector<double> shown;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (!visible(i) || texts[i].empty()) continue;
    const double width_per_unit = canvas.text_width(texts[i], 10, any_highlight) / 10;
    fit[i] = o.cell_font_size > 0 ? max_size
                                  : std::min({max_size, (ch - margin) / Canvas::cap_height(1.0),
                                              (cw - margin) / std::max(width_per_unit, 1e-9)});
    shown.push_back(fit[i]);
  }
  std::sort(shown.begin(), shown.end(), std::greater<>());
  const double common = shown.empty() ? 0 : shown[(shown.size() * 2 + 2) / 3 - 1];

  const int gap = o.cell_borders && cw >= 6 && ch >= 6 ? 1 : 0;
  for (int ri = 0; ri < rows; ++ri)
    for (int ci = 0; ci < cols; ++ci) {
      const size_t i = static_cast<size_t>(ri) * cols + ci;
      const Rect cell{grid.x + ci * cw, grid.y + ri * ch, cw - gap, ch - gap};
      if (!visible(i)) {
        canvas.fill_rect(cell, o.mask_color);
        continue;
      }
      const Color fill = finite(values[i]) ? colormap(o.colormap, (values[i] - lo) / (hi - lo)) : colors::gray;
      canvas.fill_rect(cell, fill);
      const bool hl = !o.highlight.empty() && o.highlight[i] != 0;
      if (hl) canvas.stroke_rect(cell, o.highlight_color, border);
      if (texts.empty() || std::min(common, fit[i]) < 6) continue;
      TextStyle st;
      st.size = std::min(common, fit[i]);
      st.align = Align::Center;
      st.valign = VAlign::Middle;
      st.bold = hl;
      st.color = luminance(fill) > 0.35 ? colors::black : colors::white;
      canvas.text(cell.x + cell.w / 2.0, cell.y + cell.h / 2.0, texts[i], st);
    }

  // Tick labels, thinned when they would overlap.
  TextStyle tick;
  tick.size = fs;
  tick.color = colors::dark_gray;
  if (!row_labels.empty()) {
    tick.align = Align::Right;
    tick.valign = VAlign::Middle;
    for (int ri = 0; ri < rows; ri += thinning_step(Canvas::cap_height(fs), ch, 4))
      canvas.text(grid.x - kPad, grid.y + ri * ch + ch / 2.0, row_labels[ri], tick);
  }
  if (!col_labels.empty()) {
    tick.align = Align::Center;
    tick.valign = VAlign::Top;
    for (int ci = 0; ci < cols; ci += thinning_step(max_width(canvas, col_labels, fs), cw, 8))
      canvas.text(grid.x + ci * cw + cw / 2.0, grid.bottom() + kPad, col_labels[ci], tick);
  }
  TextStyle axis;
  axis.size = fs;
  axis.align = Align::Center;
  if (!o.x_label.empty())
    canvas.text(grid.x + grid.w / 2.0, grid.bottom() + kPad + (col_labels.empty() ? 0 : line_h + kPad), o.x_label, axis);
  axis.vertical = true;
  if (!o.y_label.empty()) canvas.text(r.x + 2, grid.y + grid.h / 2.0, o.y_label, axis);

  // Colour bar: the map from hi (top) to lo (bottom), with ticks.
  if (o.colorbar) {
    const Rect bar{grid.right() + 2 * kPad, grid.y, kBarWidth, grid.h};
    layout.colorbar = bar;
    std::vector<Color> stops;
    for (int k = 0; k <= 32; ++k) stops.push_back(colormap(o.colormap, k / 32.0));
    canvas.vertical_gradient(bar, stops);
    canvas.stroke_rect(bar, colors::gray, 1);
    tick.align = Align::Left;
    tick.valign = VAlign::Middle;
    for (size_t k = 0; k < bar_ticks.size(); ++k) {
      const double y = crisp(bar.y + (1.0 - (bar_ticks[k] - lo) / (hi - lo)) * (bar.h - 1));
      canvas.line(bar.right(), y, bar.right() + kTickLength, y, colors::dark_gray);
      canvas.text(bar.right() + kTickLength + 2, y, bar_labels[k], tick);
    }
    axis.valign = VAlign::Bottom;
    if (!o.colorbar_label.empty())
      canvas.text(r.right() - kPad - 0.25 * fs, bar.y + bar.h / 2.0, o.colorbar_label, axis);
  }
  return layout;
}

// ------------------------------------------------------------------ line plot

namespace {

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;  // in axis units (log10 of the value on log axes)
  std::vector<std::string> labels;
  std::vector<double> minor;  // log axes: 2..9 x 10^k
};

std::string format_power_of_ten(int k) {
  if (k >= 0 && k <= 4) return fmt::format("{}", static_cast<long long>(std::llround(std::pow(10.0, k))));
  if (k < 0 && k >= -3) return format_tick(std::pow(10.0, k), std::pow(10.0, k));
  return fmt::format("1e{}", k);
}

// Linear axis over [lo, hi] with `pad` fraction of padding when not fixed.
Axis linear_axis(double lo, double hi, bool pad_lo, bool pad_hi) {
  Axis a;
  if (!finite(lo) || !finite(hi)) lo = 0, hi = 1;
  if (lo == hi) {
    const double d = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= d, hi += d;
  } else {
    const double d = (hi - lo) * 0.05;
    if (pad_lo) lo -= d;
    if (pad_hi) hi += d;
  }
  a.lo = lo, a.hi = hi;
  a.ticks = nice_ticks(lo, hi, 6);
  const double step = a.ticks.size() > 1 ? a.ticks[1] - a.ticks[0] : 0.0;
  for (double t : a.ticks) a.labels.push_back(format_tick(t, step));
  return a;
}

// Log axis: positions are log10(value); [lo, hi] are given as values > 0.
Axis log_axis(double lo, double hi, bool pad_lo, bool pad_hi) {
  Axis a;
  a.log = true;
  if (!(lo > 0) || !finite(lo)) lo = 1e-3;
  if (!(hi > 0) || !finite(hi)) hi = lo * 10;
  double llo = std::log10(lo), lhi = std::log10(hi);
  if (llo == lhi) llo -= 0.5, lhi += 0.5;
  const double d = (lhi - llo) * 0.05;
  if (pad_lo) llo -= d;
  if (pad_hi) lhi += d;
  a.lo = llo, a.hi = lhi;
  const int k0 = static_cast<int>(std::ceil(llo - 1e-9)), k1 = static_cast<int>(std::floor(lhi + 1e-9));
  if (k1 - k0 >= 1) {
    const int every = std::max(1, (k1 - k0 + 7) / 8);
    for (int k = k0; k <= k1; ++k)
      if ((k - k0) % every == 0) {
        a.ticks.push_back(k);
        a.labels.push_back(format_power_of_ten(k));
      }
    // With few decades, also label 2x and 5x so the axis has enough numbers on it.
    const bool label_25 = k1 - k0 < 2;
    if (k1 - k0 <= 6)
      for (int k = k0 - 1; k <= k1; ++k)
        for (int m = 2; m <= 9; ++m) {
          const double p = k + std::log10(m);
          if (!(p > llo && p < lhi)) continue;
          if (label_25 && (m == 2 || m == 5)) {
            a.ticks.push_back(p);
            a.labels.push_back(format_tick(m * std::pow(10.0, k), std::pow(10.0, k)));
          } else {
            a.minor.push_back(p);
          }
        }
    if (label_25) {
      std::vector<std::pair<double, std::string>> sorted;
      for (size_t i = 0; i < a.ticks.size(); ++i) sorted.emplace_back(a.ticks[i], a.labels[i]);
      std::sort(sorted.begin(), sorted.end());
      for (size_t i = 0; i < sorted.size(); ++i) std::tie(a.ticks[i], a.labels[i]) = sorted[i];
    }
  } else {
    // Less than a decade: round linear values placed on the log scale.
    const std::vector<double> lin = nice_ticks(std::pow(10.0, llo), std::pow(10.0, lhi), 5);
    const double step = lin.size() > 1 ? lin[1] - lin[0] : 0.0;
    for (double v : lin)
      if (v > 0) {
        a.ticks.push_back(std::log10(v));
        a.labels.push_back(format_tick(v, step));
      }
  }
  return a;
}

}  // namespace

double PlotLayout::x_to_px(double x) const {
  if (log_x) x = x > 0 ? std::log10(x) : std::numeric_limits<double>::quiet_NaN();
  return plot.x + (x - x_lo) / (x_hi - x_lo) * (plot.w - 1);
}

double PlotLayout::y_to_px(double y) const {
  if (log_y) y = y > 0 ? std::log10(y) : std::numeric_limits<double>::quiet_NaN();
  return plot.y + (y_hi - y) / (y_hi - y_lo) * (plot.h - 1);
}

PlotLayout draw_line_plot(Canvas& canvas, const Rect& area, const std::vector<Series>& series,
                          const LinePlotOptions& o) {
  POSGRAD_CHECK(o.font_size > 0, "draw_line_plot: font_size must be positive, got {}", o.font_size);
  POSGRAD_CHECK(!o.log_y || ((!o.y_min || *o.y_min > 0) && (!o.y_max || *o.y_max > 0)),
                "draw_line_plot: a log y axis needs y_min and y_max > 0, got y_min {} and y_max {}",
                o.y_min.value_or(1.0), o.y_max.value_or(1.0));
  POSGRAD_CHECK(!o.log_x || ((!o.x_min || *o.x_min > 0) && (!o.x_max || *o.x_max > 0)),
                "draw_line_plot: a log x axis needs x_min and x_max > 0, got x_min {} and x_max {}",
                o.x_min.value_or(1.0), o.x_max.value_or(1.0));
  const double fs = o.font_size;
  const int line_h = static_cast<int>(std::ceil(fs));

  // Data ranges.
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
  for (const Series& s : series) {
    POSGRAD_CHECK(s.xs.empty() || s.xs.size() == s.ys.size(),
                  "draw_line_plot: series '{}' has {} xs but {} ys", s.name, s.xs.size(), s.ys.size());
    for (size_t i = 0; i < s.ys.size(); ++i) {
      const double x = s.xs.empty() ? static_cast<double>(i) : s.xs[i], y = s.ys[i];
      if (!finite(x) || !finite(y) || (o.log_x && !(x > 0)) || (o.log_y && !(y > 0))) continue;
      xlo = std::min(xlo, x), xhi = std::max(xhi, x);
      ylo = std::min(ylo, y), yhi = std::max(yhi, y);
    }
  }
  if (!finite(xlo)) xlo = o.log_x ? 1 : 0, xhi = o.log_x ? 10 : 1;
  if (!finite(ylo)) ylo = o.log_y ? 0.1 : 0, yhi = o.log_y ? 10 : 1;
  if (o.x_min) xlo = *o.x_min;
  if (o.x_max) xhi = *o.x_max;
  if (o.y_min) ylo = *o.y_min;
  if (o.y_max) yhi = *o.y_max;
  // A linear x axis ends at the data (epochs, steps); a log one, for a few values of a setting
  // marked by dots, is padded so the end dots are drawn whole. A single x value is padded anyway.
  const Axis xa = o.log_x ? log_axis(xlo, xhi, !o.x_min, !o.x_max) : linear_axis(xlo, xhi, false, false);
  const Axis ya = o.log_y ? log_axis(ylo, yhi, !o.y_min, !o.y_max) : linear_axis(ylo, yhi, !o.y_min, !o.y_max);

  // Layout: title | y label, y ticks, plot | x ticks, x label.
  const Rect r = draw_title(canvas, area, o.title, 1.1 * fs);
  constexpr int kTickLength = 4;
  const int left = (o.y_label.empty() ? 0 : line_h + kPad) + max_width(canvas, ya.labels, fs) + kPad + kTickLength + 2;
  const int bottom = kTickLength + kPad + line_h + (o.x_label.empty() ? 0 : kPad + line_h) + kPad;
  const int right = std::max<int>(kPad, canvas.text_width(xa.labels.empty() ? "" : xa.labels.back(), fs) / 2 + 2);
  const Rect plot = r.inset(left, line_h / 2 + 2, right, bottom);
  const PlotLayout layout{plot, xa.lo, xa.hi, ya.lo, ya.hi, o.log_x, o.log_y};
  if (plot.w < 10 || plot.h < 10) return layout;
  auto px = [&](double x) { return plot.x + (x - xa.lo) / (xa.hi - xa.lo) * (plot.w - 1); };  // axis units
  auto py = [&](double v) { return plot.y + (ya.hi - v) / (ya.hi - ya.lo) * (plot.h - 1); };  // axis units

  // Grid and ticks, with labels that do not overlap.
  if (o.grid) {
    for (double m : ya.minor) canvas.line(plot.x, crisp(py(m)), plot.right(), crisp(py(m)), {242, 242, 242});
    for (double t : ya.ticks) canvas.line(plot.x, crisp(py(t)), plot.right(), crisp(py(t)), {225, 225, 225});
    for (double m : xa.minor) canvas.line(crisp(px(m)), plot.y, crisp(px(m)), plot.bottom(), {242, 242, 242});
    for (double t : xa.ticks) canvas.line(crisp(px(t)), plot.y, crisp(px(t)), plot.bottom(), {225, 225, 225});
  }
  TextStyle tick;
  tick.size = fs;
  tick.color = colors::dark_gray;
  tick.align = Align::Right;
  tick.valign = VAlign::Middle;
  double last_label_y = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < ya.ticks.size(); ++i) {
    const double y = crisp(py(ya.ticks[i]));
    canvas.line(plot.x - kTickLength, y, plot.x, y, colors::dark_gray);
    if (last_label_y - y < line_h + 2) continue;
    canvas.text(plot.x - kTickLength - kPad / 2.0, y, ya.labels[i], tick);
    last_label_y = y;
  }
  tick.align = Align::Center;
  tick.valign = VAlign::Top;
  double last_label_right = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < xa.ticks.size(); ++i) {
    const double x = crisp(px(xa.ticks[i])), w = canvas.text_width(xa.labels[i], fs);
    canvas.line(x, plot.bottom(), x, plot.bottom() + kTickLength, colors::dark_gray);
    if (x - w / 2 < last_label_right + 8) continue;
    canvas.text(x, plot.bottom() + kTickLength + kPad / 2.0, xa.labels[i], tick);
    last_label_right = x + w / 2;
  }

  // Series, clipped to the axes; `drawn` keeps points along them for placing the legend.
  std::vector<std::pair<double, double>> drawn;
  canvas.clip(plot);
  for (size_t si = 0; si < series.size(); ++si) {
    const Series& s = series[si];
    const Color c = s.color.value_or(palette(static_cast<int>(si)));
    std::vector<double> xs(s.ys.size()), ys(s.ys.size());
    for (size_t i = 0; i < s.ys.size(); ++i) {
      const double y = o.log_y ? (s.ys[i] > 0 ? std::log10(s.ys[i]) : NAN) : s.ys[i];
      xs[i] = layout.x_to_px(s.xs.empty() ? static_cast<double>(i) : s.xs[i]);
      ys[i] = finite(y) ? py(y) : NAN;
      if (s.marker_radius > 0) canvas.circle(xs[i], ys[i], s.marker_radius, c);
      if (i == 0 || !finite(xs[i] + ys[i] + xs[i - 1] + ys[i - 1])) continue;
      const int samples = 1 + static_cast<int>(std::hypot(xs[i] - xs[i - 1], ys[i] - ys[i - 1]) / 4);
      for (int k = 0; k <= samples; ++k)
        drawn.emplace_back(xs[i - 1] + (xs[i] - xs[i - 1]) * k / samples, ys[i - 1] + (ys[i] - ys[i - 1]) * k / samples);
    }
    canvas.polyline(xs, ys, c, s.thickness, s.dashed);
  }
  canvas.unclip();
  canvas.stroke_rect(plot.inset(-1), colors::gray, 1);

  // Axis labels.
  TextStyle axis;
  axis.size = fs;
  axis.align = Align::Center;
  if (!o.x_label.empty())
    canvas.text(plot.x + plot.w / 2.0, plot.bottom() + kTickLength + kPad + line_h + kPad, o.x_label, axis);
  axis.vertical = true;
  if (!o.y_label.empty()) canvas.text(r.x + 2, plot.y + plot.h / 2.0, o.y_label, axis);

  // Legend, in the corner of the axes that hides the least data.
  std::vector<size_t> named;
  for (size_t i = 0; i < series.size(); ++i)
    if (!series[i].name.empty()) named.push_back(i);
  if (!o.legend || named.empty()) return layout;
  const int swatch = 22, row_h = line_h + 6;
  double names_w = 0;
  for (size_t i : named) names_w = std::max(names_w, canvas.text_width(series[i].name, fs));
  const int bw = swatch + 3 * kPad + static_cast<int>(std::ceil(names_w));
  const int bh = static_cast<int>(named.size()) * row_h + kPad;
  const Rect corners[4] = {{plot.right() - bw - 8, plot.y + 8, bw, bh},  // top right, top left,
                           {plot.x + 8, plot.y + 8, bw, bh},             // bottom right, bottom left
                           {plot.right() - bw - 8, plot.bottom() - bh - 8, bw, bh},
                           {plot.x + 8, plot.bottom() - bh - 8, bw, bh}};
  size_t hidden[4] = {0, 0, 0, 0};
  for (const auto& [x, y] : drawn)
    for (int c = 0; c < 4; ++c) hidden[c] += corners[c].inset(-4).contains(x, y);
  const Rect box = corners[std::min_element(hidden, hidden + 4) - hidden];
  canvas.fill_rect(box, colors::white);
  canvas.stroke_rect(box, colors::light_gray, 1);
  axis.vertical = false;
  axis.align = Align::Left;
  axis.valign = VAlign::Middle;
  for (size_t k = 0; k < named.size(); ++k) {
    const Series& s = series[named[k]];
    const double cy = box.y + kPad / 2.0 + static_cast<double>(k) * row_h + row_h / 2.0;
    canvas.line(box.x + kPad, cy, box.x + kPad + swatch, cy, s.color.value_or(palette(static_cast<int>(named[k]))),
                std::max(2.0, s.thickness), s.dashed);
    canvas.text(box.x + 2 * kPad + swatch, cy, s.name, axis);
  }
  return layout;
}

// ------------------------------------------------------------------ figure

namespace {
int checked_figure_width(int rows, int cols, int panel_width, int panel_height) {
  POSGRAD_CHECK(rows > 0 && cols > 0 && panel_width > 0 && panel_height > 0,
                "Figure: bad grid {}x{} of {}x{} panels", rows, cols, panel_width, panel_height);
  return cols * panel_width;
}
constexpr double kFigureTitleSize = 18;
}  // namespace

Figure::Figure(int rows, int cols, int panel_width, int panel_height, const std::string& title,
               Color background)
    : rows_(rows), cols_(cols), panel_w_(panel_width), panel_h_(panel_height),
      top_(title.empty() ? 0 : static_cast<int>(kFigureTitleSize) + 3 * kPad),
      canvas_(checked_figure_width(rows, cols, panel_width, panel_height), rows * panel_height + top_,
              background) {
  draw_title(canvas_, canvas_.bounds().inset(0, kPad, 0, 0), title, kFigureTitleSize);
}

Rect Figure::panel(int row, int col, int row_span, int col_span) const {
  POSGRAD_CHECK(row >= 0 && col >= 0 && row_span >= 1 && col_span >= 1 &&
                    row + row_span <= rows_ && col + col_span <= cols_,
                "Figure::panel: ({}, {}) spanning {}x{} is outside the {}x{} grid", row, col,
                row_span, col_span, rows_, cols_);
  return Rect{col * panel_w_, top_ + row * panel_h_, col_span * panel_w_, row_span * panel_h_}.inset(kPad);
}

void Figure::save_png(const std::filesystem::path& path) const {
  POSGRAD_CHECK(path.extension() == ".png", "Figure::save_png: '{}' does not end in .png",
                path.string());
  canvas_.save(path, ImageFormat::Png);
  canvas_.save(std::filesystem::path(path).replace_extension(".svg"), ImageFormat::Svg);
}

}  // namespace posgrad::apps
