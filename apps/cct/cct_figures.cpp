// The figures of a cct run (see cct_figures.h).
#include "apps/cct/cct_figures.h"

#include <cmath>

#include "apps/cct/cct_model.h"
#include "apps/common/cli.h"
#include "apps/common/plot.h"
#include "apps/common/rotation_angles.h"
#include "apps/common/run_checkpoints.h"
#include "apps/common/run_dir.h"
#include "attention/schemes/ape_grid.h"
#include "attention/schemes/ape_sequence.h"
#include "nn/checkpoint.h"

namespace posgrad::cct_app {

using namespace posgrad::apps;

namespace {

// Per axis, per head: the angles of that generator. generators [G, d, d] with G = axes * heads
// (index a * H + h).
std::vector<std::vector<std::vector<double>>> angles_of(const Tensor& matrices, int64_t axes, int64_t heads) {
  const auto all = rotation_angles_of(matrices);
  std::vector<std::vector<std::vector<double>>> out(static_cast<size_t>(axes));
  for (int64_t a = 0; a < axes; ++a)
    for (int64_t h = 0; h < heads; ++h) out[a].push_back(all[static_cast<size_t>(a * heads + h)]);
  return out;
}

// The generators' matrices of an APE scheme and its axes, or nothing for another scheme.
bool ape_matrices(const CctModel& model, Tensor& matrices, int64_t& axes) {
  if (auto* grid = dynamic_cast<const ApeGrid*>(model.positional().get())) {
    matrices = grid->generators().matrices().value();
    axes = grid->axes();
    return true;
  }
  if (auto* seq = dynamic_cast<const ApeSequence*>(model.positional().get())) {
    matrices = seq->generators().matrices().value();
    axes = 1;
    return true;
  }
  return false;
}

void draw_curves(RunDir& run, const std::vector<nlohmann::json>& records, const std::string& title) {
  std::vector<double> epochs, val, test, loss;
  for (const auto& r : records) {
    epochs.push_back(r.value("epoch", 0.0));
    val.push_back(r.value("val_acc", NAN));
    test.push_back(r.value("test_acc", NAN));
    loss.push_back(r.value("train_loss", NAN));
  }
  Figure fig(1, 2, 520, 380, title);
  draw_line_plot(fig.canvas(), fig.panel(0, 0), {{"validation", epochs, val}, {"test", epochs, test}},
                 {.title = "accuracy", .x_label = "epoch", .y_label = "top-1"});
  draw_line_plot(fig.canvas(), fig.panel(0, 1), {{"train loss", epochs, loss}},
                 {.title = "training loss (label-smoothed)", .x_label = "epoch", .legend = false});
  fig.save_png(run.figure_path("curves"));
}

}  // namespace

void draw_figures(CctSettings& c, Settings& settings, const std::string& run_dir, const std::string& which) {
  load_run_settings(settings, run_dir);
  RunDir run(run_dir, ExistingRun::Append);
  const auto records = run.read_metrics();
  const std::string title = fmt::format("CCT, {}, seed {}", c.model.positional, c.seed);
  draw_curves(run, records, title);
  Generator gen(static_cast<uint64_t>(c.seed));
  CctModel initial(model_config(c), gen);  // the run's initialisation: same seed, same draws
  Generator gen2(static_cast<uint64_t>(c.seed));
  CctModel trained(model_config(c), gen2);
  trained.load_state_dict(load_checkpoint(run_checkpoint_folder(run_dir, which)).model);
  Tensor learned, start;
  int64_t axes = 0;
  if (ape_matrices(trained, learned, axes) && ape_matrices(initial, start, axes)) {
    const int64_t heads = c.model.heads;
    const auto now = angles_of(learned, axes, heads), then = angles_of(start, axes, heads);
    Figure fig(1, static_cast<int>(axes), 520, 400, title + ": rotation angles of the APE generators");
    for (int64_t a = 0; a < axes; ++a) {
      std::vector<Series> series;
      for (int64_t h = 0; h < heads; ++h) {
        const auto color = palette(static_cast<int>(h));
        series.push_back({fmt::format("head {}", h), {}, now[a][h], color, 2.0, 3.0});
        series.push_back({"", {}, then[a][h], color, 1.0, 0.0, true});
      }
      const std::string axis = axes == 1 ? "flat index" : (a == 0 ? "rows (axis 0)" : "columns (axis 1)");
      draw_line_plot(fig.canvas(), fig.panel(0, static_cast<int>(a)), series,
                     {.title = axis + ": learned (solid) vs init (dashed)", .x_label = "rotation plane (sorted)",
                      .y_label = "angle per step (rad)"});
    }
    fig.save_png(run.figure_path("ape_angles"));
  }
  run.log_figures(records.empty() ? 0 : records.back().value("step", int64_t{0}));
  fmt::print("figures: {}\n", (std::filesystem::path(run_dir) / "figures").string());
}

}  // namespace posgrad::cct_app
