// SingleProcessGroup: the group of a run that is not data-parallel (rank 0 of 1). Sums and
// broadcasts leave their arguments as they are, all_gather returns its tensor, barrier returns
// at once. What every build without MPI uses, and what apps get outside mpirun and srun.
//
// Deliberately does not: anything else (it is the identity of process_group.h's operations).
#pragma once

#include "distributed/process_group.h"

namespace posgrad::distributed {

class SingleProcessGroup final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string engine() const override { return "single"; }
  void all_reduce_sum(Tensor&) override {}
  void all_reduce_sum(std::vector<double>&) override {}
  void broadcast(Tensor&, int root) override;
  void broadcast(std::string&, int root) override;
  Tensor all_gather(const Tensor& t) override { return t; }
  void barrier() override {}
  [[noreturn]] void abort(int code) override;
};

}  // namespace posgrad::distributed
