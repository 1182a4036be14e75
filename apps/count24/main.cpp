// count24: trains the single-query attention model to decide whether a sequence of ten digits
// holds more 2s than 4s, then writes its run folder: config.yaml, metrics.jsonl, checkpoint/,
// summary.json (test accuracy on fresh sequences, attention mass on 2s and 4s) and count24.png
// (the attention of a batch with each digit in its cell, the values where attention > 0.1, and
// the loss curve). `count24 --help` lists the config keys.
#include <cmath>
#include <memory>

#include "apps/common/cli.h"
#include "apps/common/plot.h"
#include "apps/common/progress.h"
#include "apps/common/run_dir.h"
#include "apps/count24/count24_model.h"
#include "datasets/count24.h"
#include "datasets/data_loader.h"
#include "nn/adam.h"
#include "tensor/device.h"
#include "nn/checkpoint.h"
#include "nn/sgd.h"

using namespace posgrad;
using namespace posgrad::apps;

namespace {

std::unique_ptr<Optimizer> make_optimizer(const std::string& kind, std::vector<Variable> params, double lr) {
  if (kind == "adam") {
    AdamOptions o;
    o.lr = lr;
    return std::make_unique<Adam>(std::move(params), o);
  }
  if (kind == "adamw") {
    AdamWOptions o;
    o.lr = lr;
    return std::make_unique<AdamW>(std::move(params), o);
  }
  if (kind == "sgd") {
    SGDOptions o;
    o.lr = lr;
    o.momentum = 0.9;
    return std::make_unique<SGD>(std::move(params), o);
  }
  fail("train.optimizer: unknown optimizer '{}' (valid: adam, adamw, sgd)", kind);
}

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

void run(const CommandLine& cl) {
  const Config& c = cl.config;
  const auto seed = static_cast<uint64_t>(c.get<int64_t>("seed"));
  const int64_t steps = c.get<int64_t>("train.steps");
  const int64_t batch = c.get<int64_t>("train.batch_size");
  const int64_t log_every = std::max<int64_t>(1, c.get<int64_t>("train.log_every"));
  const int64_t eval_every = std::max<int64_t>(1, c.get<int64_t>("train.eval_every"));
  const int64_t ckpt_every = std::max<int64_t>(1, c.get<int64_t>("train.checkpoint_every"));
  const double lr = c.get<double>("train.lr");
  if (steps <= 0 || batch <= 0) fail("train.steps and train.batch_size must be positive");
  if (!(lr > 0)) fail("train.lr must be positive, got {}", lr);

  const Count24 train = make_count24(c.get<int64_t>("data.train_size"), seed);
  const Count24 test = make_count24(c.get<int64_t>("data.test_size"), seed + 1000003);  // fresh sequences

  // The device: "cpu", "cuda" or "cuda:N". Asking for a GPU that is not there (or a CPU-only
  // build) stops here with an error that says why, before any work.
  const Device device = Device::parse(c.get<std::string>("device"));
  if (!device.is_cpu()) require_device(device);

  Generator gen(seed);  // parameters are initialised on the CPU (same numbers on every device)
  count24::Count24Model model(c.get<int64_t>("model.embedding_dim"), c.get<int64_t>("model.hidden"), gen);
  model.to(device);
  auto opt = make_optimizer(c.get<std::string>("train.optimizer"), model.parameters(), lr);
  // prefetch 0: batches are an in-memory index_select, and a worker thread would compete with
  // the OpenMP threads on small machines.
  DataLoader loader(train.dataset(), batch, /*shuffle=*/true, seed, /*drop_last=*/true, /*prefetch=*/0);
  if (loader.num_batches() == 0) fail("data.train_size ({}) is smaller than one batch ({})", train.size(), batch);
  const int64_t figure_rows = c.get<int64_t>("figure.sequences");
  if (!c.unused_keys().empty()) fail("config keys never used: {}", fmt::join(c.unused_keys(), ", "));

  RunDir run_dir = open_run_dir(cl);
  fmt::print("count24: {} parameters on {}, {} steps of batch {}, run folder {}\n", model.num_parameters(), device.str(),
             steps, batch, run_dir.path().string());
  Progress progress(steps, "train");
  std::vector<double> loss_steps, losses;
  double window_loss = 0;
  int64_t window = 0, step = 0, epoch = 0, skipped = 0;
  auto save = [&] {
    Checkpoint ck;
    ck.step = step;
    ck.model = model.state_dict();
    ck.optimizer = opt->state();
    ck.rng_seed = gen.seed();
    ck.rng_offset = gen.offset();
    ck.extra_json = nlohmann::json{{"epoch", epoch}}.dump();
    save_checkpoint(run_dir.checkpoint_path("checkpoint"), ck);
  };
  while (step < steps) {
    for (const Batch& b : loader.epoch(epoch)) {
      if (step >= steps) break;
      auto out = model.run(b.input.to(device));
      Variable loss = binary_cross_entropy(out.probability, b.target.to(device));
      const double value = loss.item();
      if (!std::isfinite(value)) {
        save();
        fail("training diverged: the loss is {} at step {} (lr {}); the last parameters are saved in {}", value,
             step, lr, run_dir.checkpoint_path("checkpoint").string());
      }
      opt->zero_grad();
      loss.backward();
      if (has_nonfinite_grad(model.parameters())) {
        ++skipped;  // a NaN/Inf gradient is never applied
        if (skipped > 10) fail("more than 10 steps had non-finite gradients (last at step {})", step);
        continue;
      }
      opt->step();
      ++step;
      window_loss += value;
      ++window;
      if (step % log_every == 0 || step == steps) {
        const double mean_loss = window_loss / static_cast<double>(window);
        loss_steps.push_back(static_cast<double>(step));
        losses.push_back(mean_loss);
        nlohmann::json rec{{"step", step}, {"loss", mean_loss}, {"lr", lr}, {"time_s", run_dir.seconds_since_open()}};
        if (step % eval_every == 0 || step == steps) {
          const Evaluation e = evaluate(model, test, device);
          rec["test_accuracy"] = e.accuracy;
          rec["test_loss"] = e.loss;
          rec["attention_on_2s_4s"] = e.attention_on_2s_4s;
        }
        run_dir.log_metrics(rec);
        progress.update(step, {{"loss", mean_loss}});
        window_loss = 0;
        window = 0;
      }
      if (step % ckpt_every == 0 || step == steps) save();
    }
    ++epoch;
  }
  progress.finish();

  const Evaluation e = evaluate(model, test, device);
  const auto figure = run_dir.figure_path("count24");
  draw_figure(model, test, figure_rows, loss_steps, losses, figure, e.accuracy, device);
  nlohmann::json summary{{"test_accuracy", e.accuracy},
                         {"test_loss", e.loss},
                         {"attention_on_2s_4s", e.attention_on_2s_4s},
                         {"test_sequences", test.size()},
                         {"test_sequences_with_2s_or_4s", e.sequences_with_2s_or_4s},
                         {"steps", step},
                         {"skipped_nonfinite_steps", skipped},
                         {"final_train_loss", losses.empty() ? NAN : losses.back()},
                         {"parameters", model.num_parameters()},
                         {"device", device.str()},
                         {"seconds", run_dir.seconds_since_open()},
                         {"figure", figure.filename().string()}};
  run_dir.write_summary(summary);
  fmt::print("test_accuracy {:.4f}  attention_on_2s_4s {:.3f}  ({} test sequences)\n", e.accuracy,
             e.attention_on_2s_4s, test.size());
  fmt::print("figure: {}\nsummary: {}\n", figure.string(), run_dir.summary_path().string());
}

}  // namespace

int main(int argc, char** argv) {
  CommandLineOptions options;
  options.description = "count24: a single learned query learns whether 10 digits hold more 2s than 4s";
  return app_main(argc, argv, "count24", run, {}, options);
}
