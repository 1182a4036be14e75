// DataParallel: the data-parallel side of an app's training loop, the same for every app. Under
// `mpirun -np N` (or `srun`) each of the N ranks runs the whole app on its slice of every global
// batch (distributed/data_shard.h); without a launcher it is a group of one and changes nothing.
//
//   DataParallel dp(device);                         // rank, size, the rank's device
//   const Shard mine = dp.shard(B, "train.batch_size");    // refuses B not divisible by size
//   dp.replicate(model);                             // rank 0's initial parameters everywhere
//   RunDir run = dp.open_run_dir(request, settings, dp.describe(B, accumulation, lr));
//   RunCheckpoints ckpt(run, model, opt, gen, ...);  // writes on rank 0 only
//   TrainingPosition at = request.resume ? dp.restore(ckpt) : TrainingPosition{};
//   loss_for_metrics = dp.mean(loss_value);          // every rank gets the mean over the ranks
//   ... dp.overlap_next_backward(); loss.backward(); dp.average_gradients(); opt.step(); ...
//   if (dp.writes()) draw figures ...
//
// What rank 0 does alone: it creates and writes the run folder (config.yaml, command.txt,
// metrics.jsonl, summary.json, checkpoints, figures, TensorBoard events); the other ranks open
// the folder as followers (run_dir.h: ExistingRun::Follow) after rank 0 has made it, read its
// checkpoints on --resume after rank 0 has restored (and, after a fallback, repaired) them, and
// print nothing to stdout (their progress is rank 0's; their errors still go to stderr).
// A run folder therefore has to be on a file system every rank sees (as the data folder).
// overlap_next_backward(), right before the backward whose gradients the optimizer step takes
// (with gradient accumulation: the last micro-batch's), lets that backward start the gradients'
// all-reduce bucket by bucket (gradient_averager.h); average_gradients() then waits for the rest.
// In between, no other collective (mean, sum, ...) may run: they refuse. Without the call, or
// with POSGRAD_GRADIENT_OVERLAP=0 in the environment, average_gradients() sums after the backward.
// config.yaml starts with a comment that states the rank count, the global and per-rank batch,
// the effective batch per optimizer step and the learning rate (describe()).
//
// Deliberately does not: decide the shard of a dataset (the app cuts its batches), scale the
// learning rate (the global batch is the setting, so lr keeps its single-process meaning), or
// survive a rank's death (docs/distributed.md).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/common/cli.h"
#include "apps/common/run_checkpoints.h"
#include "apps/common/run_dir.h"
#include "distributed/data_shard.h"
#include "distributed/gradient_averager.h"
#include "distributed/process_group.h"

namespace posgrad::apps {

class DataParallel {
 public:
  // The world group (distributed::world()); `device` is the app's device setting: with several
  // ranks on one machine, "cuda" becomes cuda:<local rank mod GPUs>.
  explicit DataParallel(Device device);

  int rank() const { return world_.rank(); }
  int size() const { return world_.size(); }
  bool writes() const { return world_.is_root(); }
  Device device() const { return device_; }
  distributed::ProcessGroup& world() { return world_; }

  distributed::Shard shard(int64_t global_batch, const std::string& setting) const;
  // The comment for config.yaml: ranks, launcher, engine, batches and learning rate.
  std::string describe(int64_t global_batch, int64_t accumulation, double lr) const;

  // Rank 0's seed (every rank's generators then draw the same numbers).
  uint64_t seed(uint64_t seed);
  // Rank 0's parameters and buffers into every rank's model; then builds the gradient averager.
  void replicate(Module& model);
  // The next backward starts the gradients' all-reduce as they become final (see above).
  void overlap_next_backward();
  void average_gradients();
  const distributed::GradientAverager::Stats& gradient_stats() const;
  // For summary.json: ranks, engine, and per optimizer step the all-reduce seconds and bytes.
  nlohmann::json summary() const;

  RunDir open_run_dir(const TrainRequest& request, const Settings& settings, const std::string& note);
  TrainingPosition restore(RunCheckpoints& checkpoints);

  // Every rank's `rows` [b, ...] stacked in rank order, on the CPU: [size * b, ...] (what a
  // checkpoint keeps of per-row state, such as a language model's cache).
  Tensor gather_rows(const Tensor& rows);

  double mean(double value);
  std::vector<double> mean(std::vector<double> values);
  double sum(double value);

 private:
  distributed::ProcessGroup& world_;
  Device device_;
  std::unique_ptr<distributed::GradientAverager> averager_;
  bool overlap_;  // POSGRAD_GRADIENT_OVERLAP is not "0"
  void refuse_collective_in_overlap(const char* what) const;
};

}  // namespace posgrad::apps
