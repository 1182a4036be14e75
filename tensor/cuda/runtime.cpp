// CUDA runtime plumbing: probing for devices and installing the backend (initialize), the
// per-device contexts (stream, cuBLAS handle), the error messages of check.h, and
// the statistics/synchronisation/event entry points of runtime.h. No kernels here.
#include "tensor/cuda/runtime.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>

#include "tensor/cuda/allocator.h"
#include "tensor/cuda/context.h"
#include "tensor/cuda/cuda_backend.h"

namespace posgrad::cuda {

// ------------------------------------------------------------ errors (check.h)

void fail_cuda(cudaError_t error, const char* op, const char* call) {
  fail("{}: CUDA call {} failed: {} ({})", op, call, cudaGetErrorName(error), cudaGetErrorString(error));
}

namespace {
const char* cublas_status_name(int status) {
  switch (static_cast<cublasStatus_t>(status)) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unknown cuBLAS status";
}
}  // namespace

void fail_cublas(int status, const char* op, const char* call) {
  fail("{}: cuBLAS call {} failed: {} (status {})", op, call, cublas_status_name(status), status);
}

// ------------------------------------------------------------ contexts

namespace {

// Never destroyed (see context.h): one slot per device, created under the mutex and published
// through an atomic pointer, so the per-op lookup takes no lock.
struct Contexts {
  std::mutex mutex;
  std::array<std::atomic<DeviceContext*>, 64> slots{};
};
Contexts& contexts() {
  static auto* c = new Contexts();
  return *c;
}

// cuBLAS's recommended workspace for Hopper (enough for every earlier architecture too).
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

// The device this thread last made current (cudaSetDevice is then skipped when it is unchanged).
thread_local int t_current_device = -1;

}  // namespace

void make_current(int device) {
  if (t_current_device == device) return;
  POSGRAD_CUDA_CHECK("cuda context", cudaSetDevice(device));
  t_current_device = device;
}

DeviceContext& context(int device) {
  auto& all = contexts();
  if (device < 0 || device >= static_cast<int>(all.slots.size()))
    fail("cuda: device index {} is out of range", device);
  make_current(device);
  if (DeviceContext* ctx = all.slots[device].load(std::memory_order_acquire)) return *ctx;
  std::lock_guard<std::mutex> lock(all.mutex);
  if (DeviceContext* ctx = all.slots[device].load(std::memory_order_acquire)) return *ctx;
  auto* ctx = new DeviceContext();
  ctx->index = device;
  POSGRAD_CUDA_CHECK("cuda context", cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
  POSGRAD_CUDA_CHECK("cuda context",
                     cudaDeviceGetAttribute(&ctx->sm_count, cudaDevAttrMultiProcessorCount, device));
  all.slots[device].store(ctx, std::memory_order_release);
  return *ctx;
}

cublasHandle_t cublas_handle(DeviceContext& ctx) {
  std::lock_guard<std::mutex> lock(contexts().mutex);
  if (!ctx.cublas) {
    cublasHandle_t handle = nullptr;
    POSGRAD_CUBLAS_CHECK("matmul", cublasCreate(&handle));
    POSGRAD_CUBLAS_CHECK("matmul", cublasSetStream(handle, ctx.stream));
    void* workspace = device_allocate(kCublasWorkspaceBytes, ctx.index);  // held for good
    POSGRAD_CUBLAS_CHECK("matmul", cublasSetWorkspace(handle, workspace, kCublasWorkspaceBytes));
    // Pointer mode host: alpha and beta are host scalars.
    POSGRAD_CUBLAS_CHECK("matmul", cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
    ctx.cublas = handle;
  }
  return ctx.cublas;
}

void sync_stream(DeviceContext& ctx, const char* op) {
  POSGRAD_CUDA_CHECK(op, cudaStreamSynchronize(ctx.stream));
}

int64_t read_int64(DeviceContext& ctx, const int64_t* device_ptr, const char* op) {
  int64_t value = 0;
  POSGRAD_CUDA_CHECK(op, cudaMemcpyAsync(&value, device_ptr, sizeof(int64_t),
                                         cudaMemcpyDeviceToHost, ctx.stream));
  sync_stream(ctx, op);
  return value;
}

// ------------------------------------------------------------ initialisation

namespace {
void* hook_allocate(size_t nbytes, int device) { return device_allocate(nbytes, device); }
void hook_release(void* ptr, int device) { device_release(ptr, device); }
}  // namespace

const Availability& initialize() {
  static const Availability availability = [] {
    Availability a;
    int count = 0;
    const cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
      cudaGetLastError();  // clear it: not having a GPU is not an error of later calls
      a.reason = fmt::format("cudaGetDeviceCount failed: {} ({}); posgrad was built with CUDA, "
                             "but this machine has no usable GPU or driver",
                             cudaGetErrorName(error), cudaGetErrorString(error));
      return a;
    }
    if (count <= 0) {
      a.reason = "no CUDA device found (check CUDA_VISIBLE_DEVICES)";
      return a;
    }
    a.device_count = count;
    static CudaBackend backend;
    register_cuda_backend(&backend);
    cuda_allocator_hooks().allocate = hook_allocate;
    cuda_allocator_hooks().release = hook_release;
    return a;
  }();
  return availability;
}

void synchronize(int device) { sync_stream(context(device), "synchronize"); }

void* event_create(int device) {
  make_current(device);
  cudaEvent_t event = nullptr;
  POSGRAD_CUDA_CHECK("DeviceTimer", cudaEventCreate(&event));
  return event;
}

void event_record(void* event, int device) {
  POSGRAD_CUDA_CHECK("DeviceTimer", cudaEventRecord(static_cast<cudaEvent_t>(event), context(device).stream));
}

double event_elapsed_ms(void* start, void* stop) {
  POSGRAD_CUDA_CHECK("DeviceTimer", cudaEventSynchronize(static_cast<cudaEvent_t>(stop)));
  float ms = 0;
  POSGRAD_CUDA_CHECK("DeviceTimer", cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start),
                                                         static_cast<cudaEvent_t>(stop)));
  return ms;
}

void event_destroy(void* event) { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }

CudaMemoryStats memory_stats(int device) {
  const AllocatorCounters c = device_allocator_counters(device);
  return {c.mallocs, c.frees, c.bytes_reserved, c.bytes_in_use, c.blocks_cached};
}

void empty_cache() { device_empty_cache(); }

}  // namespace posgrad::cuda
