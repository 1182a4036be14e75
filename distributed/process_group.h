// ProcessGroup: the processes of one data-parallel run, and the few collective operations
// training needs between them. Every rank holds a full copy of the model; after each backward
// the gradients are summed over the ranks (all_reduce_sum) and divided by size() (see
// gradient_averager.h), so every rank takes the same optimizer step.
//
//   ProcessGroup& world = distributed::world();   // rank and size from the launcher (mpirun, srun)
//   if (world.is_root()) { ... write the run folder ... }
//
// Engines (each in its own file):
//   SingleProcessGroup  size 1, every collective a no-op: what a run not launched by mpirun or
//                       srun gets, and what every build without MPI gets (single_process_group.h)
//   MpiProcessGroup     OpenMPI (or any MPI) on CPU tensors and host values (mpi_process_group.h)
//   NcclProcessGroup    NCCL for CUDA tensors; MPI only launches and bootstraps it and carries
//                       the host values (nccl_process_group.h)
// Every operation is collective: every rank must call it, in the same order, with tensors of the
// same shape and dtype. Tensors are reduced in place and must be contiguous. A sum can also be
// started and waited for later (start_all_reduce_sum): started sums count in that one order at
// the moment they start, so every rank starts them in the same order too.
//
// Deliberately does not: sub-groups, point-to-point messages, reduce-scatter (sharded optimizer
// states), or fault tolerance: a rank that dies ends the run (the launcher stops the others;
// docs/distributed.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace posgrad::distributed {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string engine() const = 0;  // "single", "mpi", "nccl"
  bool is_root() const { return rank() == 0; }

  // Sums the float32 or float64 tensor `t` (contiguous, on a device this engine serves) over the
  // ranks, in place: afterwards every rank holds the same sum.
  virtual void all_reduce_sum(Tensor& t) = 0;
  // A sum started by start_all_reduce_sum. wait() returns when the tensor holds the sum;
  // progress() lets the engine move it on (MPI advances non-blocking collectives only inside
  // MPI calls) and says whether it is done. Destroying an unfinished one waits for it.
  class PendingSum {
   public:
    virtual ~PendingSum() = default;
    virtual void wait() = 0;
    virtual bool progress() = 0;
  };
  // Starts all_reduce_sum(t) and returns; `t` must stay alive and untouched until wait().
  // The default sums at once (blocking): engines without a non-blocking form (single; NCCL, whose
  // reductions run on a GPU stream of their own anyway).
  virtual std::unique_ptr<PendingSum> start_all_reduce_sum(Tensor& t) {
    all_reduce_sum(t);
    struct Done final : PendingSum {
      void wait() override {}
      bool progress() override { return true; }
    };
    return std::make_unique<Done>();
  }
  // Whether start_all_reduce_sum returns before the sum is done (MPI). Where it does not, the
  // gradient averager does not overlap (a sum inside the backward would only stall it).
  virtual bool sums_in_background() const { return false; }
  // Sums host numbers (metrics, counts) over the ranks, in place.
  virtual void all_reduce_sum(std::vector<double>& values) = 0;
  // Rank `root`'s tensor into every rank's `t` (same shape and dtype everywhere).
  virtual void broadcast(Tensor& t, int root) = 0;
  // Rank `root`'s bytes into every rank's `bytes` (the sizes may differ before the call).
  virtual void broadcast(std::string& bytes, int root) = 0;
  // Every rank's `t` [b, ...] (the same shape on every rank) stacked along axis 0 in rank order:
  // [size() * b, ...] on every rank.
  virtual Tensor all_gather(const Tensor& t) = 0;
  virtual void barrier() = 0;
  // Ends every process of the run with `code` at once (a rank that failed must not leave the
  // others waiting in a collective).
  [[noreturn]] virtual void abort(int code) = 0;
};

// The group of this process, made at the first call from the launcher's environment
// (launch_environment.h): an MpiProcessGroup when launched as one of several ranks, else a
// SingleProcessGroup. Throws Error when launched as several ranks by a build without MPI.
// MPI is finalized when the process exits normally.
ProcessGroup& world();
// world() if something already called it, else nullptr (for error paths that must not start MPI).
ProcessGroup* world_if_started();

// The group that reduces gradients on `device`: the NCCL group for a CUDA device when NCCL was
// built in (made at the first call, bootstrapped over world()), else world() (MPI reduces host
// copies of CUDA tensors then).
ProcessGroup& group_for(Device device);

}  // namespace posgrad::distributed
