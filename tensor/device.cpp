// Device queries (see device.h). The one file outside tensor/cuda/ that knows whether the CUDA
// backend was compiled in (POSGRAD_HAVE_CUDA); everything CUDA-specific is forwarded to
// tensor/cuda/runtime.h. In a CPU-only build the answers are "no CUDA" and the CUDA-only calls
// throw a clear Error.
#include "tensor/device.h"

#include <atomic>
#include <chrono>

#ifdef POSGRAD_HAVE_CUDA
#include "tensor/cuda/runtime.h"
#endif

namespace posgrad {

namespace {
std::atomic<bool> g_allow_tf32{false};
}

int cuda_device_count() {
#ifdef POSGRAD_HAVE_CUDA
  return cuda::initialize().device_count;
#else
  return 0;
#endif
}

bool cuda_available() { return cuda_device_count() > 0; }

std::string cuda_unavailable_reason() {
#ifdef POSGRAD_HAVE_CUDA
  return cuda::initialize().reason;
#else
  return "posgrad was built without the CUDA backend (POSGRAD_CUDA=OFF or no CUDA toolkit found)";
#endif
}

void require_device(Device device) {
  if (device.is_cpu()) return;
  const int count = cuda_device_count();
  if (count == 0)
    fail("a tensor on {} was requested, but CUDA cannot be used: {}", device.str(),
         cuda_unavailable_reason());
  if (device.index < 0 || device.index >= count)
    fail("a tensor on {} was requested, but there {} only {} CUDA device{} (cuda:0{})",
         device.str(), count == 1 ? "is" : "are", count, count == 1 ? "" : "s",
         count == 1 ? "" : fmt::format(" to cuda:{}", count - 1));
}

void synchronize(Device device) {
  if (device.is_cpu()) return;
  require_device(device);
#ifdef POSGRAD_HAVE_CUDA
  cuda::synchronize(device.index);
#endif
}

void set_cuda_allow_tf32(bool allow) { g_allow_tf32.store(allow); }
bool cuda_allow_tf32() { return g_allow_tf32.load(); }

CudaMemoryStats cuda_memory_stats(int device_index) {
#ifdef POSGRAD_HAVE_CUDA
  if (cuda_available()) return cuda::memory_stats(device_index);
#endif
  (void)device_index;
  return {};
}

void cuda_empty_cache() {
#ifdef POSGRAD_HAVE_CUDA
  if (cuda_available()) cuda::empty_cache();
#endif
}

namespace {
double host_now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

DeviceTimer::DeviceTimer(Device device) : device_(device) {
  require_device(device);
#ifdef POSGRAD_HAVE_CUDA
  if (device.is_cuda()) {
    start_event_ = cuda::event_create(device.index);
    try {
      stop_event_ = cuda::event_create(device.index);
    } catch (...) {
      cuda::event_destroy(start_event_);
      throw;
    }
  }
#endif
}

DeviceTimer::~DeviceTimer() {
#ifdef POSGRAD_HAVE_CUDA
  if (start_event_) cuda::event_destroy(start_event_);
  if (stop_event_) cuda::event_destroy(stop_event_);
#endif
}

void DeviceTimer::start() {
#ifdef POSGRAD_HAVE_CUDA
  if (start_event_) return cuda::event_record(start_event_, device_.index);
#endif
  host_start_ms_ = host_now_ms();
}

void DeviceTimer::stop() {
#ifdef POSGRAD_HAVE_CUDA
  if (stop_event_) return cuda::event_record(stop_event_, device_.index);
#endif
  host_stop_ms_ = host_now_ms();
}

double DeviceTimer::elapsed_ms() {
#ifdef POSGRAD_HAVE_CUDA
  if (start_event_) return cuda::event_elapsed_ms(start_event_, stop_event_);
#endif
  return host_stop_ms_ - host_start_ms_;
}

}  // namespace posgrad
