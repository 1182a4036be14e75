// CPU index_select / index_add / gather / scatter_add on [outer, n, inner] views, and Philox
// random fills. Every index is bounds-checked: an out-of-range index is an Error naming it.
// Shapes: letters of shape_legend.h, except n here: the size of the indexed axis.
#include <algorithm>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/random.h"

namespace posgrad::cpu {

namespace {
void check_indices(const int64_t* idx, int64_t count, int64_t n, const char* op) {
  for (int64_t i = 0; i < count; ++i)
    if (idx[i] < 0 || idx[i] >= n) fail("{}: index {} is out of range [0, {})", op, idx[i], n);
}
}  // namespace

void CpuBackend::index_select(const Tensor& x, const Tensor& index, Tensor& out) {
  const int64_t outer = x.size(0), n = x.size(1), inner = x.size(2), m = index.size(0);
  const int64_t* idx = index.data<int64_t>();
  check_indices(idx, m, n, "index_select");
  dispatch_all(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    parallel_for(outer * m, inner, [&](int64_t t) {
      const int64_t o = t / m, j = t % m;
      const T* src = xp + (o * n + idx[j]) * inner;
      T* dst = op + (o * m + j) * inner;
      for (int64_t k = 0; k < inner; ++k) dst[k] = src[k];
    });
  });
}

void CpuBackend::index_add(const Tensor& index, const Tensor& src, Tensor& out) {
  const int64_t outer = out.size(0), n = out.size(1), inner = out.size(2), m = index.size(0);
  const int64_t* idx = index.data<int64_t>();
  check_indices(idx, m, n, "index_add");
  dispatch_all(out.dtype(), [&]<typename T>() {
    const T* sp = src.data<T>();
    T* op = out.data<T>();
    // Parallel over (outer, inner-block): rows of the same target never race within a task.
    const int64_t block = 256;
    const int64_t nblocks = (inner + block - 1) / block;
    parallel_for(outer * nblocks, m * std::min(inner, block), [&](int64_t t) {
      const int64_t o = t / nblocks, lo = (t % nblocks) * block, hi = std::min(inner, lo + block);
      for (int64_t j = 0; j < m; ++j) {
        const T* s = sp + (o * m + j) * inner;
        T* d = op + (o * n + idx[j]) * inner;
        for (int64_t k = lo; k < hi; ++k) d[k] += s[k];
      }
    });
  });
}

void CpuBackend::gather(const Tensor& x, const Tensor& index, Tensor& out) {
  const int64_t outer = x.size(0), n = x.size(1), inner = x.size(2), m = index.size(1);
  const int64_t* idx = index.data<int64_t>();
  check_indices(idx, index.numel(), n, "gather");
  dispatch_all(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    parallel_for(outer * m, inner, [&](int64_t t) {
      const int64_t o = t / m, j = t % m;
      for (int64_t k = 0; k < inner; ++k) {
        const int64_t i = (o * m + j) * inner + k;
        op[i] = xp[(o * n + idx[i]) * inner + k];
      }
    });
  });
}

void CpuBackend::scatter_add(const Tensor& index, const Tensor& src, Tensor& out) {
  const int64_t outer = out.size(0), n = out.size(1), inner = out.size(2), m = index.size(1);
  const int64_t* idx = index.data<int64_t>();
  check_indices(idx, index.numel(), n, "scatter_add");
  dispatch_all(out.dtype(), [&]<typename T>() {
    const T* sp = src.data<T>();
    T* op = out.data<T>();
    // Parallel over (outer, inner): each task owns a column of the target.
    parallel_for(outer * inner, m, [&](int64_t t) {
      const int64_t o = t / inner, k = t % inner;
      for (int64_t j = 0; j < m; ++j) {
        const int64_t i = (o * m + j) * inner + k;
        op[(o * n + idx[i]) * inner + k] += sp[i];
      }
    });
  });
}

void CpuBackend::random(RandomKind kind, Tensor& out, double a, double b, uint64_t seed,
                        uint64_t offset) {
  dispatch_float(out.dtype(), "random", [&]<typename T>() {
    T* p = out.data<T>();
    const int64_t n = out.numel(), blocks = (n + 3) / 4, chunks = (blocks + kPhiloxChunk - 1) / kPhiloxChunk;
    // One Philox block gives elements 4 blk .. 4 blk + 3 (lanes 0..3): the numbers of
    // philox_uniform / philox_normal element by element, with each block computed once, and
    // kPhiloxChunk blocks side by side (philox4x32_10_chunk); each kind's loop over a chunk's
    // elements has no branch on the kind, so uniform and Bernoulli draws vectorise too.
    parallel_for(chunks, 64 * kPhiloxChunk, [&](int64_t chunk) {
      const int64_t first = chunk * kPhiloxChunk, base = 4 * first;
      uint32_t u[4 * kPhiloxChunk];
      philox4x32_10_chunk(offset + static_cast<uint64_t>(first), seed, u);
      const int64_t count = std::min<int64_t>(4 * kPhiloxChunk, n - base);
      T* x = p + base;
      switch (kind) {
        case RandomKind::Uniform:
          for (int64_t e = 0; e < count; ++e) x[e] = static_cast<T>(uniform_between(a, b, uint_to_unit(u[e])));
          break;
        case RandomKind::Bernoulli:
          for (int64_t e = 0; e < count; ++e) x[e] = uint_to_unit(u[e]) < a ? T(1) : T(0);
          break;
        case RandomKind::Normal:  // Box-Muller pairs lanes of one block
          for (int64_t e0 = 0; e0 < count; e0 += 4) {
            const PhiloxBlock block{{u[e0], u[e0 + 1], u[e0 + 2], u[e0 + 3]}};
            for (int lane = 0; lane < 4 && e0 + lane < count; ++lane)
              x[e0 + lane] = static_cast<T>(normal_with(a, b, normal_from_block(block, lane)));
          }
          break;
      }
    });
  });
}

}  // namespace posgrad::cpu
