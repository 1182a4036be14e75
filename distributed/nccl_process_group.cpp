// NcclProcessGroup: see nccl_process_group.h. Compiled only with NCCL's header and the CUDA
// backend; NCCL's functions come from nccl_library.h (loaded at run time).
#include "distributed/nccl_process_group.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

#include "distributed/nccl_library.h"
#include "tensor/error.h"

namespace posgrad::distributed {

namespace {

void check_nccl(ncclResult_t code, const char* what) {
  if (code != ncclSuccess) fail("NCCL {} failed: {}", what, nccl_library().get_error_string(code));
}

void check_cuda(cudaError_t code, const char* what) {
  if (code != cudaSuccess) fail("NCCL {}: CUDA error {}", what, cudaGetErrorString(code));
}

ncclDataType_t nccl_type(const Tensor& t, const char* what) {
  POSGRAD_CHECK(t.is_contiguous(), "NCCL {}: {} is not contiguous", what, t.describe());
  switch (t.dtype()) {
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::Int64: return ncclInt64;
  }
  fail("NCCL {}: unknown dtype", what);
}

}  // namespace

struct NcclProcessGroup::Communicator {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

NcclProcessGroup::NcclProcessGroup(ProcessGroup& host, int device_index)
    : host_(host), device_index_(device_index), comm_(std::make_unique<Communicator>()) {
  check_cuda(cudaSetDevice(device_index_), "device selection");
  ncclUniqueId id{};
  std::string bytes;
  if (host_.is_root()) {
    check_nccl(nccl_library().get_unique_id(&id), "unique id");
    bytes.assign(reinterpret_cast<const char*>(&id), sizeof(id));
  }
  host_.broadcast(bytes, 0);
  POSGRAD_CHECK(bytes.size() == sizeof(id), "NCCL bootstrap: rank 0 sent {} bytes, not an ncclUniqueId", bytes.size());
  std::memcpy(&id, bytes.data(), sizeof(id));
  check_nccl(nccl_library().comm_init_rank(&comm_->comm, host_.size(), id, host_.rank()), "communicator");
  check_cuda(cudaStreamCreateWithFlags(&comm_->stream, cudaStreamNonBlocking), "stream");
}

NcclProcessGroup::~NcclProcessGroup() {
  if (comm_->comm) nccl_library().comm_destroy(comm_->comm);
  if (comm_->stream) cudaStreamDestroy(comm_->stream);
}

void NcclProcessGroup::all_reduce_sum(Tensor& t) {
  if (t.device().is_cpu()) return host_.all_reduce_sum(t);
  if (t.numel() == 0) return;
  check_cuda(cudaDeviceSynchronize(), "all-reduce");  // the producer kernels are done
  check_nccl(nccl_library().all_reduce(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()), nccl_type(t, "all-reduce"),
                           ncclSum, comm_->comm, comm_->stream),
             "all-reduce");
  check_cuda(cudaStreamSynchronize(comm_->stream), "all-reduce");
}

void NcclProcessGroup::broadcast(Tensor& t, int root) {
  if (t.device().is_cpu()) return host_.broadcast(t, root);
  if (t.numel() == 0) return;
  check_cuda(cudaDeviceSynchronize(), "broadcast");
  check_nccl(nccl_library().broadcast(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()), nccl_type(t, "broadcast"),
                           root, comm_->comm, comm_->stream),
             "broadcast");
  check_cuda(cudaStreamSynchronize(comm_->stream), "broadcast");
}

Tensor NcclProcessGroup::all_gather(const Tensor& t) {
  if (t.device().is_cpu()) return host_.all_gather(t);
  Tensor mine = t.contiguous();
  Shape shape = mine.shape();
  shape[0] *= size();
  Tensor all = Tensor::empty(shape, mine.dtype(), mine.device());
  check_cuda(cudaDeviceSynchronize(), "all-gather");
  check_nccl(nccl_library().all_gather(mine.raw_data(), all.raw_data(), static_cast<size_t>(mine.numel()),
                           nccl_type(mine, "all-gather"), comm_->comm, comm_->stream),
             "all-gather");
  check_cuda(cudaStreamSynchronize(comm_->stream), "all-gather");
  return all;
}

void NcclProcessGroup::abort(int code) {
  if (comm_->comm) nccl_library().comm_abort(comm_->comm);
  comm_->comm = nullptr;
  host_.abort(code);
  std::_Exit(code);  // not reached: the host group's abort ends the process
}

}  // namespace posgrad::distributed
