// GradientAverager: see gradient_averager.h.
#include "distributed/gradient_averager.h"

#include <chrono>

#include "tensor/ops.h"

namespace posgrad::distributed {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

GradientAverager::GradientAverager(std::vector<Variable> parameters, ProcessGroup& group, int64_t bucket_bytes)
    : parameters_(std::move(parameters)), group_(group), bucket_of_(parameters_.size()), ready_(parameters_.size()) {
  POSGRAD_CHECK(bucket_bytes > 0, "GradientAverager: bucket_bytes must be positive, got {}", bucket_bytes);
  for (size_t i = parameters_.size(); i-- > 0;) {  // last to first: the order the backward finishes them
    const Tensor& v = parameters_[i].value();
    const int64_t bytes = v.numel() * dtype_size(v.dtype());
    const bool fits = !buckets_.empty() && buckets_.back().dtype == v.dtype() && buckets_.back().device == v.device() &&
                      (buckets_.back().elements * dtype_size(v.dtype()) + bytes <= bucket_bytes);
    if (!fits) buckets_.push_back(Bucket{{}, 0, v.dtype(), v.device(), Tensor(), nullptr, 0});
    buckets_.back().members.push_back(i);
    buckets_.back().elements += v.numel();
    bucket_of_[i] = buckets_.size() - 1;
  }
  if (overlaps())
    for (size_t i = 0; i < parameters_.size(); ++i) parameters_[i].set_grad_ready_hook([this, i] { gradient_ready(i); });
}

GradientAverager::~GradientAverager() {
  if (overlaps())
    for (Variable& p : parameters_) p.set_grad_ready_hook(nullptr);
}

bool GradientAverager::overlaps() const { return group_.size() > 1 && group_.sums_in_background(); }

bool GradientAverager::staged(const Bucket& bucket) const {
  return bucket.device.is_cuda() && group_.engine() != "nccl";
}

void GradientAverager::overlap_next_backward() {
  if (!overlaps()) return;
  POSGRAD_CHECK(next_to_start_ == 0 || !armed_,
                "GradientAverager: overlap_next_backward() again while the previous backward's sums are in flight; "
                "call average() first");
  armed_ = true;
  next_to_start_ = 0;
  ready_.assign(parameters_.size(), false);
  for (Bucket& b : buckets_) b.not_ready = b.members.size();
}

// The hook of parameter `i`: its gradient is final for this backward.
void GradientAverager::gradient_ready(size_t i) {
  if (!armed_) return;
  const auto started = std::chrono::steady_clock::now();
  POSGRAD_CHECK(!ready_[i],
                "GradientAverager: the parameter '{}' got a gradient from a second backward after "
                "overlap_next_backward(); arm only the backward right before average()",
                parameters_[i].name());
  ready_[i] = true;
  --buckets_[bucket_of_[i]].not_ready;
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].not_ready == 0) {
    start(buckets_[next_to_start_++], /*blocking=*/false);
    ++stats_.buckets_started_in_backward;
  }
  for (size_t b = 0; b < next_to_start_; ++b)  // MPI moves started sums on only inside its calls
    if (buckets_[b].pending) buckets_[b].pending->progress();
  stats_.backward_seconds += seconds_since(started);
}

// Packs the bucket's gradients and flags into its buffer and starts their sum over the ranks
// (or, `blocking`, sums them before it returns).
void GradientAverager::start(Bucket& bucket, bool blocking) {
  const int64_t flags = static_cast<int64_t>(bucket.members.size());
  Tensor buffer = Tensor::zeros({bucket.elements + flags}, bucket.dtype, staged(bucket) ? kCPU : bucket.device);  // [n + m]
  int64_t offset = 0;
  for (size_t k = 0; k < bucket.members.size(); ++k) {
    const Tensor& g = parameters_[bucket.members[k]].grad();
    const int64_t n = parameters_[bucket.members[k]].value().numel();
    if (g.defined()) {
      buffer.narrow(0, offset, n).copy_(g.reshape({n}));
      buffer.narrow(0, bucket.elements + static_cast<int64_t>(k), 1).fill_(1.0);
    }
    offset += n;
  }
  bucket.buffer = buffer;
  if (blocking)
    group_.all_reduce_sum(bucket.buffer);
  else
    bucket.pending = group_.start_all_reduce_sum(bucket.buffer);
  stats_.bytes += bucket.elements * dtype_size(bucket.dtype);
}

// Waits for the bucket's sum and hands each member the mean over the ranks (or no gradient, when
// no rank had one).
void GradientAverager::finish(Bucket& bucket) {
  if (bucket.pending) bucket.pending->wait();
  bucket.pending.reset();
  const auto holders = bucket.buffer.narrow(0, bucket.elements, static_cast<int64_t>(bucket.members.size()))
                           .to(kCPU)
                           .to_vector<double>();  // ranks with a gradient, per member
  Tensor mean = mul_scalar(bucket.buffer.narrow(0, 0, bucket.elements), 1.0 / static_cast<double>(group_.size()));
  if (staged(bucket)) mean = mean.to(bucket.device);
  bucket.buffer = Tensor();
  int64_t offset = 0;
  for (size_t k = 0; k < bucket.members.size(); ++k) {
    Variable& p = parameters_[bucket.members[k]];
    const int64_t n = p.value().numel();
    if (holders[k] > 0) p.set_grad(mean.narrow(0, offset, n).reshape(p.value().shape()));
    offset += n;
  }
}

void GradientAverager::average() {
  const auto started = std::chrono::steady_clock::now();
  ++stats_.calls;
  if (group_.size() > 1) {
    if (armed_) {  // buckets the backward did not complete (parameters it did not reach) start now
      while (next_to_start_ < buckets_.size()) start(buckets_[next_to_start_++], /*blocking=*/false);
      for (Bucket& b : buckets_) finish(b);
    } else {
      for (Bucket& b : buckets_) {
        start(b, /*blocking=*/true);
        finish(b);
      }
    }
  }
  armed_ = false;
  next_to_start_ = 0;
  stats_.seconds += seconds_since(started);
}

}  // namespace posgrad::distributed
