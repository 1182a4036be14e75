// Model-level helpers over attention hooks (see attention_hook.h).
#include "attention/attention_hook.h"

#include "autograd/functions.h"

namespace posgrad {

std::vector<AttentionHook*> attention_hooks(const Module& model) {
  std::vector<AttentionHook*> hooks;
  for (const auto& [name, module] : model.named_modules())  // each module once, shared ones too
    // named_modules gives const pointers; the hooks belong to the (non-const) model's tree.
    if (auto* hook = dynamic_cast<AttentionHook*>(const_cast<Module*>(module))) hooks.push_back(hook);
  return hooks;
}

Variable attention_regulariser(const Module& model) {
  Variable total;
  for (AttentionHook* hook : attention_hooks(model)) {
    Variable r = hook->regulariser();
    if (r.defined()) total = total.defined() ? total + r : r;
  }
  return total;
}

void after_optimizer_step(const Module& model) {
  for (AttentionHook* hook : attention_hooks(model)) hook->after_optimizer_step();
}

}  // namespace posgrad
