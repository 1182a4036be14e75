// Training checkpoints that resume a run exactly: a directory holding
//   model.safetensors      the model's named tensors (metadata: step)
//   optimizer.safetensors  the optimizer's buffers (metadata: kind, step and hyperparameters,
//                          doubles written in shortest round-trip form, so they load bit-exact)
//   <name>.safetensors     more tensors the app keeps with the step (Checkpoint::tensor_files,
//                          e.g. a language model's cache; metadata: step)
//   state.json             {"format": "posgrad-checkpoint", "version": 2, "step": N,
//                           "rng": {"seed": S, "offset": O}, "optimizer": "<kind>",
//                           "files": {"model.safetensors": {"bytes": n, "crc32": "1c291ca3"},
//                                     "optimizer.safetensors": {...}, "<name>.safetensors": ...},
//                           "extra": {...}, "crc32": "<CRC-32 of this document without it>"}
// Each file is written atomically (nn/atomic_file.h), state.json last. The three files are not
// replaced as one unit, so a crash between them could leave a mix: every file records the step
// and load_checkpoint() refuses a directory whose files disagree (naming them).
//
// Corruption (a truncated file, flipped bits, a file from another save) is detected: state.json
// records the size and CRC-32 (zlib) of each tensor file's bytes, and the CRC-32 of its own
// contents (its compact JSON text without the "crc32" key). load_checkpoint() checks all of them
// before it decodes anything and names the file that does not match. CRC-32 catches accidents
// (every burst of up to 32 flipped bits, all but 2^-32 of the rest), not deliberate tampering.
// Version 1 checkpoints (no checksums) are refused: they cannot be verified.
//
// Continuing exactly needs: the parameters (model), the optimizer buffers and step counts, the
// step (which also drives an LR schedule, nn/lr_schedule.h), the random generator's state, and
// whatever the app's data pipeline needs to pick up where it stopped (put that in `extra`).
//
// Deliberately not here: which tensors make up the model (Module::state_dict() or the app
// decides), keeping the last k checkpoints and falling back to an older one
// (apps/common/run_checkpoints.h), averaging, any policy of when to save.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
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
  // More tensor files the step needs, checked like the model file: name (letters, digits, '_',
  // not "model" or "optimizer") -> the tensors of <name>.safetensors.
  std::map<std::string, NamedTensors> tensor_files;
};

// Creates `dir` if needed and writes the files. Throws Error naming the file on failure,
// and for an extra_json that is not a JSON object.
void save_checkpoint(const std::filesystem::path& dir, const Checkpoint& checkpoint);

// Reads the files, verifies their sizes and checksums and cross-checks their steps.
// Throws Error naming the file and the problem.
Checkpoint load_checkpoint(const std::filesystem::path& dir);

// The conversions save/load_checkpoint use for the optimizer file, for apps that store the
// optimizer elsewhere. A lone optimizer file carries no checksum (checkpoints keep theirs in
// state.json); the safetensors structure is still validated.
void save_optimizer_state(const std::filesystem::path& path, const OptimizerState& state, int64_t step);
OptimizerState load_optimizer_state(const std::filesystem::path& path, int64_t* step = nullptr);

}  // namespace posgrad
