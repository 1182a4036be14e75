// RunCheckpoints: the checkpoints of one training run, kept so that a killed run continues
// exactly (--resume) and the best model is never lost. In <run>/checkpoints/:
//   step-<N>/   one complete checkpoint at optimizer step N (nn/checkpoint.h: model, optimizer,
//               state.json with the generator state and the TrainingPosition)
//   latest      one line naming the newest complete step-<N>, replaced atomically after it
//   best        the same for the checkpoint with the best value of the run's metric
// A crash while a step folder is written leaves `latest` naming the previous one, so --resume
// never reads half a checkpoint. Step folders that neither pointer names are removed after each
// save: a run holds at most two (three while saving).
//
//   RunCheckpoints ckpt(run, model, optimizer, gen, {.metric = "test_accuracy"});
//   TrainingPosition at = request.resume ? ckpt.restore_latest() : TrainingPosition{};
//   ... after each optimizer step: ++at.step; ++at.batch_in_epoch; at each epoch end: at.next_epoch();
//   if (at.step % every == 0) ckpt.save(at);
//   if (evaluated) ckpt.offer_best(at, accuracy);
//
// Bit-identical continuation needs everything a step reads: parameters, optimizer buffers and
// step counts, the generator (seed and offset) and where the data order stood (epoch, batch);
// apps put anything else in TrainingPosition::extra.
//
// Deliberately does not: decide when to save (the app's loop does), average checkpoints, or
// keep more than latest and best.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "nn/module.h"
#include "nn/optimizer.h"
#include "tensor/random.h"

namespace posgrad::apps {

class RunDir;

// Where a training run stands.
struct TrainingPosition {
  int64_t step = 0;            // optimizer steps done
  int64_t epoch = 0;           // the epoch being read
  int64_t batch_in_epoch = 0;  // batches of that epoch already used
  nlohmann::json extra = nlohmann::json::object();  // anything else the app needs to continue

  void next_epoch() {
    ++epoch;
    batch_in_epoch = 0;
  }
};

class RunCheckpoints {
 public:
  struct Options {
    std::string metric;             // the metric offer_best() compares ("" = no best checkpoint)
    bool higher_is_better = true;
  };

  RunCheckpoints(const RunDir& run, Module& model, Optimizer& optimizer, Generator& generator, Options options);
  RunCheckpoints(const RunDir& run, Module& model, Optimizer& optimizer, Generator& generator)
      : RunCheckpoints(run, model, optimizer, generator, Options{"", true}) {}

  // Writes step-<at.step>/ and points `latest` at it.
  void save(const TrainingPosition& at);
  // When `value` beats the best so far, points `best` at step-<at.step> (saving it first unless
  // save() just wrote it) and returns true. Non-finite values never win.
  bool offer_best(const TrainingPosition& at, double value);
  // Loads `latest` into the model, optimizer and generator, and returns its position. Throws
  // posgrad::Error naming the folder when there is no checkpoint or it does not load.
  TrainingPosition restore_latest();

  // The folders `latest` and `best` name; empty when none was written yet.
  std::filesystem::path latest_path() const;
  std::filesystem::path best_path() const;
  std::optional<double> best_value() const { return best_; }

 private:
  std::filesystem::path pointer_target(const char* pointer) const;
  void write_step(const TrainingPosition& at);
  void point(const char* pointer, int64_t step);
  void prune();

  std::filesystem::path dir_;
  Module& model_;
  Optimizer& optimizer_;
  Generator& generator_;
  Options options_;
  std::optional<double> best_;
  int64_t best_step_ = -1;
  int64_t last_written_ = -1;
};

// The checkpoint folder name of a step: "step-000001200".
std::string step_folder_name(int64_t step);

}  // namespace posgrad::apps
