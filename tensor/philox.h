// Philox4x32-10 and the conversions of its output to uniform and normal numbers: one source for
// the CPU backend and the CUDA kernels (POSGRAD_HD), so the GPU draws the CPU's numbers for the
// same (seed, offset). Element i of a draw uses counter block (offset + i/4) and lane i%4, so
// every element is computed on its own. Rounding is made explicit where a compiler could fuse a
// multiply and an add differently on the two sides: the affine maps use one fma on both
// (std::fma / __fma_rn), the rest uses correctly rounded operations (__dmul_rn, __dsqrt_rn on the
// GPU). Uniform and Bernoulli draws are then bit-identical; normals go through log/sin/cos, where
// libdevice and glibc may differ in the last bit of a double.
//
// Deliberately not here: generator state (tensor/random.h), filling tensors (the backends).
#pragma once

#include <cmath>
#include <cstdint>

#include "tensor/host_device.h"

namespace posgrad {

// One Philox4x32-10 block: 4 random uint32 from a 128-bit counter and a 64-bit key.
struct PhiloxBlock {
  uint32_t v[4];
  POSGRAD_HD uint32_t operator[](int lane) const { return v[lane]; }
};

// The arithmetic Philox needs, correctly rounded on both sides (the GPU's explicit intrinsics
// keep nvcc from fusing a multiply and an add where the CPU does not).
namespace philox_detail {
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ uint32_t mulhi(uint32_t a, uint32_t b) { return __umulhi(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double fma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }
__device__ __forceinline__ double sqrt_rn(double x) { return __dsqrt_rn(x); }
__device__ __forceinline__ double log(double x) { return ::log(x); }
__device__ __forceinline__ double sin(double x) { return ::sin(x); }
__device__ __forceinline__ double cos(double x) { return ::cos(x); }
#else
inline uint32_t mulhi(uint32_t a, uint32_t b) { return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32); }
inline double mul_rn(double a, double b) { return a * b; }
inline double add_rn(double a, double b) { return a + b; }
inline double fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline double sqrt_rn(double x) { return std::sqrt(x); }
inline double log(double x) { return std::log(x); }
inline double sin(double x) { return std::sin(x); }
inline double cos(double x) { return std::cos(x); }
#endif
}  // namespace philox_detail

// The round's multipliers and the key's Weyl increments (Salmon et al., Random123).
namespace philox_detail {
inline constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
}  // namespace philox_detail

POSGRAD_HD PhiloxBlock philox4x32_10(uint64_t counter_lo, uint64_t counter_hi, uint64_t key) {
  uint32_t c0 = static_cast<uint32_t>(counter_lo), c1 = static_cast<uint32_t>(counter_lo >> 32);
  uint32_t c2 = static_cast<uint32_t>(counter_hi), c3 = static_cast<uint32_t>(counter_hi >> 32);
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  using philox_detail::kMul0, philox_detail::kMul1, philox_detail::kWeyl0, philox_detail::kWeyl1;
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = philox_detail::mulhi(kMul0, c0), lo0 = kMul0 * c0;
    const uint32_t hi1 = philox_detail::mulhi(kMul1, c2), lo1 = kMul1 * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {{c0, c1, c2, c3}};
}

#if !defined(__CUDACC__)
// kPhiloxChunk consecutive blocks (counters first, first + 1, ..., high word 0) at once, CPU only,
// in element order: out[4 j + lane] = philox4x32_10(first + j, 0, key)[lane]. The same rounds as
// philox4x32_10 on vectors of 16 blocks (GCC/Clang vector types; one block's rounds depend on each
// other, 16 blocks' do not): the dropout masks of a training step are millions of blocks.
constexpr int kPhiloxChunk = 16;
inline void philox4x32_10_chunk(uint64_t first, uint64_t key, uint32_t (&out)[4 * kPhiloxChunk]) {
  typedef uint32_t Words __attribute__((vector_size(4 * kPhiloxChunk)));
  typedef uint64_t Products __attribute__((vector_size(8 * kPhiloxChunk)));
  Words c0, c1, c2 = {}, c3 = {};
  for (int j = 0; j < kPhiloxChunk; ++j) {
    const uint64_t counter = first + static_cast<uint64_t>(j);
    c0[j] = static_cast<uint32_t>(counter);
    c1[j] = static_cast<uint32_t>(counter >> 32);
  }
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const Products p0 = __builtin_convertvector(c0, Products) * uint64_t{philox_detail::kMul0};
    const Products p1 = __builtin_convertvector(c2, Products) * uint64_t{philox_detail::kMul1};
    const Words next0 = __builtin_convertvector(p1 >> 32, Words) ^ c1 ^ k0;
    const Words next2 = __builtin_convertvector(p0 >> 32, Words) ^ c3 ^ k1;
    c1 = __builtin_convertvector(p1, Words);
    c3 = __builtin_convertvector(p0, Words);
    c0 = next0;
    c2 = next2;
    k0 += philox_detail::kWeyl0;
    k1 += philox_detail::kWeyl1;
  }
  for (int j = 0; j < kPhiloxChunk; ++j) {
    out[4 * j] = c0[j];
    out[4 * j + 1] = c1[j];
    out[4 * j + 2] = c2[j];
    out[4 * j + 3] = c3[j];
  }
}
#endif

// A uint32 mapped to the open interval (0, 1): never 0, so log() is safe.
POSGRAD_HD double uint_to_unit(uint32_t x) {
  return philox_detail::mul_rn(philox_detail::add_rn(static_cast<double>(x), 0.5), 1.0 / 4294967296.0);
}

// Lane `lane` (0..3) of a standard normal from one block: Box-Muller on lanes (0,1) and (2,3).
POSGRAD_HD double normal_from_block(const PhiloxBlock& r, int lane) {
  const int pair = lane / 2;
  const double u1 = uint_to_unit(r[2 * pair]), u2 = uint_to_unit(r[2 * pair + 1]);
  const double radius = philox_detail::sqrt_rn(philox_detail::mul_rn(-2.0, philox_detail::log(u1)));
  const double angle = philox_detail::mul_rn(6.283185307179586, u2);
  return philox_detail::mul_rn(radius, lane % 2 == 0 ? philox_detail::cos(angle) : philox_detail::sin(angle));
}

// The affine maps of a draw: lo + (hi - lo) * u and mean + stddev * z, each one fma.
POSGRAD_HD double uniform_between(double lo, double hi, double u) {
  return philox_detail::fma_rn(hi - lo, u, lo);
}
POSGRAD_HD double normal_with(double mean, double stddev, double z) {
  return philox_detail::fma_rn(stddev, z, mean);
}

// Element `i` of a uniform(0,1) draw that started at block `offset`.
inline double philox_uniform(uint64_t seed, uint64_t offset, uint64_t i) {
  return uint_to_unit(philox4x32_10(offset + i / 4, 0, seed)[static_cast<int>(i % 4)]);
}
// Element `i` of a standard normal draw.
inline double philox_normal(uint64_t seed, uint64_t offset, uint64_t i) {
  return normal_from_block(philox4x32_10(offset + i / 4, 0, seed), static_cast<int>(i % 4));
}

}  // namespace posgrad
