// Asking about devices: whether CUDA tensors can be made here, how many GPUs there are, and the
// few CUDA-wide switches and statistics that apps and tests need. Every function exists in every
// build; in a CPU-only build (POSGRAD_CUDA=OFF or no toolkit) cuda_available() is false and the
// CUDA-only calls throw a clear posgrad::Error. This file deliberately holds no kernels: the CUDA
// backend itself is tensor/cuda/, which the CPU-only build does not compile at all.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/dtype.h"

namespace posgrad {

// True when posgrad was built with the CUDA backend AND at least one GPU can be used.
bool cuda_available();
// The number of usable GPUs (0 in a CPU-only build or without a driver/device).
int cuda_device_count();
// Why CUDA cannot be used here ("" when cuda_available()): a CPU-only build, no driver, no device.
std::string cuda_unavailable_reason();
// Throws a clear Error (naming `device` and the reason) unless `device` can hold tensors: the
// CPU always can; cuda:N needs the CUDA backend, a device and N < cuda_device_count().
void require_device(Device device);

// Waits until every queued kernel and copy on `device` has finished (a no-op on the CPU).
void synchronize(Device device);

// TF32 tensor cores for float32 matmul on CUDA (Ampere and later). Off by default: float32
// matmul then matches the CPU to float32 rounding. On: about 10 bits of mantissa in products.
void set_cuda_allow_tf32(bool allow);
bool cuda_allow_tf32();

// The caching device allocator's counters for one GPU (all zero in a CPU-only build).
struct CudaMemoryStats {
  int64_t device_mallocs = 0;   // cudaMalloc calls so far (flat in steady state)
  int64_t device_frees = 0;     // cudaFree calls so far (only empty_cache / out-of-memory retry)
  int64_t bytes_reserved = 0;   // bytes held from cudaMalloc (in use + cached)
  int64_t bytes_in_use = 0;     // bytes handed out to live storages
  int64_t blocks_cached = 0;    // free blocks waiting for reuse
};
CudaMemoryStats cuda_memory_stats(int device_index = 0);
// Returns every cached (free) block of every GPU to the driver.
void cuda_empty_cache();

// Times the work queued on a device between start() and stop(): CUDA events on the device's
// stream (what PyTorch's torch.cuda.Event measures; no host synchronisation inside the timed
// region), the host's steady clock on the CPU. elapsed_ms() waits for stop() to be reached.
class DeviceTimer {
 public:
  explicit DeviceTimer(Device device);
  ~DeviceTimer();
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;
  void start();
  void stop();
  double elapsed_ms();

 private:
  Device device_;
  void* start_event_ = nullptr;  // CUDA events (cudaEvent_t), on a GPU only
  void* stop_event_ = nullptr;
  double host_start_ms_ = 0, host_stop_ms_ = 0;
};

}  // namespace posgrad
