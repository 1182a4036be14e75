// Learning-rate schedules: pure functions from the step number to a learning rate.
//
// Convention: lr_at(step) takes `step` = the number of optimizer updates already applied (0
// before the first update), and every formula below uses k = step + 1, the 1-based number of
// the update about to be made, as the papers write them. So the first update of a warmup is
// not wasted at lr 0 (the adaptive-span convention: update k uses lr * min(1, k / warmup)),
// and Noam's k^-0.5 is finite. A training loop does, before each update:
//
//     opt.set_lr(schedule.lr_at(updates_done));
//     opt.step();  ++updates_done;
//
// Schedules are stateless (resuming a run needs only the step count) and deterministic.
// Deliberately not here: plateau/metric-driven schedules, per-epoch stepping, PyTorch's
// LRScheduler object protocol.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace posgrad {

class LRSchedule {
 public:
  virtual ~LRSchedule() = default;
  // The learning rate for the update made after `step` updates (step >= 0; Error otherwise).
  virtual double lr_at(int64_t step) const = 0;
  virtual std::string describe() const = 0;  // e.g. "warmup_cosine(peak=0.001, warmup=100, ...)"
};

// lr for every step.
class ConstantLR : public LRSchedule {
 public:
  explicit ConstantLR(double lr);
  double lr_at(int64_t step) const override;
  std::string describe() const override;

 private:
  double lr_;
};

// k <= warmup: start + (peak - start) * k / warmup (linear ramp reaching peak at update k = warmup);
// then peak. warmup = 0 means no ramp.
class WarmupConstantLR : public LRSchedule {
 public:
  WarmupConstantLR(double peak_lr, int64_t warmup_steps, double start_lr = 0.0);
  double lr_at(int64_t step) const override;
  std::string describe() const override;

 private:
  double peak_, start_;
  int64_t warmup_;
};

// k <= warmup: the same linear ramp as WarmupConstantLR;
// warmup < k <= total: floor + (peak - floor) * (1 + cos(pi * (k - warmup) / (total - warmup))) / 2,
//   which reaches `floor` exactly at the last update k = total;
// k > total: floor.
class WarmupCosineLR : public LRSchedule {
 public:
  WarmupCosineLR(double peak_lr, int64_t warmup_steps, int64_t total_steps, double floor_lr = 0.0,
                 double start_lr = 0.0);
  double lr_at(int64_t step) const override;
  std::string describe() const override;

 private:
  double peak_, floor_, start_;
  int64_t warmup_, total_;
};

// Vaswani et al. (2017): scale * d_model^-0.5 * min(k^-0.5, k * warmup^-1.5). It rises linearly
// for warmup updates, peaks at k = warmup with scale * (d_model * warmup)^-0.5, then decays as
// k^-0.5.
class NoamLR : public LRSchedule {
 public:
  NoamLR(int64_t d_model, int64_t warmup_steps, double scale = 1.0);
  double lr_at(int64_t step) const override;
  std::string describe() const override;

 private:
  int64_t d_model_, warmup_;
  double scale_;
};

}  // namespace posgrad
