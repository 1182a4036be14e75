// NcclLibrary: see nccl_library.h. Compiled only where CMake finds nccl.h.
#include "distributed/nccl_library.h"

#include <dlfcn.h>

#include "tensor/error.h"

namespace posgrad::distributed {

namespace {

constexpr const char* kLibrary = "libnccl.so.2";

struct Loaded {
  NcclLibrary functions;
  std::string error;  // "" when every function was found
};

template <typename Function>
void find(void* handle, const char* name, Function& slot, std::string& error) {
  slot = reinterpret_cast<Function>(dlsym(handle, name));
  if (!slot && error.empty()) error = std::string(kLibrary) + " has no function " + name;
}

Loaded load() {
  Loaded l;
  void* handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);  // kept open for the process's life
  if (!handle) {
    const char* why = dlerror();
    l.error = std::string("cannot load ") + kLibrary + ": " + (why ? why : "unknown reason") +
              " (install NCCL, or add its folder to LD_LIBRARY_PATH)";
    return l;
  }
  NcclLibrary& f = l.functions;
  find(handle, "ncclGetVersion", f.get_version, l.error);
  find(handle, "ncclGetErrorString", f.get_error_string, l.error);
  find(handle, "ncclGetUniqueId", f.get_unique_id, l.error);
  find(handle, "ncclCommInitRank", f.comm_init_rank, l.error);
  find(handle, "ncclCommDestroy", f.comm_destroy, l.error);
  find(handle, "ncclCommAbort", f.comm_abort, l.error);
  find(handle, "ncclAllReduce", f.all_reduce, l.error);
  find(handle, "ncclBroadcast", f.broadcast, l.error);
  find(handle, "ncclAllGather", f.all_gather, l.error);
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const NcclLibrary& nccl_library() {
  if (!loaded().error.empty()) fail("NCCL: {}", loaded().error);
  return loaded().functions;
}

std::string nccl_unavailable_reason() { return loaded().error; }

}  // namespace posgrad::distributed
