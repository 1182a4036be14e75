// GradientAverager: after the backward of every rank, the mean of the ranks' gradients in every
// rank's parameters, so the optimizer takes the same step everywhere:
//
//   GradientAverager averager(model.parameters(), group);   // the same parameters on every rank
//   loss.backward();                 // (with accumulation: after the last micro-batch only)
//   averager.average();              // grad <- (sum over ranks of grad) / size
//   opt.step();
//
// The gradients travel in buckets: the parameters, in order, are packed into flat buffers of at
// most `bucket_bytes` (one dtype and device per bucket; a larger parameter gets a bucket of its
// own), one all-reduce per bucket. A parameter with no gradient on some ranks counts as zeros
// there; one with no gradient on every rank stays without one (the optimizer skips it, as it
// would in one process). That needs one small all-reduce of flags per call.
// CUDA gradients go through NCCL when the group is an NcclProcessGroup; with an MPI group they
// are staged through host memory.
//
// With a global batch B cut into B/p per rank and a loss that is the mean over the batch, the
// averaged gradient is the gradient of the mean over B: the single-process step, up to the
// floating-point order of the sums (docs/distributed.md).
//
// Timing: stats() counts the calls, the seconds spent packing, reducing and unpacking, and the
// bytes each rank sent into the reduction (the payload; the ring moves about 2(p-1)/p of it).
//
// Deliberately does not: overlap the reduction with the backward (posgrad's engine has no
// per-parameter hook that fires when a gradient is final; docs/distributed.md), compress
// gradients, or shard optimizer state.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/variable.h"
#include "distributed/process_group.h"

namespace posgrad::distributed {

class GradientAverager {
 public:
  static constexpr int64_t kDefaultBucketBytes = int64_t{4} << 20;

  GradientAverager(std::vector<Variable> parameters, ProcessGroup& group, int64_t bucket_bytes = kDefaultBucketBytes);

  void average();

  struct Stats {
    int64_t calls = 0;
    double seconds = 0;       // wall time inside average()
    int64_t bytes = 0;        // gradient payload all-reduced, summed over calls
  };
  const Stats& stats() const { return stats_; }
  int64_t buckets() const { return static_cast<int64_t>(buckets_.size()); }

 private:
  struct Bucket {
    std::vector<size_t> members;  // indices into parameters_
    int64_t elements = 0;
    DType dtype = kFloat32;
    Device device = kCPU;
  };
  std::vector<Variable> parameters_;
  ProcessGroup& group_;
  std::vector<Bucket> buckets_;
  Stats stats_;
};

}  // namespace posgrad::distributed
