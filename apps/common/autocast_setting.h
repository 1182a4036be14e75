// The train.autocast setting of the training apps (posattn, charlm, cct): "none" (float32
// throughout) or "bf16" (tensor/autocast.h: every float32 matmul of the run, in training and in
// evaluation, multiplies bf16 operands and sums in float32; weights, gradients and optimizer state
// stay float32). On a GPU that runs cuBLAS's bf16 tensor cores; on the CPU it gives the same
// numbers more slowly (the operands are rounded into copies), which is for checking, not speed.
//
// Deliberately does not: cast anything but matmul (the fused attention kernels and conv2d stay
// float32), or choose bf16 by itself.
#pragma once

#include <string>

#include "apps/common/settings.h"

namespace posgrad::apps {

// Declares train.autocast on `s`, bound to `value` (its default is "none").
void add_autocast_setting(Settings& s, std::string& value);

}  // namespace posgrad::apps
