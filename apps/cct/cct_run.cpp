// The train and eval jobs of the cct app (see cct_run.h).
// Shapes: letters of shape_legend.h; C here is the number of classes.
#include "apps/cct/cct_run.h"

#include <chrono>
#include <cmath>

#include <fmt/ranges.h>

#include "apps/cct/cct_data.h"
#include "apps/common/mask_generators.h"
#include "nn/mask_rows.h"
#include "apps/common/data_parallel.h"
#include "apps/common/device_setting.h"
#include "apps/common/finite_guard.h"
#include "apps/common/progress.h"
#include "apps/common/run_checkpoints.h"
#include "apps/common/run_dir.h"
#include "datasets/data_loader.h"
#include "nn/adam.h"
#include "nn/atomic_file.h"
#include "nn/checkpoint.h"
#include "nn/losses.h"
#include "nn/lr_schedule.h"
#include "tensor/autocast.h"

namespace posgrad::cct_app {

using namespace posgrad::apps;

namespace {

struct Evaluation {
  double loss = 0, accuracy = 0;
  int64_t images = 0;
};

Evaluation evaluate(CctModel& model, std::shared_ptr<const Dataset> raw, int64_t batch, Device device) {
  NoGradGuard no_grad;
  model.eval();
  Evaluation e;
  DataLoader loader(evaluation_view(std::move(raw)), batch, /*shuffle=*/false, 0, /*drop_last=*/false, /*prefetch=*/1);
  int64_t correct = 0;
  double loss_sum = 0;
  for (const Batch& b : loader.epoch(0)) {
    Variable logits = model.forward(Variable(b.input.to(device)));  // [B, C]
    loss_sum += cross_entropy(logits, b.target.to(device), Reduction::Sum).item();
    const auto predicted = argmax(logits.value(), 1).to(kCPU).to_vector<int64_t>();
    const auto y = b.target.to_vector<int64_t>();
    for (size_t i = 0; i < y.size(); ++i) correct += predicted[i] == y[i];
    e.images += static_cast<int64_t>(y.size());
  }
  e.loss = loss_sum / static_cast<double>(e.images);
  e.accuracy = static_cast<double>(correct) / static_cast<double>(e.images);
  model.train();
  return e;
}


}  // namespace

void train(const CctSettings& c, const Settings& settings, const TrainRequest& request) {
  const AutocastBf16 autocast(c.train.autocast == "bf16");  // matmuls of training, validation and test
  DataParallel dp(usable_device(c.device));
  const Device device = dp.device();
  dp.shard(c.train.batch_size, "train.batch_size");  // refuses a batch the ranks cannot share
  const uint64_t seed = dp.seed(static_cast<uint64_t>(c.seed));
  const CctData data = load_cct_data(c);
  Generator gen(seed);
  CctModel model(model_config(c), gen);
  model.to(device);
  dp.replicate(model);
  AdamW opt(model.parameters(), {.lr = c.train.lr, .weight_decay = c.train.weight_decay});
  const AugmentSettings augment = train_augmentation(c);
  const DataLoaderOptions loader_options{.batch_size = c.train.batch_size, .shuffle = true, .seed = seed,
                                         .drop_last = true, .prefetch = c.train.workers_prefetch};
  // Each image's augmentation depends on (seed, epoch, image) only, so it is the same whichever
  // rank draws it.
  const auto epoch_loader = [&](int64_t epoch) {
    return DataLoader(std::make_shared<AugmentedImages>(data.train, augment, seed, epoch), loader_options);
  };
  const int64_t batches = epoch_loader(0).num_batches();
  if (batches == 0)
    fail("the training split ({} images) is smaller than one batch (train.batch_size {})", data.train->size(),
         c.train.batch_size);
  const WarmupCosineLR schedule(c.train.lr, c.train.warmup_epochs * batches, c.train.epochs * batches);
  auto generators = mask_generators(model);

  RunDir run = dp.open_run_dir(request, settings, dp.describe(c.train.batch_size, 1, c.train.lr));
  RunCheckpoints checkpoints(run, model, opt, gen, {.metric = "val_acc", .higher_is_better = true});
  TrainingPosition at;
  double loss_sum = 0, train_seconds = 0, best_val = -1, test_at_best_val = 0;
  int64_t loss_batches = 0, best_val_epoch = 0;
  std::vector<double> test_accs;  // per finished epoch
  if (request.resume) {
    at = dp.restore(checkpoints);
    run.drop_metrics_after(at.step);
    loss_sum = at.extra.value("loss_sum", 0.0);
    loss_batches = at.extra.value("loss_batches", int64_t{0});
    train_seconds = at.extra.value("train_seconds", 0.0);
    best_val = at.extra.value("best_val", -1.0);
    test_at_best_val = at.extra.value("test_at_best_val", 0.0);
    best_val_epoch = at.extra.value("best_val_epoch", int64_t{0});
    test_accs = at.extra.value("test_accs", std::vector<double>{});
    restore_mask_generator_states(at.extra.value("mask_generators", nlohmann::json::object()), generators);
  }
  const auto save = [&](const TrainingPosition& where) {
    TrainingPosition p = where;
    const nlohmann::json states = mask_generator_states(generators);
    p.extra = {{"loss_sum", loss_sum},         {"loss_batches", loss_batches},   {"train_seconds", train_seconds},
               {"best_val", best_val},         {"test_at_best_val", test_at_best_val},
               {"best_val_epoch", best_val_epoch}, {"test_accs", test_accs},     {"mask_generators", states}};
    checkpoints.save(p);
  };
  const int64_t total_steps = c.train.max_steps > 0 ? std::min(c.train.max_steps, batches * c.train.epochs)
                                                    : batches * c.train.epochs;
  fmt::print("cct: {} parameters on {}, {} tokens ({}x{}), scheme {}; {} train / {} val / {} test images (test: {}); "
             "epochs {}..{} of {} batches, run folder {}\n",
             model.num_parameters(), device.str(), model.token_grid()[0] * model.token_grid()[1], model.token_grid()[0],
             model.token_grid()[1], c.model.positional, data.train->size(), data.val->size(), data.test->size(),
             data.test_source, at.epoch, c.train.epochs, batches, run.path().string());
  std::fflush(stdout);

  Progress progress(total_steps, "train");
  progress.start_at(at.step);
  const auto reached_max = [&] { return c.train.max_steps > 0 && at.step >= c.train.max_steps; };
  while (at.epoch < c.train.epochs && !reached_max()) {
    // This rank's slice of each remaining batch of the epoch's seeded order.
    const DataLoader loader = epoch_loader(at.epoch);
    auto mine = distributed::shard_batches(loader.batch_indices(at.epoch), dp.rank(), dp.size(), "train.batch_size");
    mine.erase(mine.begin(), mine.begin() + std::min<int64_t>(at.batch_in_epoch, static_cast<int64_t>(mine.size())));
    for (const Batch& b : Epoch(loader.dataset(), std::move(mine), c.train.workers_prefetch)) {
      const auto t0 = std::chrono::steady_clock::now();
      opt.set_lr(schedule.lr_at(at.step));
      // Dropout and DropPath masks: the single process's masks of this rank's rows (nn/mask_rows.h).
      const int64_t rows = b.input.size(0);
      const MaskRowsScope mask_rows({.first = dp.rank() * rows, .count = rows, .global = c.train.batch_size});
      Variable logits = model.forward(Variable(b.input.to(device)));  // [B/p, C]
      Variable loss = cross_entropy(logits, b.target.to(device), Reduction::Mean, -100, c.train.label_smoothing);
      const double value = loss.item();
      check_finite_loss(value, at.step + 1, checkpoints.latest_path());
      loss_sum += dp.mean(value);  // the mean over the ranks of their slices' losses: the batch's loss
      opt.zero_grad();
      dp.overlap_next_backward();
      loss.backward();
      dp.average_gradients();
      check_finite_gradients(model, at.step + 1, checkpoints.latest_path());
      opt.step();
      ++at.step;
      ++at.batch_in_epoch;
      ++loss_batches;
      train_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      progress.update(at.step, {{"loss", loss_sum / static_cast<double>(loss_batches)}});
      if (reached_max()) break;
    }
    // The end of an epoch (or of a max_steps run): validation, test, the metrics line and the
    // checkpoints, on rank 0 (the others only keep the running sums in step).
    const bool epoch_done = at.batch_in_epoch >= batches;
    if (!dp.writes()) {
      loss_sum = 0;
      loss_batches = 0;
      train_seconds = 0;
      if (epoch_done) at.next_epoch();
      continue;
    }
    const Evaluation val = evaluate(model, data.val, c.train.eval_batch_size, device);
    const Evaluation test = evaluate(model, data.test, c.train.eval_batch_size, device);
    test_accs.push_back(test.accuracy);
    const bool better = val.accuracy > best_val;
    if (better) {
      best_val = val.accuracy;
      best_val_epoch = at.epoch + 1;
      test_at_best_val = test.accuracy;
    }
    const double samples = static_cast<double>(loss_batches * c.train.batch_size);
    nlohmann::json record{{"step", at.step},
                          {"epoch", at.epoch + 1},
                          {"epoch_done", epoch_done},
                          {"train_loss", loss_sum / static_cast<double>(std::max<int64_t>(1, loss_batches))},
                          {"val_loss", val.loss},
                          {"val_acc", val.accuracy},
                          {"test_acc", test.accuracy},
                          {"lr", schedule.lr_at(std::max<int64_t>(0, at.step - 1))},
                          {"time_per_sample_s", samples > 0 ? train_seconds / samples : 0.0}};
    run.log_metrics(record);
    progress.print(fmt::format("epoch {}: train_loss {:.4f}  val_acc {:.4f}  test_acc {:.4f}  {:.2f} ms/sample", at.epoch + 1,
                               record["train_loss"].get<double>(), val.accuracy, test.accuracy,
                               1e3 * record["time_per_sample_s"].get<double>()));
    loss_sum = 0;
    loss_batches = 0;
    train_seconds = 0;
    if (epoch_done) at.next_epoch();
    save(at);
    checkpoints.offer_best(at, val.accuracy);
  }
  progress.finish();
  if (!dp.writes()) return;

  // Flat keys, so that posgrad-sweep can take any of them as its metric.
  nlohmann::json summary{{"test_acc_of_best_val", test_at_best_val},  // the honest metric
                         {"best_val_acc", best_val},
                         {"best_val_epoch", best_val_epoch},
                         {"test_acc_last", test_accs.empty() ? 0.0 : test_accs.back()},
                         {"epochs", at.epoch},
                         {"steps", at.step},
                         {"scheme", c.model.positional},
                         {"parameters", model.num_parameters()},
                         {"train_images", data.train->size()},
                         {"val_images", data.val->size()},
                         {"test_images", data.test->size()},
                         {"test_source", data.test_source},
                         {"seconds", run.seconds_since_open()},
                         {"device", device.str()},
                         {"data_parallel", dp.summary()},
                         {"best_checkpoint", checkpoints.best_path().filename().string()}};
  std::string paper;
  for (int64_t upto : c.train.paper_epochs) {  // the paper's metric: the best test accuracy up to an epoch
    double best = 0;
    for (size_t e = 0; e < test_accs.size() && static_cast<int64_t>(e) < upto; ++e) best = std::max(best, test_accs[e]);
    summary[fmt::format("best_test_acc_upto_epoch_{}", upto)] = best;
    paper += fmt::format("  up to epoch {}: {:.4f}", upto, best);
  }
  run.write_summary(summary);
  fmt::print("paper metric (best test accuracy){}\nhonest metric: test accuracy {:.4f} of the checkpoint with the best "
             "validation accuracy {:.4f} (epoch {})\nsummary: {}\n",
             paper, test_at_best_val, best_val, best_val_epoch, run.summary_path().string());
}

void eval(CctSettings& c, Settings& settings, const std::string& run_dir, const std::string& which,
          const std::string& split) {
  load_run_settings(settings, run_dir);
  const Device device = usable_device(c.device);
  const CctData data = load_cct_data(c);
  const std::filesystem::path checkpoint = run_checkpoint_folder(run_dir, which);
  Generator gen(static_cast<uint64_t>(c.seed));
  CctModel model(model_config(c), gen);
  model.load_state_dict(load_checkpoint(checkpoint).model);
  model.to(device);
  const Evaluation e = evaluate(model, split == "val" ? data.val : data.test, c.train.eval_batch_size, device);
  fmt::print("{} checkpoint {} on the {} split ({} images; test: {}): accuracy {:.4f}  loss {:.4f}\n", which,
             checkpoint.filename().string(), split, e.images, data.test_source, e.accuracy, e.loss);
  write_file_atomically(std::filesystem::path(run_dir) / fmt::format("eval-{}-{}.json", split, which),
                        nlohmann::json{{"checkpoint", checkpoint.filename().string()}, {"split", split},
                                       {"images", e.images}, {"accuracy", e.accuracy}, {"loss", e.loss}}
                            .dump(2));
}

}  // namespace posgrad::cct_app
