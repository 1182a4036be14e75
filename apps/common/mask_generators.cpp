// mask_generators (see mask_generators.h).
#include "apps/common/mask_generators.h"

#include "nn/drop_path.h"
#include "nn/dropout.h"

namespace posgrad::apps {

MaskGenerators mask_generators(Module& model) {
  MaskGenerators out;
  for (const auto& [name, module] : model.named_modules()) {
    auto* m = const_cast<Module*>(module);
    if (auto* d = dynamic_cast<Dropout*>(m)) out.emplace_back(name, &d->generator());
    if (auto* d = dynamic_cast<DropPath*>(m)) out.emplace_back(name, &d->generator());
  }
  return out;
}

nlohmann::json mask_generator_states(const MaskGenerators& generators) {
  nlohmann::json states = nlohmann::json::object();
  for (const auto& [name, g] : generators) states[name] = {g->seed(), g->offset()};
  return states;
}

void restore_mask_generator_states(const nlohmann::json& states, const MaskGenerators& generators) {
  for (const auto& [name, g] : generators)
    if (states.contains(name)) g->set_state(states[name][0].get<uint64_t>(), states[name][1].get<uint64_t>());
}

}  // namespace posgrad::apps
