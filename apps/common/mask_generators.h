// The random generators a model's Dropout and DropPath layers own (each layer draws its masks from
// its own), found by walking the model, and their states as a checkpoint's JSON: saved with every
// checkpoint and restored on resume, a resumed run draws the same masks as an uninterrupted one.
// Deliberately not here: the checkpoint files themselves (run_checkpoints.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/module.h"
#include "tensor/random.h"

namespace posgrad::apps {

using MaskGenerators = std::vector<std::pair<std::string, Generator*>>;

// Every Dropout and DropPath of `model`, by module name (module pre-order).
MaskGenerators mask_generators(Module& model);
// {name: [seed, offset]} of each generator.
nlohmann::json mask_generator_states(const MaskGenerators& generators);
// Sets each generator named in `states` (as mask_generator_states wrote them); others are left.
void restore_mask_generator_states(const nlohmann::json& states, const MaskGenerators& generators);

}  // namespace posgrad::apps
