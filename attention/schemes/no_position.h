// The "none" scheme: attention sees no positional information (a set, not a sequence). It
// exists so that configs can name it and so the registry has a trivial example to read.
#pragma once

#include "attention/registry.h"

namespace posgrad {

class NoPosition : public AttentionHook {
 public:
  std::string summary() const override { return "none"; }
};

std::shared_ptr<AttentionHook> make_no_position(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
