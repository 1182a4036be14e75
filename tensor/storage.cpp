// Storage allocation (see storage.h).
#include "tensor/storage.h"

#include <atomic>

#include "tensor/cpu/caching_allocator.h"
#include "tensor/device.h"

namespace posgrad {

DeviceAllocator& cuda_allocator_hooks() {
  static DeviceAllocator hooks;
  return hooks;
}

namespace {
std::atomic<int64_t> g_live{0}, g_live_bytes{0}, g_created{0};
}

StorageCounters storage_counters() {
  return {g_live.load(std::memory_order_relaxed), g_live_bytes.load(std::memory_order_relaxed),
          g_created.load(std::memory_order_relaxed)};
}

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  if (device.is_cpu()) {
    data_ = nbytes ? cpu::cached_allocate(nbytes) : nullptr;  // reused blocks are not zeroed
  } else {
    require_device(device);  // a clear Error without the CUDA backend, a GPU, or that index
    auto& hooks = cuda_allocator_hooks();
    if (!hooks.allocate)
      fail("tensor on {} requested, but the CUDA backend installed no allocator", device.str());
    data_ = nbytes ? hooks.allocate(nbytes, device.index) : nullptr;
  }
  // Counted only once allocated: a constructor that throws leaves no object to destroy.
  g_live.fetch_add(1, std::memory_order_relaxed);
  g_live_bytes.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
  g_created.fetch_add(1, std::memory_order_relaxed);
}

Storage::~Storage() {
  g_live.fetch_sub(1, std::memory_order_relaxed);
  g_live_bytes.fetch_sub(static_cast<int64_t>(nbytes_), std::memory_order_relaxed);
  if (!data_) return;
  if (device_.is_cpu()) cpu::cached_release(data_, nbytes_);
  else cuda_allocator_hooks().release(data_, device_.index);
}

Device Device::parse(const std::string& name) {
  if (name == "cpu") return Device{};
  if (name == "cuda") return Device{DeviceType::CUDA, 0};
  if (name.rfind("cuda:", 0) == 0) {
    try {
      return Device{DeviceType::CUDA, std::stoi(name.substr(5))};
    } catch (const std::exception&) {
    }
  }
  fail("unknown device '{}': expected cpu, cuda or cuda:N", name);
}

}  // namespace posgrad
