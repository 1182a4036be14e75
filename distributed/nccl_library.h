// NcclLibrary: the few NCCL functions the NCCL engine calls, loaded at run time from
// libnccl.so.2 (dlopen) instead of linked. A build with NCCL's header then runs on machines
// without the library (over 200 MB, which the GPU bundle cannot carry): every program starts,
// and only a data-parallel run on CUDA tensors, or the nccl_engine tests, need it, and say why
// when it cannot be loaded. The loader's search applies (LD_LIBRARY_PATH, the ld.so cache).
//
// Deliberately does not: pick among several NCCL versions, or wrap NCCL's API beyond these calls.
#pragma once

#include <nccl.h>

#include <string>

namespace posgrad::distributed {

struct NcclLibrary {
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetErrorString) get_error_string = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
};

// The library, loaded at the first call; throws Error naming the library and the loader's
// message when it cannot be loaded or lacks a function.
const NcclLibrary& nccl_library();
// "" when nccl_library() loads, else why it does not (for skipping tests and for messages).
std::string nccl_unavailable_reason();

}  // namespace posgrad::distributed
