// count24: trains the single-query attention model to decide whether a sequence of ten digits
// holds more 2s than 4s, then writes its run folder: config.yaml, metrics.jsonl, checkpoints/
// (latest and best), summary.json (test accuracy on fresh sequences, attention mass on 2s and
// 4s) and figures/count24.png (the attention of a batch with each digit in its cell, the values
// where attention > 0.1, and the loss curve), all of it also in TensorBoard event files (metrics
// as scalars, the figure, the config). `count24 --resume RUN` continues a stopped run
// exactly; `count24 eval RUN` scores its best checkpoint; `count24 --help` lists every setting.
// The whole training loop is train() below, in one block.
//
// Under `mpirun -np N` it trains data-parallel (apps/common/data_parallel.h): each rank computes
// its contiguous slice of every batch, the gradients are averaged, rank 0 evaluates and writes.
//
// Deliberately does not: tune itself (presets live in configs/).
#include <cmath>
#include <memory>

#include "apps/common/cli.h"
#include "apps/common/data_parallel.h"
#include "apps/common/device_setting.h"
#include "apps/common/finite_guard.h"
#include "apps/common/optimizer_choice.h"
#include "apps/common/run_checkpoints.h"
#include "apps/common/plot.h"
#include "apps/common/progress.h"
#include "apps/common/run_dir.h"
#include "apps/count24/count24_model.h"
#include "datasets/count24.h"
#include "datasets/data_loader.h"
#include "tensor/device.h"
#include "nn/atomic_file.h"
#include "nn/checkpoint.h"

using namespace posgrad;
using namespace posgrad::apps;

namespace {

struct Evaluation {
  double accuracy = 0;
  double loss = 0;
  double attention_on_2s_4s = 0;  // mean attention mass on 2s and 4s, over sequences having any
  int64_t sequences_with_2s_or_4s = 0;
};

Evaluation evaluate(count24::Count24Model& model, const Count24& data, Device device) {
  NoGradGuard no_grad;
  model.eval();
  auto out = model.run(data.inputs.to(device));
  Evaluation e;
  e.loss = binary_cross_entropy(out.probability, data.labels.to(device)).item();
  const auto p = out.probability.value().to_vector<float>();
  const auto y = data.labels.to_vector<float>();
  const auto att = out.attention.value().to_vector<float>();
  const auto digits = data.inputs.to_vector<int64_t>();
  int64_t correct = 0;
  double mass_sum = 0;
  for (int64_t i = 0; i < data.size(); ++i) {
    correct += (p[i] > 0.5f) == (y[i] > 0.5f);
    double mass = 0;
    bool any = false;
    for (int64_t j = 0; j < kCount24Length; ++j) {
      const int64_t d = digits[i * kCount24Length + j];
      if (d == 2 || d == 4) {
        any = true;
        mass += att[i * kCount24Length + j];
      }
    }
    if (any) {
      mass_sum += mass;
      ++e.sequences_with_2s_or_4s;
    }
  }
  e.accuracy = static_cast<double>(correct) / static_cast<double>(data.size());
  e.attention_on_2s_4s = e.sequences_with_2s_or_4s ? mass_sum / static_cast<double>(e.sequences_with_2s_or_4s) : 0.0;
  model.train();
  return e;
}

void draw_figure(count24::Count24Model& model, const Count24& data, int64_t rows, const std::vector<double>& steps,
                 const std::vector<double>& losses, const std::filesystem::path& path, double accuracy, Device device) {
  NoGradGuard no_grad;
  model.eval();
  rows = std::min(rows, data.size());
  const Tensor digits = data.inputs.narrow(0, 0, rows);
  auto out = model.run(digits.to(device));
  const auto att = out.attention.value().to_vector<float>();
  const auto val = out.values.value().to_vector<float>();
  const auto d = digits.to_vector<int64_t>();
  const auto prob = out.probability.value().to_vector<float>();
  const auto label = data.labels.narrow(0, 0, rows).to_vector<float>();
  std::vector<std::string> text(d.size());
  std::vector<uint8_t> highlight(d.size());
  for (size_t i = 0; i < d.size(); ++i) {
    text[i] = std::to_string(d[i]);
    highlight[i] = d[i] == 2 || d[i] == 4;
  }
  std::vector<std::string> row_labels;
  for (int64_t r = 0; r < rows; ++r)
    row_labels.push_back(fmt::format("{}{:.2f}", label[r] > 0.5f ? "+ " : "- ", prob[r]));

  Figure fig(2, 2, 620, 520, fmt::format("count24: more 2s than 4s?  test accuracy {:.4f}", accuracy));
  HeatmapOptions a;
  a.title = "attention (2s and 4s outlined)";
  a.x_label = "position";
  a.y_label = "label, P(+)";
  a.cell_text = text;
  a.highlight = highlight;
  a.row_labels = row_labels;
  a.vmin = 0.0;
  a.colorbar_label = "attention";
  draw_heatmap(fig.canvas(), fig.panel(0, 0), att, static_cast<int>(rows), kCount24Length, a);

  HeatmapOptions b;
  b.title = "value where attention > 0.1";
  b.x_label = "position";
  b.value_format = "{:.2f}";
  b.mask = threshold_mask(att, 0.1f);
  b.highlight = highlight;
  b.colormap = Colormap::Diverging;
  b.colorbar_label = "value";
  draw_heatmap(fig.canvas(), fig.panel(0, 1), val, static_cast<int>(rows), kCount24Length, b);

  LinePlotOptions l;
  l.title = "training loss (binary cross-entropy)";
  l.x_label = "step";
  l.y_label = "loss";
  l.log_y = true;
  draw_line_plot(fig.canvas(), fig.panel(1, 0, 1, 2), {{"train loss", steps, losses}}, l);
  fig.save_png(path);
  model.train();
}

// ------------------------------------------------------------------ settings

struct Count24Settings {
  int64_t seed = 0;
  std::string device = "cpu";
  struct {
    int64_t train_size = 50000;
    int64_t test_size = 10000;
  } data;
  struct {
    int64_t embedding_dim = 5;
    int64_t hidden = 200;
  } model;
  struct {
    std::string optimizer = "adam";
    double lr = 0.01;
    int64_t batch_size = 500;
    int64_t steps = 1000;
    int64_t log_every = 100;
    int64_t eval_every = 500;
    int64_t checkpoint_every = 500;
  } train;
  struct {
    int64_t sequences = 16;
  } figure;
};

void declare(Settings& s, Count24Settings& c) {
  s.add("seed", c.seed, "seeds the data, the initialisation and the shuffling");
  s.add("device", c.device, "cpu, cuda or cuda:N (needs a CUDA build and a GPU)");
  s.add("data.train_size", c.data.train_size, "training sequences (a fixed set, reshuffled every epoch)").at_least(1);
  s.add("data.test_size", c.data.test_size, "fresh sequences for the test accuracy").at_least(1);
  s.add("model.embedding_dim", c.model.embedding_dim, "Embedding(10, D); the query is 1 x D").at_least(1);
  s.add("model.hidden", c.model.hidden, "Linear(1, hidden) - ReLU - Linear(hidden, 1) - Sigmoid").at_least(1);
  s.add("train.optimizer", c.train.optimizer, "optimizer").choices({"adam", "adamw", "sgd"});
  s.add("train.lr", c.train.lr, "learning rate").above(0);
  s.add("train.batch_size", c.train.batch_size, "sequences per step").at_least(1);
  s.add("train.steps", c.train.steps, "optimizer steps").at_least(1);
  s.add("train.log_every", c.train.log_every, "steps between metrics.jsonl lines").at_least(1);
  s.add("train.eval_every", c.train.eval_every, "steps between test evaluations (and best checkpoints)").at_least(1);
  s.add("train.checkpoint_every", c.train.checkpoint_every, "steps between checkpoints").at_least(1);
  s.add("figure.sequences", c.figure.sequences, "rows of the attention figure").at_least(1);
}

// ------------------------------------------------------------------ train

void train(const Count24Settings& c, const Settings& settings, const TrainRequest& request) {
  DataParallel dp(usable_device(c.device));
  const Device device = dp.device();
  dp.shard(c.train.batch_size, "train.batch_size");  // refuses a batch the ranks cannot share
  const auto seed = dp.seed(static_cast<uint64_t>(c.seed));
  const Count24 train_set = make_count24(c.data.train_size, seed);
  const Count24 test = make_count24(c.data.test_size, seed + 1000003);  // fresh sequences

  Generator gen(seed);  // parameters are initialised on the CPU (same numbers on every device)
  count24::Count24Model model(c.model.embedding_dim, c.model.hidden, gen);
  model.to(device);
  dp.replicate(model);
  auto opt = make_optimizer({.kind = c.train.optimizer, .lr = c.train.lr}, model.parameters());
  // prefetch 0: batches are an in-memory index_select, and a worker thread would compete with
  // the OpenMP threads on small machines.
  DataLoader loader(train_set.dataset(), c.train.batch_size, /*shuffle=*/true, seed, /*drop_last=*/true, /*prefetch=*/0);
  if (loader.num_batches() == 0)
    fail("data.train_size ({}) is smaller than one batch (train.batch_size {})", train_set.size(), c.train.batch_size);

  RunDir run = dp.open_run_dir(request, settings, dp.describe(c.train.batch_size, 1, c.train.lr));
  RunCheckpoints checkpoints(run, model, *opt, gen, {.metric = "test_accuracy", .higher_is_better = true});
  TrainingPosition at;
  std::vector<double> loss_steps, losses;  // the loss curve of the figure
  if (request.resume) {
    at = dp.restore(checkpoints);
    run.drop_metrics_after(at.step);
    for (const auto& r : dp.writes() ? run.read_metrics() : std::vector<nlohmann::json>{}) {
      loss_steps.push_back(r.at("step").get<double>());
      losses.push_back(r.at("loss").get<double>());
    }
  }
  double window_loss = at.extra.value("window_loss", 0.0);  // mean loss since the last log line
  int64_t window = at.extra.value("window_steps", int64_t{0});
  fmt::print("count24: {} parameters on {}, steps {}..{} of batch {}, run folder {}\n", model.num_parameters(),
             device.str(), at.step, c.train.steps, c.train.batch_size, run.path().string());

  Progress progress(c.train.steps, "train");
  progress.start_at(at.step);  // updates come every train.log_every steps
  while (at.step < c.train.steps) {
    // This rank's slice of each remaining batch of the epoch's seeded order.
    auto mine = distributed::shard_batches(loader.batch_indices(at.epoch), dp.rank(), dp.size(), "train.batch_size");
    mine.erase(mine.begin(), mine.begin() + std::min<int64_t>(at.batch_in_epoch, static_cast<int64_t>(mine.size())));
    Epoch epoch(loader.dataset(), std::move(mine), /*prefetch=*/0);
    for (const Batch& b : epoch) {
      if (at.step >= c.train.steps) break;
      auto out = model.run(b.input.to(device));
      Variable loss = binary_cross_entropy(out.probability, b.target.to(device));
      const double value = loss.item();
      check_finite_loss(value, at.step + 1, checkpoints.latest_path());
      opt->zero_grad();
      dp.overlap_next_backward();
      loss.backward();
      dp.average_gradients();
      check_finite_gradients(model, at.step + 1, checkpoints.latest_path());
      opt->step();
      ++at.step;
      ++at.batch_in_epoch;
      window_loss += dp.mean(value);  // the loss of the whole batch
      ++window;

      if ((at.step % c.train.log_every == 0 || at.step == c.train.steps) && dp.writes()) {
        const double mean_loss = window_loss / static_cast<double>(window);
        loss_steps.push_back(static_cast<double>(at.step));
        losses.push_back(mean_loss);
        nlohmann::json record{{"step", at.step}, {"epoch", at.epoch}, {"loss", mean_loss}, {"lr", c.train.lr}};
        if (at.step % c.train.eval_every == 0 || at.step == c.train.steps) {
          const Evaluation e = evaluate(model, test, device);
          record["test_accuracy"] = e.accuracy;
          record["test_loss"] = e.loss;
          record["attention_on_2s_4s"] = e.attention_on_2s_4s;
          checkpoints.offer_best(at, e.accuracy);
        }
        run.log_metrics(record);
        progress.update(at.step, {{"loss", mean_loss}});
      }
      if (at.step % c.train.log_every == 0 || at.step == c.train.steps) {
        window_loss = 0;
        window = 0;
      }
      if (at.step % c.train.checkpoint_every == 0 || at.step == c.train.steps) {
        at.extra = nlohmann::json::object({{"window_loss", window_loss}, {"window_steps", window}});
        checkpoints.save(at);
      }
    }
    if (at.step < c.train.steps) at.next_epoch();
  }
  progress.finish();
  if (!dp.writes()) return;

  const Evaluation e = evaluate(model, test, device);
  const auto figure = run.figure_path("count24");
  draw_figure(model, test, c.figure.sequences, loss_steps, losses, figure, e.accuracy, device);
  run.log_figures(at.step);
  nlohmann::json summary{{"test_accuracy", e.accuracy},
                         {"test_loss", e.loss},
                         {"attention_on_2s_4s", e.attention_on_2s_4s},
                         {"test_sequences", test.size()},
                         {"test_sequences_with_2s_or_4s", e.sequences_with_2s_or_4s},
                         {"steps", at.step},
                         {"final_train_loss", losses.empty() ? NAN : losses.back()},
                         {"best_test_accuracy", checkpoints.best_value().value_or(NAN)},
                         {"parameters", model.num_parameters()},
                         {"device", device.str()},
                         {"figure", figure.filename().string()},
                         {"data_parallel", dp.summary()}};
  run.write_summary(summary);
  fmt::print("test_accuracy {:.4f}  attention_on_2s_4s {:.3f}  ({} test sequences)\n", e.accuracy,
             e.attention_on_2s_4s, test.size());
  fmt::print("figure: {}\nsummary: {}\n", figure.string(), run.summary_path().string());
}

// ------------------------------------------------------------------ eval

// Scores a run's checkpoint (best or latest) on fresh test sequences.
void eval(Count24Settings& c, Settings& settings, const std::string& run_dir, const std::string& which) {
  load_run_settings(settings, run_dir);
  const Device device = usable_device(c.device);
  Generator gen(static_cast<uint64_t>(c.seed));
  count24::Count24Model model(c.model.embedding_dim, c.model.hidden, gen);
  const std::filesystem::path checkpoint = run_checkpoint_folder(run_dir, which);
  const std::string folder = checkpoint.filename().string();
  model.load_state_dict(load_checkpoint(checkpoint).model);
  model.to(device);
  const Evaluation e = evaluate(model, make_count24(c.data.test_size, static_cast<uint64_t>(c.seed) + 1000003), device);
  fmt::print("{} checkpoint {}: test_accuracy {:.4f}  test_loss {:.4f}  attention_on_2s_4s {:.3f}\n", which, folder,
             e.accuracy, e.loss, e.attention_on_2s_4s);
}

}  // namespace

int main(int argc, char** argv) {
  Count24Settings c;
  Settings settings;
  declare(settings, c);
  AppCommandLine cli("count24", "count24: a single learned query learns whether 10 digits hold more 2s than 4s",
                     settings);
  cli.on_train([&](const TrainRequest& request) { train(c, settings, request); });
  std::string run_dir, which = "best";
  cli.add_job("eval", "score a run's checkpoint on fresh test sequences", [&] { eval(c, settings, run_dir, which); })
      .required_path("run", run_dir, "the run folder")
      .choice("--checkpoint", which, {"best", "latest"}, "which checkpoint");
  return cli.run(argc, argv);
}
