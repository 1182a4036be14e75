// MpiProcessGroup: the ranks of MPI_COMM_WORLD (OpenMPI from Debian's libopenmpi-dev, or any
// MPI found by CMake's FindMPI) as a ProcessGroup. The constructor initializes MPI (threads:
// MPI_THREAD_FUNNELED, only the main thread calls MPI; OpenMP threads never do) and the
// destructor finalizes it. Errors of MPI calls come back as posgrad::Error naming the operation
// and MPI's own message (MPI_ERRORS_RETURN), never as a silent abort.
//
// Tensors must be on the CPU here: CUDA tensors go through NcclProcessGroup, or are copied to
// the host by the caller (gradient_averager.h does that when NCCL is absent).
//
// start_all_reduce_sum is MPI_Iallreduce: the gradient averager starts each bucket's sum during
// the backward and waits at its end. Without an asynchronous progress thread (OpenMPI's default)
// MPI moves such a sum on only inside MPI calls, so the averager calls progress() as it goes.
//
// Deliberately does not: choose a GPU, split the communicator, or run a progress thread of its
// own.
#pragma once

#include "distributed/process_group.h"

namespace posgrad::distributed {

class MpiProcessGroup final : public ProcessGroup {
 public:
  MpiProcessGroup();   // MPI_Init_thread; throws Error when MPI cannot start
  ~MpiProcessGroup() override;  // MPI_Finalize
  MpiProcessGroup(const MpiProcessGroup&) = delete;
  MpiProcessGroup& operator=(const MpiProcessGroup&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string engine() const override { return "mpi"; }
  void all_reduce_sum(Tensor& t) override;
  std::unique_ptr<PendingSum> start_all_reduce_sum(Tensor& t) override;
  bool sums_in_background() const override { return true; }
  void all_reduce_sum(std::vector<double>& values) override;
  void broadcast(Tensor& t, int root) override;
  void broadcast(std::string& bytes, int root) override;
  Tensor all_gather(const Tensor& t) override;
  void barrier() override;
  [[noreturn]] void abort(int code) override;

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace posgrad::distributed
