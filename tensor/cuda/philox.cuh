// Philox4x32-10 on the device: a line-by-line mirror of tensor/random.h (same rounds, constants,
// counter layout and conversion to doubles), so a CUDA draw gives the same numbers as the CPU for
// the same (seed, offset). Uniform and Bernoulli draws are bit-identical; normals go through
// libdevice's log/sin/cos, which may differ from glibc in the last bit of a double (float32
// results are then almost always identical). The double arithmetic uses explicitly rounded
// intrinsics (__dadd_rn, __dmul_rn) so nvcc cannot fuse it into FMAs the CPU does not do.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace posgrad::cuda {

struct Philox4 {
  uint32_t v[4];
};

__device__ __forceinline__ Philox4 philox4x32_10(uint64_t counter_lo, uint64_t counter_hi, uint64_t key) {
  uint32_t c0 = static_cast<uint32_t>(counter_lo), c1 = static_cast<uint32_t>(counter_lo >> 32);
  uint32_t c2 = static_cast<uint32_t>(counter_hi), c3 = static_cast<uint32_t>(counter_hi >> 32);
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = __umulhi(kMul0, c0), lo0 = kMul0 * c0;
    const uint32_t hi1 = __umulhi(kMul1, c2), lo1 = kMul1 * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {{c0, c1, c2, c3}};
}

// A uint32 mapped to the open interval (0, 1), exactly as uint_to_unit in random.h.
__device__ __forceinline__ double uint_to_unit(uint32_t x) {
  return __dmul_rn(__dadd_rn(static_cast<double>(x), 0.5), 1.0 / 4294967296.0);
}

// Element `lane` (0..3) of a standard normal from one Philox block (Box-Muller on lane pairs).
__device__ __forceinline__ double normal_from_block(const Philox4& r, int lane) {
  const int pair = lane / 2;
  const double u1 = uint_to_unit(r.v[2 * pair]), u2 = uint_to_unit(r.v[2 * pair + 1]);
  const double radius = __dsqrt_rn(__dmul_rn(-2.0, ::log(u1)));
  const double angle = __dmul_rn(6.283185307179586, u2);
  return lane % 2 == 0 ? __dmul_rn(radius, ::cos(angle)) : __dmul_rn(radius, ::sin(angle));
}

}  // namespace posgrad::cuda
