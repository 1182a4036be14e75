// The figures of one posattn run (see figures.h).
// Shapes: letters of shape_legend.h.
#include "apps/posattn/figures.h"

#include <cmath>

#include <fmt/format.h>

#include "apps/common/cli.h"
#include "apps/common/plot.h"
#include "apps/common/run_dir.h"
#include "apps/posattn/image_data.h"
#include "apps/posattn/run_model.h"
#include "attention/schemes/relative_encoding.h"

namespace posgrad::posattn_app {

using namespace posgrad::apps;

namespace {

std::vector<double> column(const std::vector<nlohmann::json>& records, const std::string& key) {
  std::vector<double> out;
  for (const auto& r : records) out.push_back(r.contains(key) && r[key].is_number() ? r[key].get<double>() : NAN);
  return out;
}

void draw_curves(const RunDir& run, const std::vector<nlohmann::json>& records, const std::string& title) {
  const std::vector<double> epochs = column(records, "epoch");
  Figure fig(1, 2, 520, 380, title);
  LinePlotOptions l;
  l.title = "loss (cross-entropy)";
  l.x_label = "epoch";
  l.y_label = "loss";
  draw_line_plot(fig.canvas(), fig.panel(0, 0),
                 {{"train", epochs, column(records, "train_loss")}, {"validation", epochs, column(records, "val_loss")}}, l);
  LinePlotOptions a;
  a.title = "validation accuracy";
  a.x_label = "epoch";
  a.y_label = "accuracy";
  draw_line_plot(fig.canvas(), fig.panel(0, 1),
                 {{"val_acc", epochs, column(records, "val_acc")},
                  {"val_acc_max", epochs, column(records, "val_acc_max"), std::nullopt, 1.5, 0, true}},
                 a);
  fig.save_png(run.figure_path("curves"));
}

void draw_spans(const RunDir& run, const std::vector<nlohmann::json>& records, const std::string& title) {
  if (records.empty() || records.back()["layers"].empty() || !records.back()["layers"][0].contains("sigma")) return;
  const size_t layers = records.back()["layers"].size();
  const size_t dims = records.back()["layers"][0]["sigma"].size();
  const std::vector<double> epochs = column(records, "epoch");
  std::vector<Series> sigma, half;
  for (size_t l = 0; l < layers; ++l)
    for (size_t d = 0; d < dims; ++d) {
      Series s{dims == 1 ? fmt::format("layer {}", l) : fmt::format("layer {} dim {}", l, d), epochs, {}};
      Series h = s;
      s.color = h.color = palette(static_cast<int>(l));
      s.dashed = h.dashed = d == 1;
      for (const auto& r : records) {
        s.ys.push_back(std::abs(r["layers"][l]["sigma"][d].get<double>()));
        h.ys.push_back(r["layers"][l]["half_width"][d].get<double>());
      }
      sigma.push_back(std::move(s));
      half.push_back(std::move(h));
    }
  Figure fig(1, 2, 560, 400, title);
  LinePlotOptions a;
  a.title = "learned |sigma| per layer";
  a.x_label = "epoch";
  a.y_label = "|sigma| (normalised offsets)";
  draw_line_plot(fig.canvas(), fig.panel(0, 0), sigma, a);
  LinePlotOptions b;
  b.title = "span box half-width per layer";
  b.x_label = "epoch";
  b.y_label = "half-width (pixels or tokens)";
  draw_line_plot(fig.canvas(), fig.panel(0, 1), half, b);
  fig.save_png(run.figure_path("spans"));
}

void draw_encoding(const RunDir& run, PosattnClassifier& model, const Positions& positions, const std::string& title) {
  NoGradGuard no_grad;
  const int64_t L = static_cast<int64_t>(model.blocks().size());
  const int64_t H = model.config().heads, D = model.config().width, Dh = D / H;
  const auto& S = positions.structure();
  const int rows = S.size() == 2 ? static_cast<int>(2 * S[0] - 1) : 1;
  const int cols = static_cast<int>(PositionPair(positions).relative_size()) / rows;
  std::vector<std::vector<float>> maps;  // per layer and head: [R]
  for (const auto& block : model.blocks()) {
    RelativeEncodingScheme* scheme = nullptr;
    for (const auto& hook : block->attention().hooks())
      if (auto* s = dynamic_cast<RelativeEncodingScheme*>(hook.get())) scheme = s;
    if (!scheme) return;
    const std::vector<float> E = scheme->encode(positions, kFloat32).value().to(kCPU).to_vector<float>();  // [R, D]
    const std::vector<float> v = scheme->v().value().to(kCPU).to_vector<float>();                          // [H, Dh]
    const int64_t R = PositionPair(positions).relative_size();
    for (int64_t h = 0; h < H; ++h) {
      std::vector<float> m(static_cast<size_t>(R));
      for (int64_t r = 0; r < R; ++r) {
        double dot = 0;
        for (int64_t k = 0; k < Dh; ++k) dot += double(v[size_t(h * Dh + k)]) * E[size_t(r * D + h * Dh + k)];
        m[size_t(r)] = static_cast<float>(dot / std::sqrt(double(Dh)));
      }
      maps.push_back(std::move(m));
    }
  }
  const bool grid = rows > 1;
  Figure fig(static_cast<int>(grid ? L : 1), static_cast<int>(grid ? H : L), grid ? 170 : 360, grid ? 170 : 260,
             title + ": v.E[r]/sqrt(Dh), layers x heads");
  for (int64_t l = 0; l < L; ++l) {
    if (grid) {
      for (int64_t h = 0; h < H; ++h) {
        HeatmapOptions o;
        o.title = fmt::format("layer {} head {}", l, h);
        o.colormap = Colormap::Diverging;
        o.index_ticks = false;
        o.cell_borders = false;
        o.colorbar = false;
        o.font_size = 10;
        draw_heatmap(fig.canvas(), fig.panel(static_cast<int>(l), static_cast<int>(h)), maps[size_t(l * H + h)], rows, cols, o);
      }
    } else {  // 1-D: one heatmap per layer, heads as rows, offsets as columns
      std::vector<float> all;
      for (int64_t h = 0; h < H; ++h) all.insert(all.end(), maps[size_t(l * H + h)].begin(), maps[size_t(l * H + h)].end());
      HeatmapOptions o;
      o.title = fmt::format("layer {} (offset -(N-1) .. N-1)", l);
      o.colormap = Colormap::Diverging;
      o.cell_borders = false;
      o.x_label = "offset";
      o.y_label = "head";
      o.col_labels.assign(static_cast<size_t>(cols), "");
      draw_heatmap(fig.canvas(), fig.panel(0, static_cast<int>(l)), all, static_cast<int>(H), cols, o);
    }
  }
  fig.save_png(run.figure_path("encoding"));
}

Color pixel_color(const std::vector<float>& image, int64_t pixel, int64_t channels) {
  auto byte = [](float x) { return static_cast<uint8_t>(std::clamp((x + 1.0f) * 127.5f, 0.0f, 255.0f)); };
  if (channels >= 3)
    return {byte(image[size_t(pixel * channels)]), byte(image[size_t(pixel * channels + 1)]), byte(image[size_t(pixel * channels + 2)])};
  const uint8_t g = byte(image[size_t(pixel * channels)]);
  return {g, g, g};
}

void draw_attention(const RunDir& run, PosattnClassifier& model, const ImageSplits& data, int64_t count,
                    const std::vector<nlohmann::json>& records, const std::string& title) {
  const auto& S = data.set.structure;
  if (S.size() != 2) return;  // sequential MNIST: no image to draw on
  NoGradGuard no_grad;
  model.eval();
  model.set_path(AttentionPath::Reference);  // the probabilities of every layer, computed once
  count = std::min<int64_t>(count, data.parts.val->size());
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < count; ++i) indices.push_back(i);
  const Batch b = data.parts.val->get_batch(indices);
  const Tensor logits = model.forward(Variable(b.input)).value();
  const int64_t N = S[0] * S[1], C = data.set.channels, L = static_cast<int64_t>(model.blocks().size());
  const int64_t query = model.config().pooling == "last" ? N - 1 : (S[0] / 2) * S[1] + S[1] / 2;
  const std::vector<float> pixels = b.input.contiguous().to_vector<float>();  // [B, S0, S1, C]
  const std::vector<float> z = logits.to_vector<float>();
  const auto labels = b.target.to_vector<int64_t>();
  const int64_t classes = model.config().classes;
  const int cell = std::max(4, static_cast<int>(160 / S[0]));
  const int panel = static_cast<int>(cell * S[0]) + 40;
  Figure fig(static_cast<int>(count), static_cast<int>(L + 1), panel, panel + 10,
             fmt::format("{}: query (white) attention{}", title, model.config().span ? ", span box (red)" : ""));
  std::vector<std::vector<float>> probs;  // per layer: [B, N] (row `query`, mean over heads)
  for (const auto& block : model.blocks()) {
    const Tensor p = block->attention().last_probs();  // [B, H, N, N]
    const int64_t H = p.size(1);
    const std::vector<float> all = p.contiguous().to(kCPU).to_vector<float>();
    std::vector<float> row(static_cast<size_t>(count * N), 0.0f);
    for (int64_t bi = 0; bi < count; ++bi)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t k = 0; k < N; ++k)
          row[size_t(bi * N + k)] += all[size_t(((bi * H + h) * N + query) * N + k)] / static_cast<float>(H);
    probs.push_back(std::move(row));
  }
  const std::vector<nlohmann::json> no_layers;
  const nlohmann::json layers = records.empty() ? nlohmann::json::array() : records.back()["layers"];
  for (int64_t bi = 0; bi < count; ++bi) {
    const std::vector<float> image(pixels.begin() + bi * N * C, pixels.begin() + (bi + 1) * N * C);
    const float* row = z.data() + bi * classes;
    const int64_t predicted = std::max_element(row, row + classes) - row;
    for (int64_t col = 0; col <= L; ++col) {
      Rect area = fig.panel(static_cast<int>(bi), static_cast<int>(col));
      const std::string heading =
          col == 0 ? fmt::format("{} (pred. {})", data.set.class_names[size_t(labels[size_t(bi)])],
                                 data.set.class_names[size_t(predicted)])
                   : fmt::format("layer {}", col - 1);
      area = draw_title(fig.canvas(), area, heading, 11);
      const int x0 = area.x + (area.w - cell * static_cast<int>(S[1])) / 2, y0 = area.y + 4;
      float peak = 0;
      if (col > 0)
        for (int64_t k = 0; k < N; ++k) peak = std::max(peak, probs[size_t(col - 1)][size_t(bi * N + k)]);
      for (int64_t k = 0; k < N; ++k) {
        Color c = pixel_color(image, k, C);
        if (col > 0) {
          const double w = peak > 0 ? probs[size_t(col - 1)][size_t(bi * N + k)] / peak : 0.0;
          c = mix(mix(c, colors::black, 0.55), colormap(Colormap::Viridis, w), 0.25 + 0.75 * std::sqrt(w));
        }
        fig.canvas().fill_rect({x0 + cell * static_cast<int>(k % S[1]), y0 + cell * static_cast<int>(k / S[1]), cell, cell}, c);
      }
      const int qx = static_cast<int>(query % S[1]), qy = static_cast<int>(query / S[1]);
      fig.canvas().stroke_rect({x0 + cell * qx, y0 + cell * qy, cell, cell}, colors::white, 1.5);
      if (col > 0 && size_t(col - 1) < layers.size() && model.config().dims == 2 && layers[size_t(col - 1)].contains("sigma")) {
        const auto half = layers[size_t(col - 1)]["half_width"];
        const int hy = half[0].get<int>(), hx = half[1].get<int>();
        const int lx = std::max(0, qx - hx), rx = std::min(static_cast<int>(S[1]) - 1, qx + hx);
        const int ty = std::max(0, qy - hy), by = std::min(static_cast<int>(S[0]) - 1, qy + hy);
        fig.canvas().stroke_rect({x0 + cell * lx, y0 + cell * ty, cell * (rx - lx + 1), cell * (by - ty + 1)}, colors::red, 2);
      }
    }
  }
  fig.save_png(run.figure_path("attention"));
  model.set_path(model.config().path);
}

}  // namespace

void draw_figures(PosattnSettings& c, Settings& settings, const std::string& run_dir, const std::string& which,
                  int64_t images) {
  load_run_settings(settings, run_dir);
  RunDir run(run_dir, ExistingRun::Append);
  const auto records = run.read_metrics();
  const std::string title = fmt::format("{} {}-D{}{} seed {}", c.model.positional, c.model.positional_dims,
                                        c.model.span ? " + span" : "",
                                        c.model.span && c.model.threshold > 0 ? fmt::format(" t={}", c.model.threshold) : "",
                                        c.seed);
  draw_curves(run, records, title);
  draw_spans(run, records, title);
  const ImageSplits data = load_train_val(c);
  LoadedModel m = load_run_model(c, run_dir, which, data.set);
  const Positions positions = m.model->positions_for(data.set.structure);
  draw_encoding(run, *m.model, positions, title);
  draw_attention(run, *m.model, data, images, records, title);
  run.log_figures(records.empty() ? 0 : records.back().value("step", int64_t{0}));
  fmt::print("figures: {}\n", (std::filesystem::path(run_dir) / "figures").string());
}

}  // namespace posgrad::posattn_app
