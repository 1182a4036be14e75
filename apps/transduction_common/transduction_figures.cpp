// The figures job of a transduction app (see transduction_figures.h).
// Shapes: letters of shape_legend.h (H heads, T decoder steps, N source tokens).
#include "apps/transduction_common/transduction_figures.h"

#include <algorithm>
#include <cmath>

#include "apps/common/plot.h"
#include "apps/common/run_checkpoints.h"
#include "apps/common/run_dir.h"
#include "nn/checkpoint.h"

namespace posgrad::transduction_app {

using namespace posgrad::apps;

namespace {

void draw_curves(RunDir& run, const std::vector<nlohmann::json>& records, const std::string& title) {
  std::vector<double> epochs, train, dev, ppl;
  for (const auto& r : records) {
    epochs.push_back(r.value("epoch", 0.0));
    train.push_back(r.value("train_loss", NAN));
    dev.push_back(r.value("dev_loss", NAN));
    ppl.push_back(r.value("dev_ppl", NAN));
  }
  Figure fig(1, 2, 520, 380, title);
  draw_line_plot(fig.canvas(), fig.panel(0, 0), {{"train", epochs, train, std::nullopt, 2.0, 3.0}, {"dev", epochs, dev, std::nullopt, 2.0, 3.0}},
                 {.title = "cross-entropy per token", .x_label = "epoch", .y_label = "loss"});
  draw_line_plot(fig.canvas(), fig.panel(0, 1), {{"dev perplexity", epochs, ppl, std::nullopt, 2.0, 3.0}},
                 {.title = "dev perplexity (1 = every token certain)", .x_label = "epoch", .log_y = true, .legend = false});
  fig.save_png(run.figure_path("curves"));
}

void draw_angles(RunDir& run, const std::vector<AnglePanel>& panels, const std::string& title) {
  Figure fig(1, static_cast<int>(panels.size()), 620, 420, title + ": rotation angles of the APE generators");
  for (size_t p = 0; p < panels.size(); ++p) {
    std::vector<Series> series;
    for (size_t h = 0; h < panels[p].learned.size(); ++h) {
      const auto color = palette(static_cast<int>(h));
      series.push_back({fmt::format("head {}", h), {}, panels[p].learned[h], color, 2.0, 3.0});
      series.push_back({"", {}, panels[p].initial[h], color, 1.0, 0.0, true});
    }
    draw_line_plot(fig.canvas(), fig.panel(0, static_cast<int>(p)), series,
                   {.title = panels[p].title, .x_label = "rotation plane (sorted)", .y_label = "angle per position step (rad)"});
  }
  fig.save_png(run.figure_path("ape_angles"));
}

void draw_cross_attention(RunDir& run, EncoderDecoder& model, const TransductionExample& e, const std::string& title) {
  const TransductionBatch batch = make_transduction_batch({e}, {0});
  {
    NoGradGuard no_grad;
    model.eval();
    model.forward(batch);
  }
  const int64_t layers = model.config().decoder_layers, heads = model.config().heads;
  const int64_t T = batch.decoder_input.size(1), N = batch.source.size(1);
  const auto labels = [](const Tensor& tokens) {
    std::vector<std::string> out;
    for (int64_t t : tokens.to_vector<int64_t>()) out.push_back(std::to_string(t));
    return out;
  };
  const int panel = static_cast<int>(std::clamp<int64_t>(16 * std::max(T, N) + 120, 300, 640));
  Figure fig(static_cast<int>(layers), static_cast<int>(heads), panel, panel, title);
  for (int64_t l = 0; l < layers; ++l) {
    const Tensor probs = model.decoder_layer(l).cross_attention().last_probs().to(kCPU).to(kFloat32).contiguous();  // [1, H, T, N]
    const auto all = probs.to_vector<float>();
    for (int64_t h = 0; h < heads; ++h) {
      const std::vector<float> one(all.begin() + h * T * N, all.begin() + (h + 1) * T * N);  // [T, N]
      HeatmapOptions o;
      o.title = fmt::format("decoder layer {}, head {}", l, h);
      o.x_label = "source token";
      o.y_label = "decoder input token";
      o.col_labels = labels(batch.source.reshape({N}));
      o.row_labels = labels(batch.decoder_input.reshape({T}));
      o.vmin = 0.0;
      o.vmax = 1.0;
      o.colorbar_label = "probability";
      draw_heatmap(fig.canvas(), fig.panel(static_cast<int>(l), static_cast<int>(h)), one, static_cast<int>(T),
                   static_cast<int>(N), o);
    }
  }
  fig.save_png(run.figure_path("cross_attention"));
}

}  // namespace

void draw_transduction_figures(const FiguresRequest& request, const EncoderDecoderConfig& config, uint64_t seed,
                               const std::vector<TransductionExample>& test, const AnglesOf& angles) {
  if (request.example < 0 || request.example >= static_cast<int64_t>(test.size()))
    fail("--example: {} is not an example of the test split (0..{})", request.example,
         static_cast<int64_t>(test.size()) - 1);
  RunDir run(request.run_dir, ExistingRun::Append);
  const auto records = run.read_metrics();
  Generator gen(seed);
  EncoderDecoder initial(config, gen);  // the run's initialisation: same seed, same draws
  Generator gen2(seed);
  EncoderDecoder trained(config, gen2);
  trained.load_state_dict(load_checkpoint(run_checkpoint_folder(request.run_dir, request.which)).model);

  draw_curves(run, records, request.title);
  const std::vector<AnglePanel> panels = angles ? angles(trained.positional(), initial.positional()) : std::vector<AnglePanel>{};
  if (!panels.empty()) draw_angles(run, panels, request.title);
  draw_cross_attention(run, trained, test[static_cast<size_t>(request.example)],
                       fmt::format("{}: cross-attention on test example {}", request.title, request.example));
  run.log_figures(records.empty() ? 0 : records.back().value("step", int64_t{0}));
  fmt::print("figures: {}\n", (std::filesystem::path(request.run_dir) / "figures").string());
}

}  // namespace posgrad::transduction_app
