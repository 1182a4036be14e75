// OpenMP helpers for the CPU kernels: a parallel-for with a grain size that degrades to a plain
// loop without OpenMP or for small work. This file deliberately holds no kernels.
#pragma once

#include <cstdint>

#ifdef POSGRAD_OPENMP
#include <omp.h>
#endif

namespace posgrad::cpu {

// Below this many scalar operations a kernel runs on one thread (thread start-up costs more).
inline constexpr int64_t kParallelGrain = 32768;

inline int max_threads() {
#ifdef POSGRAD_OPENMP
  return omp_in_parallel() ? 1 : omp_get_max_threads();
#else
  return 1;
#endif
}

// Calls fn(i) for i in [0, n); parallel when n * cost_per_item exceeds the grain.
template <typename Fn>
void parallel_for(int64_t n, int64_t cost_per_item, Fn&& fn) {
#ifdef POSGRAD_OPENMP
  if (n > 1 && n * cost_per_item >= kParallelGrain && !omp_in_parallel()) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) fn(i);
}

}  // namespace posgrad::cpu
