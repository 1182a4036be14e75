// Storage: a reference-counted block of device memory that tensors (and their views) share.
// CPU memory comes from the caching host allocator (tensor/cpu/caching_allocator.h): 64-byte
// aligned, and NOT zeroed (a block may be reused from an earlier tensor); CUDA memory from the
// hooks below. Live storages are counted (storage_counters) so that leak checks can see whether
// a training step returns to the same state. This file knows nothing of shapes.
#pragma once

#include <cstddef>
#include <memory>

#include "tensor/dtype.h"

namespace posgrad {

class Storage {
 public:
  Storage(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
};

using StoragePtr = std::shared_ptr<Storage>;

// Process-wide counts of Storage objects, all devices together (relaxed atomics: exact whenever
// no other thread is making or dropping tensors).
struct StorageCounters {
  int64_t live = 0;        // Storage objects alive now
  int64_t live_bytes = 0;  // the bytes they were asked for
  int64_t created = 0;     // Storage objects made since the process started
};
StorageCounters storage_counters();

// Hooks the CUDA backend installs when it is linked in (see tensor/cuda/); null otherwise.
struct DeviceAllocator {
  void* (*allocate)(size_t nbytes, int device_index) = nullptr;
  void (*release)(void* ptr, int device_index) = nullptr;
};
DeviceAllocator& cuda_allocator_hooks();

}  // namespace posgrad
