// Per-GPU state of the CUDA backend: the device's one stream (every kernel, copy and cuBLAS call
// for that device is queued on it, so work on one device is ordered without events), its cuBLAS
// handle with a workspace from the caching allocator.
// Contexts are created on first use and live until the process ends (never destroyed, so tensors
// freed during static destruction are still safe). This file deliberately holds no kernels.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/cuda/check.h"

namespace posgrad::cuda {

struct DeviceContext {
  int index = 0;
  cudaStream_t stream = nullptr;
  int sm_count = 0;
  cublasHandle_t cublas = nullptr;  // created on first matmul
};

// Makes `device` the calling thread's current CUDA device. Every switch in posgrad goes through
// here (never a bare cudaSetDevice), so an unchanged device costs no driver call.
void make_current(int device);
// The context of `device` (created on first use). Also makes `device` the calling thread's
// current CUDA device, so launches and cudaMalloc go to the right GPU.
DeviceContext& context(int device);
// The cuBLAS handle of the context, bound to its stream (created on first use).
cublasHandle_t cublas_handle(DeviceContext& ctx);

// Waits for the device's stream; `op` names the caller in the error message.
void sync_stream(DeviceContext& ctx, const char* op);
// Reads one int64 of device memory back to the host (queues the copy on the stream and waits).
int64_t read_int64(DeviceContext& ctx, const int64_t* device_ptr, const char* op);

}  // namespace posgrad::cuda
