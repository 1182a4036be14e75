// RunCheckpoints: the checkpoints of one training run, kept so that a killed run continues
// exactly (--resume) and the best model is never lost. In <run>/checkpoints/:
//   step-<N>/   one complete checkpoint at optimizer step N (nn/checkpoint.h: model, optimizer,
//               state.json with the generator state, the TrainingPosition and the checksums)
//   latest      one line naming the newest complete step-<N>, replaced atomically after it
//   best        the same for the checkpoint with the best value of the run's metric
// A step folder is written as step-<N>.partial/ (each file fsynced), then renamed to step-<N>
// and the rename fsynced, and only then is `latest` (or `best`) pointed at it: a folder named
// step-<N> is always complete, and a crash at any moment leaves `latest` naming a complete one
// (or no `latest` before the first save). Saving a step whose folder exists swaps the two
// folders in one rename (RENAME_EXCHANGE), so a pointer never names a missing folder. After each
// save the step folders other than latest, the previous one (the latest before it; after a
// restore, the newest older folder) and best are removed (renamed to step-<N>.trash first, so no
// half-deleted folder keeps a step name), with leftovers of a crash (*.partial, *.trash, pointer
// temporaries): a run holds at most three step folders (four while saving).
//
// restore_latest() loads the folder `latest` names. When that fails (no `latest` file, a corrupt
// pointer, a missing folder, a checksum error (the app's tensor files included), files that
// disagree, tensors that do not fit the model) it says so on stderr, naming the file and the problem, and tries the other step folders,
// newest first; it throws, listing every folder it tried and why, only when none loads. After a
// fallback `latest` is pointed at the folder it restored.
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
// read_checkpoint_pointer() is the one reader of `latest` and `best`, for resume and for the jobs
// that load a run's model (eval, sample, figures): a pointer that holds anything but the name of
// a step folder of this run (a path into another run, "..", a NUL byte) is an error that shows
// the content escaped, never followed.
//
// On a follower RunDir (run_dir.h: ExistingRun::Follow, the ranks other than 0 of a data-parallel
// run) nothing is written: save() does nothing, offer_best() only keeps the best value, and
// restore_latest() loads without repointing `latest`.
//
// Deliberately does not: decide when to save (the app's loop does), average checkpoints, keep
// more than latest, the previous one and best, or guard against two processes writing one run
// (the run folder's lock does: run_dir.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "nn/module.h"
#include "nn/safetensors.h"
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
  // Tensors the app needs to continue beyond the model's (a language model's cache): saved in
  // the step folder as <name>.safetensors and checksummed with it (nn/checkpoint.h), so a
  // missing or damaged one makes restore_latest() fall back like any other damaged file.
  std::map<std::string, NamedTensors> tensor_files;

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

  // Writes step-<at.step>/ and points `latest` at it. Throws Error naming the file that could not
  // be written (a full disk, a file-size limit); `latest` and the folders it kept are untouched
  // then.
  void save(const TrainingPosition& at);
  // When `value` beats the best so far, points `best` at step-<at.step> (saving it first unless
  // save() just wrote it) and returns true. Non-finite values never win.
  bool offer_best(const TrainingPosition& at, double value);
  // Loads `latest` into the model, optimizer and generator, and returns its position; falls back
  // to the newest other step folder that loads (see above). Throws posgrad::Error naming the
  // folder when there is no checkpoint, or listing each folder tried and its problem when none
  // loads (the model and optimizer may then hold a partial load).
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
  TrainingPosition restore_from(const std::filesystem::path& folder);

  std::filesystem::path dir_;
  Module& model_;
  Optimizer& optimizer_;
  Generator& generator_;
  Options options_;
  std::optional<double> best_;
  int64_t best_step_ = -1;
  int64_t last_written_ = -1;   // the step folder save() or offer_best() wrote last
  int64_t latest_step_ = -1;    // what `latest` names, as this object last wrote or restored it
  int64_t previous_step_ = -1;  // the latest before that: kept as the fallback
  bool writes_ = true;          // false on a follower RunDir: nothing is written
};

// The folder <checkpoints_dir>/<step-N> that the pointer file <checkpoints_dir>/<pointer>
// ("latest" or "best") names; nullopt when there is no such pointer file. Throws posgrad::Error
// naming the pointer file and showing its content escaped when it holds anything but a step
// folder name (one trailing newline or blanks aside).
std::optional<std::filesystem::path> read_checkpoint_pointer(const std::filesystem::path& checkpoints_dir,
                                                             const std::string& pointer);
// The step folder of run `run_dir` that its `which` pointer ("best" or "latest") names, for the
// jobs that load a finished or running run's model. Throws posgrad::Error when the pointer is
// missing or corrupt (as above) or names a folder the run does not hold.
std::filesystem::path run_checkpoint_folder(const std::filesystem::path& run_dir, const std::string& which);

// The checkpoint folder name of a step: "step-000001200".
std::string step_folder_name(int64_t step);
// The step of a complete folder's name ("step-000001200" -> 1200); nullopt for any other name
// (step-<N>.partial, step-<N>.trash, latest, ...).
std::optional<int64_t> step_of_folder_name(const std::string& name);

}  // namespace posgrad::apps
