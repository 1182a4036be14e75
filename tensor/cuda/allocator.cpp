// The caching device allocator (see allocator.h): size classes, one free list per class and
// device, cudaMalloc only on a miss, and one empty-the-cache-and-retry on out-of-memory.
#include "tensor/cuda/allocator.h"

#include <array>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tensor/cuda/check.h"
#include "tensor/cuda/context.h"
#include "tensor/error.h"

namespace posgrad::cuda {

namespace {

constexpr size_t kSmallGranule = 512;            // below 1 MiB: multiples of 512 bytes
constexpr size_t kSmallLimit = size_t{1} << 20;  // from 1 MiB: 4 classes per power of two

// The size class (bytes actually allocated) for a request of n > 0 bytes.
size_t size_class(size_t n) {
  if (n <= kSmallLimit) return (n + kSmallGranule - 1) / kSmallGranule * kSmallGranule;
  size_t pow2 = kSmallLimit;
  while (pow2 * 2 < n) pow2 *= 2;   // pow2 < n <= 2 * pow2
  const size_t step = pow2 / 4;     // classes pow2 * {1.25, 1.5, 1.75, 2}
  return (n + step - 1) / step * step;
}

struct DevicePool {
  std::map<size_t, std::vector<void*>> free_lists;    // size class -> free blocks
  std::unordered_map<void*, size_t> live;             // block -> size class, while handed out
  AllocatorCounters counters;
};

// Never destroyed: Storage destructors may run during static destruction.
struct Pools {
  std::mutex mutex;
  std::array<DevicePool, 64> devices;
};
Pools& pools() {
  static auto* p = new Pools();
  return *p;
}

DevicePool& pool(int device) {
  if (device < 0 || device >= 64) fail("cuda allocator: device index {} is out of range", device);
  return pools().devices[device];
}

// Frees every cached block of one pool (caller holds the mutex and has set the device).
void release_cached(DevicePool& p) {
  for (auto& [bytes, blocks] : p.free_lists) {
    for (void* block : blocks) {
      cudaFree(block);  // a failure here leaves the block to the driver at exit
      p.counters.frees += 1;
      p.counters.bytes_reserved -= static_cast<int64_t>(bytes);
    }
  }
  p.free_lists.clear();
  p.counters.blocks_cached = 0;
}

}  // namespace

void* device_allocate(size_t nbytes, int device) {
  if (nbytes == 0) return nullptr;
  const size_t bytes = size_class(nbytes);
  std::lock_guard<std::mutex> lock(pools().mutex);
  DevicePool& p = pool(device);
  auto it = p.free_lists.find(bytes);
  void* block = nullptr;
  if (it != p.free_lists.end() && !it->second.empty()) {
    block = it->second.back();
    it->second.pop_back();
    p.counters.blocks_cached -= 1;
  } else {
    make_current(device);
    cudaError_t error = cudaMalloc(&block, bytes);
    if (error == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear, then give the cache back to the driver and try once more
      POSGRAD_CUDA_CHECK("cuda allocator", cudaDeviceSynchronize());
      release_cached(p);
      error = cudaMalloc(&block, bytes);
    }
    if (error != cudaSuccess) {
      cudaGetLastError();
      fail("cuda allocator: out of memory on cuda:{} allocating {} bytes ({} bytes in use by "
           "tensors, {} reserved): cudaMalloc failed with {} ({})",
           device, nbytes, p.counters.bytes_in_use, p.counters.bytes_reserved,
           cudaGetErrorName(error), cudaGetErrorString(error));
    }
    p.counters.mallocs += 1;
    p.counters.bytes_reserved += static_cast<int64_t>(bytes);
  }
  p.live.emplace(block, bytes);
  p.counters.bytes_in_use += static_cast<int64_t>(bytes);
  return block;
}

void device_release(void* ptr, int device) noexcept {
  if (!ptr || device < 0 || device >= 64) return;
  std::lock_guard<std::mutex> lock(pools().mutex);
  DevicePool& p = pools().devices[device];
  auto it = p.live.find(ptr);
  if (it == p.live.end()) return;  // not ours: ignore rather than corrupt the lists
  const size_t bytes = it->second;
  p.live.erase(it);
  p.free_lists[bytes].push_back(ptr);
  p.counters.bytes_in_use -= static_cast<int64_t>(bytes);
  p.counters.blocks_cached += 1;
}

void device_empty_cache() {
  std::lock_guard<std::mutex> lock(pools().mutex);
  for (int d = 0; d < 64; ++d) {
    DevicePool& p = pools().devices[d];
    if (p.free_lists.empty()) continue;
    make_current(d);
    // Queued kernels may still read blocks that are already back in the lists: wait first.
    POSGRAD_CUDA_CHECK("cuda_empty_cache", cudaDeviceSynchronize());
    release_cached(p);
  }
}

AllocatorCounters device_allocator_counters(int device) {
  std::lock_guard<std::mutex> lock(pools().mutex);
  return pool(device).counters;
}

}  // namespace posgrad::cuda
