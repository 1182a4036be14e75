// The transduction apps' train and eval jobs (see transduction_run.h).
// Shapes: letters of shape_legend.h (N source tokens, T decoder steps, V vocabulary).
#include "apps/transduction_common/transduction_run.h"

#include <cmath>
#include <numeric>

#include "apps/common/data_parallel.h"
#include "apps/common/device_setting.h"
#include "apps/common/mask_generators.h"
#include "apps/common/finite_guard.h"
#include "apps/common/progress.h"
#include "apps/common/run_checkpoints.h"
#include "attention/transduction/greedy_decoding.h"
#include "datasets/transduction/transduction_metrics.h"
#include "nn/adam.h"
#include "nn/atomic_file.h"
#include "nn/checkpoint.h"
#include "nn/losses.h"
#include "nn/mask_rows.h"
#include "nn/token_counts.h"
#include "nn/lr_schedule.h"

namespace posgrad::transduction_app {

using namespace posgrad::apps;

namespace {

// The training order of one epoch: a permutation of 0..n-1 drawn from (seed, epoch) alone, so a
// resumed run reads the same order.
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch) {
  Generator gen(seed * 1000003ULL + static_cast<uint64_t>(epoch) + 1);
  return randperm(n, gen).to_vector<int64_t>();
}

// The rows of a global batch of B rows that a rank computes: contiguous, the first B mod size
// ranks one more than the others (even shards, as distributed/data_shard.h cuts them, whenever
// size divides B; the last batch of an epoch may be smaller).
struct Rows {
  int64_t first = 0, count = 0;
};
Rows rows_of_rank(int64_t B, int rank, int size) {
  const int64_t r = rank, n = size;
  const int64_t first = r * B / n, end = (r + 1) * B / n;
  return {first, end - first};
}

// Rows [first, first + count) of every tensor of the batch, with the whole batch's padding; a
// count of 0 gives the first row (computed with weight 0: see train()).
static_assert(sizeof(TransductionBatch) == 9 * sizeof(Tensor),
              "batch_rows cuts the 9 tensors of TransductionBatch: cut a new field too");
TransductionBatch batch_rows(const TransductionBatch& b, Rows rows) {
  const int64_t first = rows.count > 0 ? rows.first : 0, count = std::max<int64_t>(rows.count, 1);
  const auto cut = [&](const Tensor& x) { return x.defined() ? x.narrow(0, first, count).contiguous() : x; };
  return {.source = cut(b.source),
          .source_mask = cut(b.source_mask),
          .decoder_input = cut(b.decoder_input),
          .decoder_target = cut(b.decoder_target),
          .target_mask = cut(b.target_mask),
          .input_mask = cut(b.input_mask),
          .decoder_mask = cut(b.decoder_mask),
          .source_heap = cut(b.source_heap),
          .decoder_heap = cut(b.decoder_heap)};
}


}  // namespace

TransductionExperiment shared_experiment(const TransductionSettings& c, const std::string& app,
                                         const std::string& description) {
  TransductionExperiment x;
  x.device = apps::usable_device(c.device);
  x.app = app;
  x.description = description;
  x.seed = static_cast<uint64_t>(c.seed);
  x.train = c.train;
  return x;
}

std::vector<bool> sequence_greedy_matches(EncoderDecoder& model, const std::vector<TransductionExample>& examples,
                                          const std::vector<int64_t>& indices, const TransductionBatch& batch) {
  const int64_t B = batch.size();
  std::vector<int64_t> first(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) first[static_cast<size_t>(b)] = examples[static_cast<size_t>(indices[b])].target[0];
  const Tensor decoded = greedy_decode(model, batch.source, batch.source_padding(),
                                       Tensor::from_vector<int64_t>(first, {B}).to(batch.source.device()), {.steps = batch.decoder_input.size(1)});
  const auto tokens = decoded.to_vector<int64_t>();  // [B, T + 1]
  const size_t width = static_cast<size_t>(decoded.size(1));
  std::vector<bool> right(static_cast<size_t>(B));
  for (size_t b = 0; b < right.size(); ++b) {
    const auto& target = examples[static_cast<size_t>(indices[b])].target;
    right[b] = std::equal(target.begin(), target.end(), tokens.begin() + static_cast<std::ptrdiff_t>(b * width));
  }
  return right;
}

SplitScore score_split(EncoderDecoder& model, const std::vector<TransductionExample>& examples, int64_t batch_size,
                       const GreedyMatcher& greedy_matches) {
  NoGradGuard no_grad;
  const Device device = model.parameters().front().value().device();
  const bool was_training = model.is_training();
  model.eval();
  TokenLoss paper, released;
  int64_t matched = 0;
  const int64_t n = static_cast<int64_t>(examples.size());
  for (int64_t start = 0; start < n; start += batch_size) {
    std::vector<int64_t> indices(static_cast<size_t>(std::min(n, start + batch_size) - start));
    std::iota(indices.begin(), indices.end(), start);
    const TransductionBatch batch = make_transduction_batch(examples, indices).to(device);
    const Tensor logits = model.forward(batch).value();  // [B, T, V]
    paper.add(token_cross_entropy(logits, batch.decoder_target, batch.target_mask));
    released.add(released_token_cross_entropy(logits, batch.decoder_target, batch.target_mask, batch.input_mask));
    if (greedy_matches)
      for (bool right : greedy_matches(model, examples, indices, batch)) matched += right;
  }
  model.train(was_training);
  SplitScore s;
  s.loss = paper.mean();
  s.ppl = paper.perplexity();
  s.ppl_released = released.perplexity();
  s.exact_match = greedy_matches ? static_cast<double>(matched) / static_cast<double>(n) : 0.0;
  s.examples = n;
  return s;
}

void train(const TransductionExperiment& x, const Settings& settings, const TrainRequest& request) {
  const TrainSettings& t = x.train;
  DataParallel dp(x.device);
  const Device device = dp.device();
  dp.shard(t.batch_size, "train.batch_size");  // refuses a batch the ranks cannot share
  const uint64_t seed = dp.seed(x.seed);
  Generator gen(seed);
  EncoderDecoder model(x.model, gen);
  model.to(device);
  dp.replicate(model);
  AdamW opt(model.parameters(), {.lr = t.lr, .weight_decay = t.weight_decay});
  const int64_t n_train = static_cast<int64_t>(x.data.train.size());
  const int64_t batches = (n_train + t.batch_size - 1) / t.batch_size;
  const WarmupCosineLR schedule(t.lr, t.warmup_epochs * batches, t.epochs * batches, 1e-9, 1e-7);
  auto generators = mask_generators(model);

  {  // One forward on a training example before the run folder exists: a model that cannot run
     // on these data (a scheme that does not take their positions) is refused with nothing written.
    NoGradGuard no_grad;
    model.eval();
    model.forward(make_transduction_batch(x.data.train, {0}).to(device));
    model.train();
  }
  RunDir run = dp.open_run_dir(request, settings, dp.describe(t.batch_size, 1, t.lr));
  RunCheckpoints checkpoints(run, model, opt, gen, {.metric = "dev_loss", .higher_is_better = false});
  TrainingPosition at;
  double loss_sum = 0, best_dev = INFINITY;
  int64_t loss_batches = 0, best_epoch = 0;
  if (request.resume) {
    at = dp.restore(checkpoints);
    run.drop_metrics_after(at.step);
    loss_sum = at.extra.value("loss_sum", 0.0);
    loss_batches = at.extra.value("loss_batches", int64_t{0});
    best_dev = at.extra.value("best_dev", static_cast<double>(INFINITY));
    best_epoch = at.extra.value("best_epoch", int64_t{0});
    restore_mask_generator_states(at.extra.value("mask_generators", nlohmann::json::object()), generators);
  }
  const auto save = [&](const TrainingPosition& where) {
    TrainingPosition p = where;
    const nlohmann::json states = mask_generator_states(generators);
    p.extra = {{"loss_sum", loss_sum}, {"loss_batches", loss_batches}, {"best_dev", best_dev},
               {"best_epoch", best_epoch}, {"mask_generators", states}};
    checkpoints.save(p);
  };
  const int64_t total_steps = t.max_steps > 0 ? std::min(t.max_steps, batches * t.epochs) : batches * t.epochs;
  fmt::print("{}: {} ({}), {} parameters; {} train / {} dev / {} test examples; epochs {}..{} of {} batches, run "
             "folder {}\n",
             x.app, x.description, model.positional().summary(), model.num_parameters(), x.data.train.size(),
             x.data.dev.size(), x.data.test.size(), at.epoch, t.epochs, batches, run.path().string());
  std::fflush(stdout);

  Progress progress(total_steps, "train");
  progress.start_at(at.step);
  const auto reached_max = [&] { return t.max_steps > 0 && at.step >= t.max_steps; };
  while (at.epoch < t.epochs && !reached_max()) {
    const std::vector<int64_t> order = epoch_order(n_train, seed, at.epoch);
    for (int64_t b = at.batch_in_epoch; b < batches && !reached_max(); ++b) {
      const int64_t lo = b * t.batch_size, hi = std::min(n_train, lo + t.batch_size);
      // Every rank batches the whole global batch (so its padding is the single process's) and
      // computes its rows (rows_of_rank).
      const TransductionBatch global =
          make_transduction_batch(x.data.train, std::vector<int64_t>(order.begin() + lo, order.begin() + hi))
              .to(device);
      const Rows mine = rows_of_rank(global.size(), dp.rank(), dp.size());
      const TransductionBatch batch = batch_rows(global, mine);
      // The loss of the global batch is its mean over the scored tokens of all rows: each rank
      // sums its tokens' losses and divides by the global count; the ranks' gradients are then
      // averaged (divided by the rank count), hence the factor size. A rank without rows (a
      // last batch smaller than the rank count) computes one row with weight 0, so that it
      // still joins the gradients' all-reduce.
      const double scored = sum(global.target_mask).item();
      const double weight = mine.count > 0 ? static_cast<double>(dp.size()) / scored : 0.0;
      opt.set_lr(schedule.lr_at(at.step));
      // Dropout masks: the single process's masks of this rank's rows (nn/mask_rows.h); the
      // embedding's scale_grad_by_freq counts a token in the global batch (nn/token_counts.h).
      const int64_t first_row = mine.count > 0 ? mine.first : 0;
      const MaskRowsScope mask_rows({.first = first_row, .count = batch.size(), .global = global.size()});
      const TokenCountsScope token_counts({global.source, global.decoder_input}, first_row);
      Variable local_sum =
          cross_entropy(model.forward(batch), batch.decoder_target, Reduction::Sum, kIgnoreTarget, t.label_smoothing);
      const double value = dp.sum(mine.count > 0 ? local_sum.item() / scored : 0.0);  // the global batch's loss
      check_finite_loss(value, at.step + 1, checkpoints.latest_path());
      Variable loss = local_sum * weight;
      opt.zero_grad();
      dp.overlap_next_backward();
      loss.backward();
      dp.average_gradients();
      check_finite_gradients(model, at.step + 1, checkpoints.latest_path());
      opt.step();
      ++at.step;
      ++at.batch_in_epoch;
      loss_sum += value;
      ++loss_batches;
      progress.update(at.step, {{"loss", loss_sum / static_cast<double>(loss_batches)}});
    }
    const bool epoch_done = at.batch_in_epoch >= batches;
    const int64_t epoch = at.epoch + 1;
    if (epoch_done) at.next_epoch();
    const bool last = at.epoch >= t.epochs || reached_max();
    if (!(epoch % t.eval_every == 0 || epoch > t.eval_all_after || last)) continue;
    // The dev loss, the metrics line and the checkpoints, on rank 0 (the others only keep the
    // running sums in step).
    if (!dp.writes()) {
      loss_sum = 0;
      loss_batches = 0;
      continue;
    }
    const SplitScore dev = score_split(model, x.data.dev, t.eval_batch_size, {});
    if (dev.loss < best_dev) {
      best_dev = dev.loss;
      best_epoch = epoch;
    }
    nlohmann::json record{{"step", at.step},
                          {"epoch", epoch},
                          {"epoch_done", epoch_done},
                          {"train_loss", loss_sum / static_cast<double>(std::max<int64_t>(1, loss_batches))},
                          {"dev_loss", dev.loss},
                          {"dev_ppl", dev.ppl},
                          {"lr", schedule.lr_at(std::max<int64_t>(0, at.step - 1))}};
    run.log_metrics(record);
    progress.print(fmt::format("epoch {}: train_loss {:.4f}  dev_loss {:.4f}  dev_ppl {:.4f}", epoch,
                               record["train_loss"].get<double>(), dev.loss, dev.ppl));
    loss_sum = 0;
    loss_batches = 0;
    save(at);
    checkpoints.offer_best(at, dev.loss);
  }
  progress.finish();
  if (!dp.writes()) return;

  // The best checkpoint (lowest dev loss) on the test split.
  model.load_state_dict(load_checkpoint(checkpoints.best_path()).model);
  const SplitScore test = score_split(model, x.data.test, t.eval_batch_size, x.greedy_matches);
  nlohmann::json summary{{"test_ppl", test.ppl},
                         {"test_ppl_released", test.ppl_released},
                         {"test_exact_match", test.exact_match},
                         {"test_loss", test.loss},
                         {"best_dev_loss", best_dev},
                         {"best_epoch", best_epoch},
                         {"epochs", at.epoch},
                         {"steps", at.step},
                         {"parameters", model.num_parameters()},
                         {"seconds", run.seconds_since_open()},
                         {"data_parallel", dp.summary()},
                         {"best_checkpoint", checkpoints.best_path().filename().string()}};
  summary.update(x.summary);
  run.write_summary(summary);
  fmt::print("test (best dev checkpoint, epoch {}): perplexity {:.4f} (released variant {:.4f}), greedy exact match "
             "{:.4f}\nsummary: {}\n",
             best_epoch, test.ppl, test.ppl_released, test.exact_match, run.summary_path().string());
}

void eval(const TransductionExperiment& x, const std::string& run_dir, const std::string& which,
          const std::string& split) {
  const std::filesystem::path checkpoint = run_checkpoint_folder(run_dir, which);
  Generator gen(x.seed);
  EncoderDecoder model(x.model, gen);
  model.load_state_dict(load_checkpoint(checkpoint).model);
  model.to(x.device);
  const SplitScore s = score_split(model, split == "dev" ? x.data.dev : x.data.test, x.train.eval_batch_size,
                                   x.greedy_matches);
  fmt::print("{} checkpoint {} on the {} split ({} examples): perplexity {:.4f} (released variant {:.4f}), greedy "
             "exact match {:.4f}\n",
             which, checkpoint.filename().string(), split, s.examples, s.ppl, s.ppl_released, s.exact_match);
  write_file_atomically(std::filesystem::path(run_dir) / fmt::format("eval-{}-{}.json", split, which),
                        nlohmann::json{{"checkpoint", checkpoint.filename().string()}, {"split", split},
                                       {"examples", s.examples}, {"ppl", s.ppl}, {"ppl_released", s.ppl_released},
                                       {"exact_match", s.exact_match}, {"loss", s.loss}}
                            .dump(2));
}

}  // namespace posgrad::transduction_app
