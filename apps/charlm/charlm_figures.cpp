// The charlm figures (see charlm_figures.h).
#include "apps/charlm/charlm_figures.h"

#include <algorithm>
#include <cmath>

#include "apps/common/plot.h"
#include "tensor/error.h"

namespace posgrad::charlm {

using namespace posgrad::apps;

void draw_span_mask(const CharTransformer& model, const std::filesystem::path& path) {
  const auto spans = model.head_spans();  // [layer][head]
  if (spans.empty()) return;              // no adaptive span: nothing learned to draw
  const auto& a = model.config().attention;
  const int rows = static_cast<int>(spans.size()), cols = static_cast<int>(spans[0].size());
  const double S = static_cast<double>(a.max_span), R = a.span_ramp;
  Figure fig(rows, cols, 300, 200,
             fmt::format("learned soft span mask m(d) = clamp((R + z - (d - 1)) / R, 0, 1), R = {}, S = {}", R, S));
  // The distance axis up to a little past the longest ramp end, so short spans stay visible.
  double reach = 0;
  for (const auto& layer : spans)
    for (double z : layer) reach = std::max(reach, z + R + 1);
  const double x_max = std::min(S, std::max(2.0 * R, std::ceil(reach * 1.15)));
  for (int l = 0; l < rows; ++l)
    for (int h = 0; h < cols; ++h) {
      const double z = spans[static_cast<size_t>(l)][static_cast<size_t>(h)];
      std::vector<double> d, m;
      for (int64_t k = 1; k <= static_cast<int64_t>(x_max); ++k) {
        d.push_back(static_cast<double>(k));
        m.push_back(std::clamp((R + z - static_cast<double>(k - 1)) / R, 0.0, 1.0));
      }
      LinePlotOptions o;
      o.title = fmt::format("layer {} head {}: z = {:.1f}", l, h, z);
      o.x_label = l == rows - 1 ? "distance d" : "";
      o.y_label = h == 0 ? "mask" : "";
      o.y_min = 0.0;
      o.y_max = 1.05;
      o.x_min = 0.0;
      o.x_max = x_max;
      o.legend = false;
      o.font_size = 11;
      draw_line_plot(fig.canvas(), fig.panel(l, h), {{"", d, m}}, o);
    }
  fig.save_png(path);
}

void draw_span_history(const std::vector<double>& steps, const std::vector<std::vector<std::vector<double>>>& history,
                       const std::filesystem::path& path) {
  if (history.empty() || history[0].empty()) return;
  const size_t layers = history[0].size(), heads = history[0][0].size();
  Figure fig(1, static_cast<int>(layers), 320, 260, "span z of each head over training (tokens)");
  for (size_t l = 0; l < layers; ++l) {
    std::vector<Series> series;
    for (size_t h = 0; h < heads; ++h) {
      Series s{fmt::format("head {}", h), steps, {}};
      for (const auto& snapshot : history) s.ys.push_back(snapshot.at(l).at(h));
      series.push_back(std::move(s));
    }
    LinePlotOptions o;
    o.title = fmt::format("layer {}", l);
    o.x_label = "step";
    o.y_label = l == 0 ? "z" : "";
    o.y_min = 0.0;
    o.legend = l == 0;
    o.font_size = 11;
    draw_line_plot(fig.canvas(), fig.panel(0, static_cast<int>(l)), series, o);
  }
  fig.save_png(path);
}

void draw_learning_curves(const std::vector<double>& train_steps, const std::vector<double>& train_loss,
                          const std::vector<double>& val_steps, const std::vector<double>& val_loss,
                          const std::filesystem::path& path) {
  if (train_steps.empty()) return;
  Figure fig(1, 1, 640, 400, "learning curves");
  LinePlotOptions o;
  o.x_label = "step";
  o.y_label = "loss (nats per character)";
  std::vector<Series> series{{"train (segment mean)", train_steps, train_loss}};
  if (!val_steps.empty()) {
    Series v{"validation (full eval)", val_steps, val_loss};
    v.marker_radius = 3;
    series.push_back(std::move(v));
  }
  draw_line_plot(fig.canvas(), fig.panel(0, 0), series, o);
  fig.save_png(path);
}

void draw_passage_attention(const std::vector<std::string>& queries,
                            const std::vector<std::vector<std::vector<float>>>& probs, int64_t heads,
                            const std::vector<int64_t>& windows, int64_t max_distance, const std::filesystem::path& path) {
  if (queries.empty() || probs.empty()) return;
  const int rows = static_cast<int>(queries.size()), layers = static_cast<int>(probs[0].size());
  const int64_t widest = *std::max_element(windows.begin(), windows.end());
  const int D = static_cast<int>(std::min(widest, max_distance));
  Figure fig(layers, static_cast<int>(heads), 360, 420,
             "attention while sampling: rows = the character fed in, columns = distance to the key");
  std::vector<std::string> cols;
  for (int d = 1; d <= D; ++d) cols.push_back(std::to_string(d));
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < static_cast<int>(heads); ++h) {
      std::vector<float> values(static_cast<size_t>(rows * D));
      const int64_t W = windows[static_cast<size_t>(l)];
      for (int r = 0; r < rows; ++r)
        for (int d = 1; d <= std::min<int64_t>(D, W); ++d)
          values[static_cast<size_t>(r * D + d - 1)] =
              probs[static_cast<size_t>(r)][static_cast<size_t>(l)][static_cast<size_t>(h * W + (W - d))];
      HeatmapOptions o;
      o.title = fmt::format("layer {} head {}", l, h);
      o.x_label = "distance";
      o.row_labels = queries;
      o.col_labels = cols;
      o.vmin = 0.0;
      o.cell_borders = false;
      o.colorbar = h == static_cast<int>(heads) - 1;
      o.font_size = 10;
      draw_heatmap(fig.canvas(), fig.panel(l, h), values, rows, D, o);
    }
  fig.save_png(path);
}

void draw_text_spans(const std::string& text, const std::vector<std::vector<double>>& z,
                     const std::vector<double>& mean_z, double ramp, const std::filesystem::path& path) {
  const auto n = static_cast<int>(text.size());
  const auto layers = z.size();
  POSGRAD_CHECK(n > 0 && layers > 0 && mean_z.size() == text.size(),
                "draw_text_spans: {} characters, {} layers and {} mean spans", n, layers, mean_z.size());
  std::vector<double> position(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t) position[static_cast<size_t>(t)] = t;
  // The text in rows of 64 characters, each cell coloured by the mean z_t.
  constexpr int kPerRow = 64;
  const int rows = (n + kPerRow - 1) / kPerRow;
  std::vector<float> values(static_cast<size_t>(rows * kPerRow), 0.0f);
  std::vector<std::string> cells(values.size());
  std::vector<uint8_t> visible(values.size(), 0);
  std::vector<std::string> row_labels;
  for (int r = 0; r < rows; ++r) row_labels.push_back(std::to_string(r * kPerRow));
  for (int t = 0; t < n; ++t) {
    const auto i = static_cast<size_t>(t);
    values[i] = static_cast<float>(mean_z[i]);
    visible[i] = 1;
    cells[i] = text[i] == '\n' ? std::string("\u21b5") : text[i] == ' ' ? std::string() : std::string(1, text[i]);
  }
  Figure fig(2, 1, 1200, 26 * rows + 120,
             fmt::format("dynamic span z_t along the text (mean over heads and layers; the mask reaches z_t + R, R = {})", ramp));
  HeatmapOptions o;
  o.title = "the text, each character coloured by z_t";
  o.row_labels = row_labels;
  o.index_ticks = false;
  o.cell_text = cells;
  o.mask = visible;
  o.mask_color = colors::white;
  o.colorbar_label = "z_t";
  o.cell_borders = false;
  draw_heatmap(fig.canvas(), fig.panel(0, 0), values, rows, kPerRow, o);
  std::vector<Series> series;
  for (size_t l = 0; l < layers; ++l) series.push_back({fmt::format("layer {}", l), position, z[l], std::nullopt, 1.0});
  series.push_back({"mean", position, mean_z, colors::black, 2.5});
  LinePlotOptions lo;
  lo.title = "z_t against the position in the text";
  lo.x_label = "character";
  lo.y_label = "z_t (characters)";
  lo.y_min = 0.0;
  draw_line_plot(fig.canvas(), fig.panel(1, 0), series, lo);
  fig.save_png(path);
}

}  // namespace posgrad::charlm
