// Error checking for every CUDA runtime and cuBLAS call: a failed call throws posgrad::Error
// naming the posgrad op, the call as written, and CUDA's own error name and text, e.g.
//   "matmul: cublasGemmStridedBatchedEx(...) failed: CUBLAS_STATUS_INVALID_VALUE (...)".
// Kernel launches are checked with check_launch (launch configuration errors); faults inside a
// kernel surface at the next synchronising call, which names its own op. This header includes
// only the CUDA runtime API (no fmt, no Tensor) so the .cu files can use it; the messages are
// built in runtime.cpp. It deliberately holds no retry or recovery logic.
#pragma once

#include <cuda_runtime_api.h>

namespace posgrad::cuda {

[[noreturn]] void fail_cuda(cudaError_t error, const char* op, const char* call);
[[noreturn]] void fail_cublas(int status, const char* op, const char* call);

inline void check_cuda(cudaError_t error, const char* op, const char* call) {
  if (error != cudaSuccess) fail_cuda(error, op, call);
}
// After a <<<...>>> launch: reports (and clears) a launch error.
inline void check_launch(const char* op, const char* kernel) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) fail_cuda(error, op, kernel);
}

}  // namespace posgrad::cuda

// POSGRAD_CUDA_CHECK("op", cudaMemcpyAsync(...)): runs the call and throws on failure.
#define POSGRAD_CUDA_CHECK(op, call) ::posgrad::cuda::check_cuda((call), (op), #call)
#define POSGRAD_CUBLAS_CHECK(op, call)                                            \
  do {                                                                            \
    const auto posgrad_cublas_status_ = (call);                                   \
    if (posgrad_cublas_status_ != 0)                                              \
      ::posgrad::cuda::fail_cublas(static_cast<int>(posgrad_cublas_status_), (op), #call); \
  } while (0)
