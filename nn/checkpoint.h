// Training checkpoints that resume a run exactly: a directory holding
//   model.safetensors      the model's named tensors (metadata: step)
//   optimizer.safetensors  the optimizer's buffers (metadata: kind, step and hyperparameters,
//                          doubles written in shortest round-trip form, so they load bit-exact)
//   state.json             {"format": "posgrad-checkpoint", "version": 1, "step": N,
//                           "rng": {"seed": S, "offset": O}, "optimizer": "<kind>", "extra": {...}}
// Each file is written atomically (nn/atomic_file.h), state.json last. The three files are not
// replaced as one unit, so a crash between them could leave a mix: every file records the step
// and load_checkpoint() refuses a directory whose files disagree (naming them).
//
// Continuing exactly needs: the parameters (model), the optimizer buffers and step counts, the
// step (which also drives an LR schedule, nn/lr_schedule.h), the random generator's state, and
// whatever the app's data pipeline needs to pick up where it stopped (put that in `extra`).
//
// Deliberately not here: which tensors make up the model (Module::state_dict() or the app
// decides), keeping the last k checkpoints, averaging, any policy of when to save.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "nn/optimizer.h"
#include "nn/safetensors.h"

namespace posgrad {

struct Checkpoint {
  int64_t step = 0;             // optimizer updates done
  NamedTensors model;           // e.g. Module::state_dict()
  OptimizerState optimizer;     // Optimizer::state(); kind may be empty for "no optimizer"
  uint64_t rng_seed = 0;        // Generator::seed()
  uint64_t rng_offset = 0;      // Generator::offset()
  std::string extra_json = "{}";  // a JSON object the app owns (epoch, data position, ...)
};

// Creates `dir` if needed and writes the three files. Throws Error naming the file on failure,
// and for an extra_json that is not a JSON object.
void save_checkpoint(const std::filesystem::path& dir, const Checkpoint& checkpoint);

// Reads and cross-checks the three files. Throws Error naming the file and the problem.
Checkpoint load_checkpoint(const std::filesystem::path& dir);

// The conversions save/load_checkpoint use for the optimizer file, for apps that store the
// optimizer elsewhere.
void save_optimizer_state(const std::filesystem::path& path, const OptimizerState& state, int64_t step);
OptimizerState load_optimizer_state(const std::filesystem::path& path, int64_t* step = nullptr);

}  // namespace posgrad
