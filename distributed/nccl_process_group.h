// NcclProcessGroup: NCCL all-reduce, broadcast and all-gather of CUDA tensors between the ranks
// of a run, one GPU per rank (the rank's local_rank picks it, launch_environment.h). MPI launches
// the ranks and bootstraps NCCL (rank 0's ncclUniqueId is broadcast over `host`), and carries
// everything that is not a CUDA tensor: host numbers, strings, barriers, abort, and CPU tensors.
// Each call runs on the current stream of the device and waits for it (the tensors are ready
// when it returns), so the rest of posgrad needs no stream handling.
//
// Built only where CMake finds NCCL's header (nccl.h) and the CUDA backend; the library is loaded
// when the first group is made (nccl_library.h), which throws Error saying why when it cannot be.
// NOT YET RUN on a GPU: no GPU was lent to this work (docs/distributed.md); the nccl_engine
// tests run it as one rank on the first GPU that gpu_check.sh gets.
//
// Deliberately does not: overlap communication with computation on a side stream (its sums are
// not started in the background, so the gradient averager does not overlap them with the
// backward), or use more than one GPU per rank.
#pragma once

#include <memory>

#include "distributed/process_group.h"

namespace posgrad::distributed {

class NcclProcessGroup final : public ProcessGroup {
 public:
  // `host` carries the bootstrap and every host operation; it must outlive this group.
  NcclProcessGroup(ProcessGroup& host, int device_index);
  ~NcclProcessGroup() override;

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  std::string engine() const override { return "nccl"; }
  void all_reduce_sum(Tensor& t) override;
  void all_reduce_sum(std::vector<double>& values) override { host_.all_reduce_sum(values); }
  void broadcast(Tensor& t, int root) override;
  void broadcast(std::string& bytes, int root) override { host_.broadcast(bytes, root); }
  Tensor all_gather(const Tensor& t) override;
  void barrier() override { host_.barrier(); }
  [[noreturn]] void abort(int code) override;

 private:
  struct Communicator;
  ProcessGroup& host_;
  int device_index_;
  std::unique_ptr<Communicator> comm_;
};

}  // namespace posgrad::distributed
