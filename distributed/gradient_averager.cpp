// GradientAverager: see gradient_averager.h.
#include "distributed/gradient_averager.h"

#include <chrono>

#include "tensor/ops.h"

namespace posgrad::distributed {

GradientAverager::GradientAverager(std::vector<Variable> parameters, ProcessGroup& group, int64_t bucket_bytes)
    : parameters_(std::move(parameters)), group_(group) {
  POSGRAD_CHECK(bucket_bytes > 0, "GradientAverager: bucket_bytes must be positive, got {}", bucket_bytes);
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& v = parameters_[i].value();
    const int64_t bytes = v.numel() * dtype_size(v.dtype());
    const bool fits = !buckets_.empty() && buckets_.back().dtype == v.dtype() && buckets_.back().device == v.device() &&
                      (buckets_.back().elements * dtype_size(v.dtype()) + bytes <= bucket_bytes);
    if (!fits) buckets_.push_back(Bucket{{}, 0, v.dtype(), v.device()});
    buckets_.back().members.push_back(i);
    buckets_.back().elements += v.numel();
  }
}

void GradientAverager::average() {
  const auto started = std::chrono::steady_clock::now();
  ++stats_.calls;
  if (group_.size() == 1) {
    stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return;
  }
  // How many ranks hold a gradient for each parameter.
  std::vector<double> holders(parameters_.size());
  for (size_t i = 0; i < parameters_.size(); ++i) holders[i] = parameters_[i].grad().defined() ? 1 : 0;
  group_.all_reduce_sum(holders);
  const double inverse_size = 1.0 / static_cast<double>(group_.size());
  for (const Bucket& bucket : buckets_) {
    // Staged through the host when the group cannot reduce tensors on the bucket's device.
    const bool staged = bucket.device.is_cuda() && group_.engine() != "nccl";
    Tensor flat = Tensor::zeros({bucket.elements}, bucket.dtype, staged ? kCPU : bucket.device);  // [n]
    int64_t offset = 0;
    for (size_t i : bucket.members) {
      const Tensor& g = parameters_[i].grad();
      const int64_t n = parameters_[i].value().numel();
      if (g.defined()) flat.narrow(0, offset, n).copy_(g.reshape({n}));
      offset += n;
    }
    group_.all_reduce_sum(flat);
    stats_.bytes += bucket.elements * dtype_size(bucket.dtype);
    flat = mul_scalar(flat, inverse_size);
    if (staged) flat = flat.to(bucket.device);
    offset = 0;
    for (size_t i : bucket.members) {
      Variable& p = parameters_[i];
      const int64_t n = p.value().numel();
      if (holders[i] > 0) p.set_grad(flat.narrow(0, offset, n).reshape(p.value().shape()));
      offset += n;
    }
  }
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

}  // namespace posgrad::distributed
