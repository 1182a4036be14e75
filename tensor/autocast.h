// bf16 autocast for matrix products: inside an AutocastBf16 scope, a float32 matmul multiplies its
// operands as bfloat16 (8 significant bits) and sums the products in float32; its result, the
// parameters (the master weights) and every gradient stay float32. The backward's matmuls run in
// the same mode when the backward is called inside the scope (as a training step does).
//   CUDA  the operands are rounded to bf16 (to nearest, ties to even) into scratch copies and
//         cuBLAS multiplies them on the bf16 tensor cores with float32 sums (Ampere and later).
//         Not CUBLAS_COMPUTE_32F_FAST_16BF on the float32 operands: its conversion inside the GEMM
//         gave products 2.4e-3 of the largest value away from the CPU's rounding on an H200.
//   CPU   the operands are rounded to bf16 (to nearest, ties to even) into copies and multiplied
//         by the float32 GEMM: the same numbers as the GPU's up to the order of the sums, and no
//         speed-up. It is there so that the CPU is the GPU's reference and so that the tolerances
//         below are checked in every build.
// The scope is per thread (as PyTorch's autocast): a thread that starts inside none multiplies in
// float32. float64 products are never affected (gradcheck and the float64 tests stay exact).
// Deliberately not here: bf16 tensors (no kBFloat16 dtype: nothing is stored in bf16), float16,
// and products other than matmul (the fused attention kernels and conv2d stay float32).
// Golden tests under autocast: tests/attention/test_golden_transformer.cpp states the tolerances.
#pragma once

#include <cstdint>
#include <cstring>

namespace posgrad {

class Tensor;

// Whether float32 matmul on this thread multiplies as bf16 (inside an AutocastBf16 scope).
bool autocast_bf16();

// RAII scope: on (or off, to leave autocast for a part) until destroyed, then the previous mode.
class AutocastBf16 {
 public:
  explicit AutocastBf16(bool enabled = true);
  ~AutocastBf16();
  AutocastBf16(const AutocastBf16&) = delete;
  AutocastBf16& operator=(const AutocastBf16&) = delete;

 private:
  bool previous_;
};

// x rounded to the nearest bfloat16 (ties to even), as a float: the top 16 bits of its bit
// pattern. Infinities stay; a NaN stays a (quiet) NaN.
inline float round_to_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u) {  // inf or NaN: no rounding carry into the exponent
    if (bits & 0x007fffffu) bits |= 0x00400000u;  // NaN: keep it quiet (and a NaN after truncation)
  } else {
    bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest, ties to even
  }
  bits &= 0xffff0000u;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// A contiguous float32 CPU copy of t with every value rounded to bf16 (the CPU matmul's operands
// under autocast).
Tensor rounded_to_bf16(const Tensor& t);

}  // namespace posgrad
