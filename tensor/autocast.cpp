// bf16 autocast's per-thread mode and the CPU rounding (see autocast.h).
#include "tensor/autocast.h"

#include "tensor/cpu/parallel.h"
#include "tensor/tensor.h"

namespace posgrad {

namespace {
thread_local bool t_autocast_bf16 = false;
}  // namespace

bool autocast_bf16() { return t_autocast_bf16; }

AutocastBf16::AutocastBf16(bool enabled) : previous_(t_autocast_bf16) { t_autocast_bf16 = enabled; }

AutocastBf16::~AutocastBf16() { t_autocast_bf16 = previous_; }

Tensor rounded_to_bf16(const Tensor& t) {
  if (t.dtype() != kFloat32 || !t.device().is_cpu())
    fail("rounded_to_bf16: a float32 CPU tensor is needed, got {}", t.describe());
  Tensor out = t.clone();
  float* p = out.data<float>();
  cpu::parallel_for(out.numel(), 1, [&](int64_t i) { p[i] = round_to_bf16(p[i]); });
  return out;
}

}  // namespace posgrad
