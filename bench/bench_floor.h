// What a benchmark states about its own floor, so that figures from different machines compare:
// the step's FLOPs (counted as below), this machine's SGEMM rate measured in the same run through
// posgrad's matmul, the time those FLOPs would take at that rate (the floor), the ratio of the
// measured step to it, and the CPU's vector extensions.
//
// What is counted: matmul-shaped work only, a multiply-add as 2 FLOPs: the linear layers
// (projections, FFN, input and output layers) and the attention's logits q . k and weighted sums
// p v over the keys each query actually computes (its key box). Not counted: positional terms
// (q . table, SIREN MLPs, biases), softmax, norms, activations, dropout, the loss and the
// optimizer. A training step counts 3x its forward: the backward of each matmul is two matmuls
// of the same size (dX and dW; dq and dk; dp and dv).
//
// Deliberately not here: timing the step itself (each benchmark does, its own way).
// Shapes: letters of shape_legend.h.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "posgrad.h"

namespace posgrad::bench {

// The forward FLOPs of a linear layer applied to `rows` rows: [rows, in] x [in, out].
inline double linear_flops(int64_t rows, int64_t in, int64_t out) {
  return 2.0 * static_cast<double>(rows) * static_cast<double>(in) * static_cast<double>(out);
}

// The forward FLOPs of attention's two matmuls (q . k and p v) for B H Nq queries that each see
// `keys_per_query` keys, heads Dh wide.
inline double attention_flops(int64_t B, int64_t H, int64_t Nq, double keys_per_query, int64_t Dh) {
  return 2.0 * 2.0 * static_cast<double>(B * H * Nq) * keys_per_query * static_cast<double>(Dh);
}

// A training step (forward + backward) over its forward.
inline constexpr double kForwardAndBackward = 3.0;

// The vector extensions this CPU has (cpuid, as GCC's __builtin_cpu_supports reads it).
inline std::string cpu_vector_extensions() {
  std::vector<std::string> found;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) found.push_back("sse4.2");
  if (__builtin_cpu_supports("avx")) found.push_back("avx");
  if (__builtin_cpu_supports("avx2")) found.push_back("avx2");
  if (__builtin_cpu_supports("fma")) found.push_back("fma");
  if (__builtin_cpu_supports("avx512f")) found.push_back("avx512f");
  if (__builtin_cpu_supports("avx512vl")) found.push_back("avx512vl");
  return found.empty() ? "none of sse4.2, avx, avx2, fma, avx512" : fmt::format("{}", fmt::join(found, " "));
}

// The widest vector extension this program was compiled for (-march).
inline std::string compiled_vector_extension() {
#if defined(__AVX512F__)
  return "avx512f";
#elif defined(__AVX2__)
  return "avx2";
#elif defined(__AVX__)
  return "avx";
#else
  return "sse";
#endif
}

struct MachineFloor {
  int64_t sgemm_size = 0;     // n of the n x n x n SGEMM timed
  double sgemm_gflops = 0.0;  // its median rate
  int reps = 0;               // timed repetitions
  int threads = 1;
};

// Times posgrad's matmul on two n x n float32 matrices: one warm-up, then the median of `reps`.
inline MachineFloor measure_sgemm_floor(int threads, int64_t n = 1024, int reps = 5) {
  Generator gen(0);
  const Tensor a = uniform({n, n}, -1, 1, gen), b = uniform({n, n}, -1, 1, gen);
  std::vector<double> seconds;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor c = matmul(a, b);
    const auto t1 = std::chrono::steady_clock::now();
    if (r > 0) seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  return {n, 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / median / 1e9, reps, threads};
}

// One line: the SGEMM rate, the CPU's vector extensions and the build's.
inline void print_machine(const MachineFloor& floor) {
  fmt::print("  machine: SGEMM {}^3 {:.1f} GFLOP/s on {} threads (posgrad matmul, median of {}); cpu {} "
             "(compiled for {})\n",
             floor.sgemm_size, floor.sgemm_gflops, floor.threads, floor.reps, cpu_vector_extensions(),
             compiled_vector_extension());
}

// Two lines: the step's FLOPs, the floor they give at the SGEMM rate and the step's ratio to it;
// then print_machine's.
inline void print_floor(const MachineFloor& floor, double step_flops, double step_ms) {
  const double floor_ms = step_flops / (floor.sgemm_gflops * 1e9) * 1e3;
  fmt::print("  floor: {:.2f} GFLOP a step (matmuls, forward + backward = 3x forward) at {:.1f} GFLOP/s = {:.1f} ms; "
             "step / floor {:.2f}x\n",
             step_flops / 1e9, floor.sgemm_gflops, floor_ms, step_ms / floor_ms);
  print_machine(floor);
}

}  // namespace posgrad::bench
