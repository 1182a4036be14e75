// The caching device allocator: what Storage uses for cuda:N memory (installed into
// cuda_allocator_hooks() of tensor/storage.h). Requests are rounded up to a size class (512-byte
// granularity below 1 MiB, then four classes per power of two, so at most 25% slack) and each
// device keeps one free list per class. A freed block goes back to its list at once: every
// kernel and copy of a device runs on that device's single stream, so a later user of the block
// is ordered after every earlier one without events. cudaMalloc is called only when a list is
// empty; when it fails, the cache is emptied and the call retried once before an Error.
// Deliberately not here: splitting or merging blocks, per-stream pools, memory limits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace posgrad::cuda {

void* device_allocate(size_t nbytes, int device);  // throws posgrad::Error when out of memory
void device_release(void* ptr, int device) noexcept;
void device_empty_cache();

struct AllocatorCounters {
  int64_t mallocs = 0, frees = 0, bytes_reserved = 0, bytes_in_use = 0, blocks_cached = 0;
};
AllocatorCounters device_allocator_counters(int device);

// Scratch memory for one launch (split reductions): released when it goes out of scope, which is
// safe right after queueing the kernels that use it (stream order, see above).
class DeviceScratch {
 public:
  DeviceScratch(size_t nbytes, int device) : ptr_(device_allocate(nbytes, device)), device_(device) {}
  ~DeviceScratch() { device_release(ptr_, device_); }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  template <typename T> T* as() const { return static_cast<T*>(ptr_); }

 private:
  void* ptr_;
  int device_;
};

}  // namespace posgrad::cuda
