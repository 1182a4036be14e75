// The train and eval jobs of the posattn app (see run_jobs.h). The training loop is train()
// below, in one block: per batch forward, cross-entropy, backward; every `accumulation` batches
// one Adam step (the loss is not divided, so the gradient is the sum of the batch means, as the
// thesis); per epoch the validation loss and accuracy, val_acc_max, per-layer sigma, box and
// score share, time per sample; latest and best (val_acc) checkpoints.
// Data parallel under mpirun/srun (apps/common/data_parallel.h): each rank computes its
// contiguous slice of every batch, the gradients are averaged before each Adam step, and rank 0
// alone validates and writes the run folder.
// Shapes: letters of shape_legend.h.
#include "apps/posattn/run_jobs.h"

#include <chrono>
#include <cmath>

#include <fmt/ranges.h>

#include "apps/common/data_parallel.h"
#include "apps/common/device_setting.h"
#include "apps/common/finite_guard.h"
#include "apps/common/progress.h"
#include "apps/common/run_checkpoints.h"
#include "apps/common/run_dir.h"
#include "apps/posattn/image_data.h"
#include "apps/posattn/layer_stats.h"
#include "apps/posattn/run_model.h"
#include "attention/attention_hook.h"
#include "datasets/data_loader.h"
#include "nn/adam.h"
#include "nn/atomic_file.h"
#include "nn/losses.h"
#include "nn/mask_rows.h"
#include "tensor/autocast.h"
#include "tensor/device.h"

namespace posgrad::posattn_app {

using namespace posgrad::apps;

namespace {

struct Evaluation {
  double loss = 0, accuracy = 0;
  int64_t images = 0;
  std::vector<std::vector<int64_t>> confusion;  // [true class][predicted class]
};

Evaluation evaluate(PosattnClassifier& model, std::shared_ptr<const Dataset> data, int64_t batch, int64_t classes,
                    Device device) {
  NoGradGuard no_grad;
  model.eval();
  Evaluation e;
  e.confusion.assign(static_cast<size_t>(classes), std::vector<int64_t>(static_cast<size_t>(classes), 0));
  DataLoader loader(std::move(data), batch, /*shuffle=*/false, 0, /*drop_last=*/false, /*prefetch=*/0);
  int64_t correct = 0;
  double loss_sum = 0;
  for (const Batch& b : loader.epoch(0)) {
    Variable logits = model.forward(Variable(b.input.to(device)));  // [B, classes]
    loss_sum += cross_entropy(logits, b.target.to(device), Reduction::Sum).item();
    const auto z = logits.value().to(kCPU).to_vector<float>();
    const auto y = b.target.to_vector<int64_t>();
    for (size_t i = 0; i < y.size(); ++i) {
      const float* row = z.data() + i * static_cast<size_t>(classes);
      const int64_t predicted = std::max_element(row, row + classes) - row;
      correct += predicted == y[i];
      ++e.confusion[static_cast<size_t>(y[i])][static_cast<size_t>(predicted)];
    }
    e.images += static_cast<int64_t>(y.size());
  }
  e.loss = loss_sum / static_cast<double>(e.images);
  e.accuracy = static_cast<double>(correct) / static_cast<double>(e.images);
  model.train();
  return e;
}

// The Dropout generators of the model (each owns one): saved with every checkpoint so that a
// resumed run draws the same masks.
std::vector<std::pair<std::string, Generator*>> dropout_generators(PosattnClassifier& model) {
  std::vector<std::pair<std::string, Generator*>> out;
  for (const auto& [name, module] : model.named_modules())
    if (auto* d = dynamic_cast<Dropout*>(const_cast<Module*>(module))) out.emplace_back(name, &d->generator());
  return out;
}

// A parameter holding NaN/Inf, for the message of a non-finite loss ("" when none does).
std::string first_nonfinite_parameter(const Module& model) {
  for (const auto& [name, p] : model.named_parameters())
    for (float v : p.value().to(kCPU).to(kFloat32).to_vector<float>())
      if (!std::isfinite(v)) return name;
  return "";
}

void poison(Module& model, const std::string& name) {
  for (auto& [n, p] : model.named_parameters())
    if (n == name) {
      Tensor& t = p.mutable_value();
      std::vector<float> v = t.to(kCPU).to_vector<float>();
      v[0] = NAN;
      t.copy_(Tensor::from_vector(v, t.shape()).to(t.device()));
      return;
    }
  fail("debug.nan_parameter: the model has no parameter '{}'", name);
}

}  // namespace

void train(const PosattnSettings& c, const Settings& settings, const TrainRequest& request) {
  const AutocastBf16 autocast(c.train.autocast == "bf16");  // matmuls of training and validation
  DataParallel dp(usable_device(c.device));
  const Device device = dp.device();
  dp.shard(c.train.batch_size, "train.batch_size");  // refuses a batch the ranks cannot share
  const ImageSplits data = load_train_val(c);
  Generator gen(dp.seed(static_cast<uint64_t>(c.seed)));
  PosattnClassifier model(model_config(c, data.set.structure, data.set.channels, data.set.classes), gen);
  model.to(device);
  dp.replicate(model);
  AdamOptions adam;
  adam.lr = c.train.lr;
  Adam opt(model.parameters(), adam);
  DataLoader loader(data.parts.train, c.train.batch_size, /*shuffle=*/true, static_cast<uint64_t>(c.seed),
                    /*drop_last=*/true, /*prefetch=*/0);
  const int64_t batches = loader.num_batches();
  if (batches == 0)
    fail("the training split ({} images) is smaller than one batch (train.batch_size {})", loader.dataset_size(),
         c.train.batch_size);
  const Positions positions = model.positions_for(data.set.structure);
  auto dropouts = dropout_generators(model);

  {
    // One image through the model before the run folder exists: a scheme that does not fit the
    // data (a 1-D-only scheme on the grid, ...) stops here. Eval mode draws no dropout mask.
    NoGradGuard no_grad;
    model.eval();
    model.forward(Variable(data.parts.val->get_batch({0}).input.to(device)));
    model.train();
  }
  RunDir run = dp.open_run_dir(request, settings, dp.describe(c.train.batch_size, c.train.accumulation, c.train.lr));
  RunCheckpoints checkpoints(run, model, opt, gen, {.metric = "val_acc", .higher_is_better = true});
  TrainingPosition at;
  // Running sums of the current epoch, and the best accuracy so far: saved in every checkpoint.
  double loss_sum = 0, train_seconds = 0, val_acc_max = 0;
  int64_t loss_batches = 0;
  if (request.resume) {
    at = dp.restore(checkpoints);
    run.drop_metrics_after(at.step);
    loss_sum = at.extra.value("loss_sum", 0.0);
    loss_batches = at.extra.value("loss_batches", int64_t{0});
    train_seconds = at.extra.value("train_seconds", 0.0);
    val_acc_max = at.extra.value("val_acc_max", 0.0);
    const nlohmann::json states = at.extra.value("dropout_generators", nlohmann::json::object());
    for (auto& [name, g] : dropouts)
      if (states.contains(name)) g->set_state(states[name][0].get<uint64_t>(), states[name][1].get<uint64_t>());
  }
  const auto save = [&](const TrainingPosition& where) {
    TrainingPosition p = where;
    nlohmann::json states = nlohmann::json::object();
    for (auto& [name, g] : dropouts) states[name] = {g->seed(), g->offset()};
    p.extra = {{"loss_sum", loss_sum}, {"loss_batches", loss_batches}, {"train_seconds", train_seconds},
               {"val_acc_max", val_acc_max}, {"dropout_generators", states}};
    checkpoints.save(p);
  };
  const int64_t steps_per_epoch = (batches + c.train.accumulation - 1) / c.train.accumulation;
  const int64_t total_steps = c.train.max_steps > 0 ? std::min(c.train.max_steps, steps_per_epoch * c.train.epochs)
                                                    : steps_per_epoch * c.train.epochs;
  fmt::print("posattn: {} parameters on {}, {} {} images ({} train / {} val), structure [{}], {}-D {}{}; epochs {}..{} of "
             "{} batches ({} Adam steps each), run folder {}\n",
             model.num_parameters(), device.str(), data.set.all->size(), c.data.dataset, data.parts.train->size(),
             data.parts.val->size(), fmt::join(data.set.structure, ", "), c.model.positional_dims, c.model.positional,
             c.model.span ? fmt::format(" + span t={}", c.model.threshold) : "", at.epoch, c.train.epochs, batches,
             steps_per_epoch, run.path().string());
  std::fflush(stdout);

  Progress progress(total_steps, "train");
  progress.start_at(at.step);  // updates come every train.log_every steps
  bool poisoned = false;
  const auto reached_max = [&] { return c.train.max_steps > 0 && at.step >= c.train.max_steps; };
  while (at.epoch < c.train.epochs && !reached_max()) {
    int64_t pending = 0;  // batches whose gradient waits for the next optimizer step
    // This rank's slice of each remaining batch of the epoch's seeded order.
    auto mine = distributed::shard_batches(loader.batch_indices(at.epoch), dp.rank(), dp.size(), "train.batch_size");
    mine.erase(mine.begin(), mine.begin() + std::min<int64_t>(at.batch_in_epoch, static_cast<int64_t>(mine.size())));
    Epoch epoch(loader.dataset(), std::move(mine), /*prefetch=*/0);
    for (const Batch& b : epoch) {
      if (!c.debug.nan_parameter.empty() && !poisoned && at.step == c.debug.nan_at_step && pending == 0) {
        poison(model, c.debug.nan_parameter);
        poisoned = true;
      }
      const auto t0 = std::chrono::steady_clock::now();
      // Dropout masks: the single process's masks of this rank's rows (nn/mask_rows.h).
      const int64_t rows = b.input.size(0);
      const MaskRowsScope mask_rows({.first = dp.rank() * rows, .count = rows, .global = c.train.batch_size});
      Variable logits = model.forward(Variable(b.input.to(device)));  // [B, classes]
      Variable loss = cross_entropy(logits, b.target.to(device));
      const double value = loss.item();
      if (!std::isfinite(value)) {
        const std::string bad = first_nonfinite_parameter(model);
        if (!bad.empty())
          fail("training stopped at step {}: the loss is {} and the parameter '{}' holds NaN/Inf; {}", at.step + 1, value,
               bad,
               checkpoints.latest_path().empty() ? "no checkpoint was written yet"
                                                 : fmt::format("the last good checkpoint is '{}'", checkpoints.latest_path().string()));
        check_finite_loss(value, at.step + 1, checkpoints.latest_path());
      }
      loss_sum += dp.mean(value);  // the mean over the ranks of their slices' losses: the batch's loss
      ++loss_batches;
      const bool steps_now = pending + 1 == c.train.accumulation || at.batch_in_epoch + 1 == batches;
      if (steps_now) dp.overlap_next_backward();  // only the last micro-batch's backward communicates
      loss.backward();
      ++at.batch_in_epoch;
      ++pending;
      if (steps_now) {
        dp.average_gradients();
        check_finite_gradients(model, at.step + 1, checkpoints.latest_path());
        opt.step();
        after_optimizer_step(model);
        opt.zero_grad();
        ++at.step;
        pending = 0;
      }
      train_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (pending == 0) {
        progress.update(at.step, {{"loss", loss_sum / static_cast<double>(loss_batches)}});
        if (reached_max()) break;
        if (c.train.checkpoint_every > 0 && at.step % c.train.checkpoint_every == 0 && at.batch_in_epoch < batches)
          save(at);
      }
    }
    // The end of an epoch (or of a max_steps run): validation, the metrics line, checkpoints,
    // on rank 0 (the others only keep the running sums in step).
    const bool epoch_done = at.batch_in_epoch >= batches;
    if (!dp.writes()) {
      loss_sum = 0;
      loss_batches = 0;
      train_seconds = 0;
      if (epoch_done) at.next_epoch();
      continue;
    }
    const Evaluation e = evaluate(model, data.parts.val, c.train.eval_batch_size, data.set.classes, device);
    val_acc_max = std::max(val_acc_max, e.accuracy);
    const auto layers = layer_stats(model, positions);
    const double samples = static_cast<double>(loss_batches * c.train.batch_size);
    nlohmann::json record{{"step", at.step},
                          {"epoch", at.epoch + 1},
                          {"epoch_done", epoch_done},
                          {"train_loss", loss_sum / static_cast<double>(std::max<int64_t>(1, loss_batches))},
                          {"val_loss", e.loss},
                          {"val_acc", e.accuracy},
                          {"val_acc_max", val_acc_max},
                          {"lr", c.train.lr},
                          {"time_per_sample_s", samples > 0 ? train_seconds / samples : 0.0},
                          {"score_share", mean_computed_share(layers)},
                          {"layers", to_json(layers)}};
    run.log_metrics(record);
    progress.print(fmt::format("epoch {}: train_loss {:.4f}  val_loss {:.4f}  val_acc {:.4f}  val_acc_max {:.4f}  "
                               "{:.2f} ms/sample  score share {:.3f}",
                               at.epoch + 1, record["train_loss"].get<double>(), e.loss, e.accuracy, val_acc_max,
                               1e3 * record["time_per_sample_s"].get<double>(), mean_computed_share(layers)));
    loss_sum = 0;
    loss_batches = 0;
    train_seconds = 0;
    if (epoch_done) at.next_epoch();
    save(at);
    checkpoints.offer_best(at, e.accuracy);
  }
  progress.finish();
  if (!dp.writes()) return;

  const auto records = run.read_metrics();
  if (records.empty()) fail("the run logged no epoch (nothing to summarise)");
  const nlohmann::json& last = records.back();
  nlohmann::json summary{{"val_acc_max", val_acc_max},
                         {"val_acc_last", last.at("val_acc")},
                         {"val_loss_last", last.at("val_loss")},
                         {"train_loss_last", last.at("train_loss")},
                         {"epochs", at.epoch},
                         {"steps", at.step},
                         {"time_per_sample_s", last.at("time_per_sample_s")},
                         {"score_share", last.at("score_share")},
                         {"layers", last.at("layers")},
                         {"parameters", model.num_parameters()},
                         {"train_images", data.parts.train->size()},
                         {"val_images", data.parts.val->size()},
                         {"device", device.str()},
                         {"best_checkpoint", checkpoints.best_path().filename().string()},
                         {"data_parallel", dp.summary()}};
  run.write_summary(summary);
  fmt::print("val_acc_max {:.4f}  val_acc (last) {:.4f}  summary: {}\n", val_acc_max, last.at("val_acc").get<double>(),
             run.summary_path().string());
}

void eval(PosattnSettings& c, Settings& settings, const std::string& run_dir, const std::string& which,
          const std::string& split) {
  load_run_settings(settings, run_dir);
  const Device device = usable_device(c.device);
  ImageSet set;
  std::shared_ptr<const Dataset> images;
  if (split == "val") {
    ImageSplits data = load_train_val(c);
    set = data.set;
    images = data.parts.val;
  } else {
    set = load_test(c);
    images = set.all;
  }
  LoadedModel m = load_run_model(c, run_dir, which, set);
  m.model->to(device);
  const Evaluation e = evaluate(*m.model, images, c.train.eval_batch_size, set.classes, device);
  fmt::print("{} checkpoint {} on the {} split ({} images): accuracy {:.4f}  loss {:.4f}\n", which, m.folder, split,
             e.images, e.accuracy, e.loss);
  fmt::print("confusion matrix (rows: true class, columns: predicted):\n{:>12}", "");
  for (int64_t j = 0; j < set.classes; ++j) fmt::print(" {:>5}", set.class_names[static_cast<size_t>(j)].substr(0, 5));
  fmt::print("\n");
  for (int64_t i = 0; i < set.classes; ++i) {
    fmt::print("{:>12}", set.class_names[static_cast<size_t>(i)]);
    for (int64_t j = 0; j < set.classes; ++j) fmt::print(" {:>5}", e.confusion[static_cast<size_t>(i)][static_cast<size_t>(j)]);
    fmt::print("\n");
  }
  // Only eval writes this file, atomically: eval takes no lock, and runs beside a training of the run.
  write_file_atomically(std::filesystem::path(run_dir) / fmt::format("eval-{}-{}.json", split, which),
                        nlohmann::json{{"checkpoint", m.folder}, {"split", split}, {"images", e.images},
                                       {"accuracy", e.accuracy}, {"loss", e.loss}, {"confusion", e.confusion},
                                       {"classes", set.class_names}}
                            .dump(2));
}

}  // namespace posgrad::posattn_app
