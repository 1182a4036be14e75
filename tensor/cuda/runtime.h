// The entry points that code outside tensor/cuda/ calls (tensor/device.cpp, nn/adam.cpp) in a
// build with the CUDA backend. Plain C++: no CUDA headers, so those files compile with the host
// compiler alone. The CPU-only build neither compiles nor includes this.
#pragma once

#include <string>

#include "tensor/device.h"
#include "tensor/tensor.h"

namespace posgrad::cuda {

// Probes the driver once (thread-safe). With at least one usable GPU it registers the CUDA
// backend (register_cuda_backend) and installs the caching allocator into
// cuda_allocator_hooks(); otherwise `reason` says why not (e.g. CUDA's "no CUDA-capable device").
struct Availability {
  int device_count = 0;
  std::string reason;
};
const Availability& initialize();

void synchronize(int device);

// CUDA events for DeviceTimer (device.h), as opaque pointers: recorded on the device's stream.
void* event_create(int device);
void event_record(void* event, int device);
double event_elapsed_ms(void* start, void* stop);  // waits for `stop`
void event_destroy(void* event);
CudaMemoryStats memory_stats(int device);
void empty_cache();

// The fused Adam/AdamW update on the GPU: param, m, v (and vmax with amsgrad) contiguous, grad any
// strides, all on the same CUDA device and of one floating dtype. Arguments as in nn/adam.cpp.
struct AdamUpdate {
  double beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, decay;
  double neg_step_size, bias2_sqrt;
  bool decoupled, l2, amsgrad;
};
void adam_update(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, Tensor& vmax,
                 const AdamUpdate& k);

}  // namespace posgrad::cuda
