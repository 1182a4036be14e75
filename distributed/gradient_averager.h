// GradientAverager: after the backward of every rank, the mean of the ranks' gradients in every
// rank's parameters, so the optimizer takes the same step everywhere:
//
//   GradientAverager averager(model.parameters(), group);   // the same parameters on every rank
//   averager.overlap_next_backward();   // optional: sum buckets while the backward runs
//   loss.backward();                    // (with accumulation: arm only the last micro-batch's)
//   averager.average();                 // grad <- (sum over ranks of grad) / size
//   opt.step();
//
// The gradients travel in buckets: the parameters, last to first (the order the backward
// finishes their gradients), are packed into flat buffers of at most `bucket_bytes` of gradient
// (one dtype and device per bucket; a larger parameter gets a bucket of its own), one all-reduce
// per bucket. Each buffer ends with one flag per parameter (1 where this rank has a gradient),
// summed with it: a parameter with no gradient on some ranks counts as zeros there; one with no
// gradient on every rank stays without one (the optimizer skips it, as it would in one process).
// CUDA gradients go through NCCL when the group is an NcclProcessGroup; with an MPI group they
// are staged through host memory.
//
// Overlap: the averager puts a gradient-ready hook on every parameter (Variable::
// set_grad_ready_hook). After overlap_next_backward(), the next backward starts a bucket's sum
// (ProcessGroup::start_all_reduce_sum) as soon as every gradient in it is final, in bucket order
// (every rank must start the same sums in the same order, whatever order its own gradients come
// in), and average() starts the buckets still waiting (parameters that backward did not reach),
// then waits for all. Without it, or with a group whose sums do not run in the background
// (ProcessGroup::sums_in_background: NCCL here), average() sums bucket after bucket. Both paths pack the same
// buffers and sum them with the same operation: two ranks give bit-identical results (with more,
// MPI may order a non-blocking sum differently from a blocking one).
//
// With a global batch B cut into B/p per rank and a loss that is the mean over the batch, the
// averaged gradient is the gradient of the mean over B: the single-process step, up to the
// floating-point order of the sums (docs/distributed.md).
//
// Timing: stats() counts the calls, the seconds inside average() (the time the step waits for the
// gradients after its backward), the seconds the hooks took inside the backward (packing and
// starting buckets), the buckets started during the backward, and the gradient bytes each rank
// sent into the reduction (the payload; the ring moves about 2(p-1)/p of it).
//
// Deliberately does not: run a communication thread (MPI progresses the sums when the hooks call
// it), compress gradients, or shard optimizer state.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "autograd/variable.h"
#include "distributed/process_group.h"

namespace posgrad::distributed {

class GradientAverager {
 public:
  static constexpr int64_t kDefaultBucketBytes = int64_t{4} << 20;

  GradientAverager(std::vector<Variable> parameters, ProcessGroup& group, int64_t bucket_bytes = kDefaultBucketBytes);
  ~GradientAverager();  // removes the hooks
  GradientAverager(const GradientAverager&) = delete;
  GradientAverager& operator=(const GradientAverager&) = delete;

  // The next backward starts the buckets' sums as their gradients become final; call it right
  // before the backward whose gradients the optimizer step takes (the last micro-batch's).
  void overlap_next_backward();
  void average();
  // Between overlap_next_backward() and average(): sums may be in flight, so no other collective
  // may run (a rank whose backward missed a parameter starts that bucket only in average()).
  bool armed() const { return armed_; }
  // Whether overlap_next_backward() acts: several ranks, and a group whose sums run in the
  // background.
  bool overlaps() const;

  struct Stats {
    int64_t calls = 0;
    double seconds = 0;           // wall time inside average()
    double backward_seconds = 0;  // wall time inside the hooks, during the backward
    int64_t buckets_started_in_backward = 0;
    int64_t bytes = 0;            // gradient payload all-reduced, summed over calls
  };
  const Stats& stats() const { return stats_; }
  int64_t buckets() const { return static_cast<int64_t>(buckets_.size()); }

 private:
  struct Bucket {
    std::vector<size_t> members;  // indices into parameters_
    int64_t elements = 0;         // gradient elements (the buffer has members.size() flags more)
    DType dtype = kFloat32;
    Device device = kCPU;
    Tensor buffer;                // [elements + members], on the host when staged
    std::unique_ptr<ProcessGroup::PendingSum> pending;
    size_t not_ready = 0;         // members whose gradient the armed backward has not finished
  };
  void gradient_ready(size_t parameter);
  void start(Bucket& bucket, bool blocking);
  void finish(Bucket& bucket);
  bool staged(const Bucket& bucket) const;

  std::vector<Variable> parameters_;
  ProcessGroup& group_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // parameter index -> bucket index
  std::vector<bool> ready_;        // parameter index -> final in the armed backward
  bool armed_ = false;
  size_t next_to_start_ = 0;       // buckets start in order: [0, next_to_start_) have started
  Stats stats_;
};

}  // namespace posgrad::distributed
