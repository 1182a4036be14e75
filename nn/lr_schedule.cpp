// Learning-rate schedules: see lr_schedule.h for the formulas and the step convention.
#include "nn/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "tensor/error.h"

namespace posgrad {

namespace {

void check_step(int64_t step, const char* name) {
  if (step < 0) fail("{}: step must be >= 0, got {}", name, step);
}

void check_lr(double lr, const char* what, const char* name) {
  if (!std::isfinite(lr) || lr < 0) fail("{}: {} must be finite and >= 0, got {}", name, what, lr);
}

// The linear ramp shared by the warmup schedules; k is 1-based and k <= warmup.
double ramp(double start, double peak, int64_t k, int64_t warmup) {
  return start + (peak - start) * static_cast<double>(k) / static_cast<double>(warmup);
}

}  // namespace

ConstantLR::ConstantLR(double lr) : lr_(lr) { check_lr(lr, "lr", "constant"); }
double ConstantLR::lr_at(int64_t step) const {
  check_step(step, "constant");
  return lr_;
}
std::string ConstantLR::describe() const { return fmt::format("constant(lr={})", lr_); }

WarmupConstantLR::WarmupConstantLR(double peak_lr, int64_t warmup_steps, double start_lr)
    : peak_(peak_lr), start_(start_lr), warmup_(warmup_steps) {
  check_lr(peak_lr, "peak_lr", "warmup_constant");
  check_lr(start_lr, "start_lr", "warmup_constant");
  if (warmup_steps < 0) fail("warmup_constant: warmup_steps must be >= 0, got {}", warmup_steps);
}
double WarmupConstantLR::lr_at(int64_t step) const {
  check_step(step, "warmup_constant");
  const int64_t k = step + 1;
  return k <= warmup_ ? ramp(start_, peak_, k, warmup_) : peak_;
}
std::string WarmupConstantLR::describe() const {
  return fmt::format("warmup_constant(peak={}, warmup={}, start={})", peak_, warmup_, start_);
}

WarmupCosineLR::WarmupCosineLR(double peak_lr, int64_t warmup_steps, int64_t total_steps,
                               double floor_lr, double start_lr)
    : peak_(peak_lr), floor_(floor_lr), start_(start_lr), warmup_(warmup_steps), total_(total_steps) {
  check_lr(peak_lr, "peak_lr", "warmup_cosine");
  check_lr(floor_lr, "floor_lr", "warmup_cosine");
  check_lr(start_lr, "start_lr", "warmup_cosine");
  if (warmup_steps < 0) fail("warmup_cosine: warmup_steps must be >= 0, got {}", warmup_steps);
  if (total_steps <= warmup_steps)
    fail("warmup_cosine: total_steps ({}) must exceed warmup_steps ({})", total_steps, warmup_steps);
  if (floor_lr > peak_lr) fail("warmup_cosine: floor_lr ({}) exceeds peak_lr ({})", floor_lr, peak_lr);
}
double WarmupCosineLR::lr_at(int64_t step) const {
  check_step(step, "warmup_cosine");
  const int64_t k = step + 1;
  if (k <= warmup_) return ramp(start_, peak_, k, warmup_);
  if (k >= total_) return floor_;
  const double progress = static_cast<double>(k - warmup_) / static_cast<double>(total_ - warmup_);
  return floor_ + (peak_ - floor_) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}
std::string WarmupCosineLR::describe() const {
  return fmt::format("warmup_cosine(peak={}, warmup={}, total={}, floor={}, start={})", peak_, warmup_,
                     total_, floor_, start_);
}

NoamLR::NoamLR(int64_t d_model, int64_t warmup_steps, double scale)
    : d_model_(d_model), warmup_(warmup_steps), scale_(scale) {
  if (d_model <= 0) fail("noam: d_model must be > 0, got {}", d_model);
  if (warmup_steps <= 0) fail("noam: warmup_steps must be > 0, got {}", warmup_steps);
  check_lr(scale, "scale", "noam");
}
double NoamLR::lr_at(int64_t step) const {
  check_step(step, "noam");
  const double k = static_cast<double>(step + 1);
  const double w = static_cast<double>(warmup_);
  return scale_ / std::sqrt(static_cast<double>(d_model_)) * std::min(1.0 / std::sqrt(k), k / (w * std::sqrt(w)));
}
std::string NoamLR::describe() const {
  return fmt::format("noam(d_model={}, warmup={}, scale={})", d_model_, warmup_, scale_);
}

}  // namespace posgrad
