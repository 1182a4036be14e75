// The "local_window" span: every query sees only the keys within a fixed radius on each
// positional axis (sliding-window / local attention), optionally only the past (1-D). It acts
// through key_range alone: a mask in the reference path, keys never visited in the fused path. It is also the span the attention benchmark uses to set span fractions.
//
// Options: radius (int, >= 0; the same on every axis), causal (bool, 1-D only: offsets
// -radius..0). Deliberately not here: learned or soft spans (gaussian_span, adaptive_span).
#pragma once

#include "attention/registry.h"

namespace posgrad {

class LocalWindow : public AttentionHook {
 public:
  LocalWindow(int64_t radius, bool causal);
  std::optional<OffsetBox> key_range(const PositionPair& positions) const override;
  std::string summary() const override;

 private:
  int64_t radius_;
  bool causal_;
};

std::shared_ptr<AttentionHook> make_local_window(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
