// Adam and AdamW: the fused update (a CPU loop here; on CUDA the kernel of tensor/cuda/adam.cu),
// its composite twin, and the optimizer classes. See adam.h for the formula.
#include "nn/adam.h"

#include <algorithm>
#include <cmath>

#include "tensor/cpu/parallel.h"
#include "tensor/ops.h"
#ifdef POSGRAD_HAVE_CUDA
#include "tensor/cuda/runtime.h"
#endif

namespace posgrad {

namespace {

void check_adam_operands(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
                         const Tensor& vmax, const AdamStepConfig& c, const char* op) {
  auto same = [&](const Tensor& t, const char* what) {
    if (!t.defined()) fail("{}: {} is undefined", op, what);
    if (t.shape() != param.shape() || t.dtype() != param.dtype() || !(t.device() == param.device()))
      fail("{}: {} is {} but the parameter is {}", op, what, t.describe(), param.describe());
  };
  if (!param.defined()) fail("{}: parameter is undefined", op);
  if (!is_floating(param.dtype())) fail("{}: parameter must be floating-point, got {}", op, param.describe());
  same(grad, "gradient");
  same(m, "first moment m");
  same(v, "second moment v");
  if (c.amsgrad) same(vmax, "amsgrad maximum vmax");
  if (c.step < 1) fail("{}: step count must be >= 1, got {}", op, c.step);
}

// Scalar coefficients, computed in double as PyTorch does in Python.
struct AdamCoefficients {
  double beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, decay;
  double neg_step_size;   // -lr / (1 - beta1^t)
  double bias2_sqrt;      // sqrt(1 - beta2^t)
};

AdamCoefficients coefficients(const AdamStepConfig& c) {
  const double t = static_cast<double>(c.step);
  AdamCoefficients k{};
  k.beta1 = c.beta1;
  k.one_minus_beta1 = 1.0 - c.beta1;
  k.beta2 = c.beta2;
  k.one_minus_beta2 = 1.0 - c.beta2;
  k.eps = c.eps;
  k.weight_decay = c.weight_decay;
  k.decay = 1.0 - c.lr * c.weight_decay;
  k.neg_step_size = -(c.lr / (1.0 - std::pow(c.beta1, t)));
  k.bias2_sqrt = std::sqrt(1.0 - std::pow(c.beta2, t));
  return k;
}

template <typename T, bool kDecoupled, bool kL2, bool kAmsgrad>
void adam_kernel(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v,
                 T* __restrict vmax, int64_t n, const AdamCoefficients& k) {
  const T beta1 = static_cast<T>(k.beta1), omb1 = static_cast<T>(k.one_minus_beta1);
  const T beta2 = static_cast<T>(k.beta2), omb2 = static_cast<T>(k.one_minus_beta2);
  const T wd = static_cast<T>(k.weight_decay), decay = static_cast<T>(k.decay);
  const T eps = static_cast<T>(k.eps), neg_step = static_cast<T>(k.neg_step_size);
  const T bias2_sqrt = static_cast<T>(k.bias2_sqrt);
  constexpr int64_t kChunk = 8192;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  cpu::parallel_for(chunks, kChunk * 4, [&](int64_t c) {
    const int64_t end = std::min(n, (c + 1) * kChunk);
    for (int64_t i = c * kChunk; i < end; ++i) {
      T pi = p[i];
      if constexpr (kDecoupled) pi = pi * decay;
      T gi = g[i];
      if constexpr (kL2) gi = gi + wd * pi;
      const T mi = m[i] * beta1 + omb1 * gi;
      const T vi = v[i] * beta2 + omb2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      T vv = vi;
      if constexpr (kAmsgrad) {
        vv = vmax[i] > vi ? vmax[i] : vi;
        vmax[i] = vv;
      }
      const T denom = std::sqrt(vv) / bias2_sqrt + eps;
      p[i] = pi + neg_step * mi / denom;
    }
  });
}

template <typename T>
void adam_dispatch(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, const AdamStepConfig& c) {
  const AdamCoefficients k = coefficients(c);
  const bool l2 = !c.decoupled && c.weight_decay != 0.0;
  // Eight instantiations keep the inner loop branch-free (and vectorisable).
  if (c.decoupled) {
    if (c.amsgrad) adam_kernel<T, true, false, true>(p, g, m, v, vmax, n, k);
    else adam_kernel<T, true, false, false>(p, g, m, v, vmax, n, k);
  } else if (l2) {
    if (c.amsgrad) adam_kernel<T, false, true, true>(p, g, m, v, vmax, n, k);
    else adam_kernel<T, false, true, false>(p, g, m, v, vmax, n, k);
  } else {
    if (c.amsgrad) adam_kernel<T, false, false, true>(p, g, m, v, vmax, n, k);
    else adam_kernel<T, false, false, false>(p, g, m, v, vmax, n, k);
  }
}

}  // namespace

void adam_update_fused(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, Tensor& vmax,
                       const AdamStepConfig& config) {
  const char* op = "adam_update_fused";
  check_adam_operands(param, grad, m, v, vmax, config, op);
  if (param.device().is_cuda()) {  // device dispatch: the same update as one CUDA kernel
#ifdef POSGRAD_HAVE_CUDA
    const AdamCoefficients k = coefficients(config);
    cuda::adam_update(param, grad, m, v, vmax,
                      {k.beta1, k.one_minus_beta1, k.beta2, k.one_minus_beta2, k.eps,
                       k.weight_decay, k.decay, k.neg_step_size, k.bias2_sqrt, config.decoupled,
                       !config.decoupled && config.weight_decay != 0.0, config.amsgrad});
    return;
#endif
  }
  if (!param.device().is_cpu()) fail("{}: CPU or CUDA tensors only, got {}", op, param.describe());
  auto contiguous = [&](const Tensor& t, const char* what) {
    if (!t.is_contiguous()) fail("{}: {} must be contiguous, got {}", op, what, t.describe());
  };
  contiguous(param, "parameter");
  contiguous(m, "m");
  contiguous(v, "v");
  if (config.amsgrad) contiguous(vmax, "vmax");
  const Tensor g = grad.contiguous();
  dispatch_float(param.dtype(), op, [&]<typename T>() {
    adam_dispatch<T>(param.data<T>(), g.data<T>(), m.data<T>(), v.data<T>(),
                     config.amsgrad ? vmax.data<T>() : nullptr, param.numel(), config);
  });
}

void adam_update_composite(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, Tensor& vmax,
                           const AdamStepConfig& config) {
  check_adam_operands(param, grad, m, v, vmax, config, "adam_update_composite");
  const AdamCoefficients k = coefficients(config);
  // The same operations in the same order as the fused loop (and as PyTorch).
  Tensor p = config.decoupled ? param * k.decay : param;
  Tensor g = grad;
  if (!config.decoupled && config.weight_decay != 0.0) g = g + p * k.weight_decay;
  Tensor m_new = m * k.beta1 + g * k.one_minus_beta1;
  Tensor v_new = v * k.beta2 + (g * k.one_minus_beta2) * g;
  Tensor vv = v_new;
  if (config.amsgrad) {
    vv = maximum(vmax, v_new);
    vmax.copy_(vv);
  }
  // Divide by the scalar exactly (operator/(Tensor, double) would multiply by its reciprocal).
  const Tensor bias2_sqrt = Tensor::scalar(k.bias2_sqrt, param.dtype(), param.device());
  const Tensor denom = sqrt(vv) / bias2_sqrt + k.eps;
  const Tensor p_new = p + (m_new * k.neg_step_size) / denom;
  m.copy_(m_new);
  v.copy_(v_new);
  param.copy_(p_new);
}

// ------------------------------------------------------------ the optimizers

Adam::Adam(std::vector<Variable> params, const AdamOptions& o) : Adam(std::move(params), o, false) {}

AdamW::AdamW(std::vector<Variable> params, const AdamWOptions& o)
    : Adam(std::move(params),
           AdamOptions{.lr = o.lr, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps,
                       .weight_decay = o.weight_decay, .amsgrad = o.amsgrad},
           true) {}

Adam::Adam(std::vector<Variable> params, const AdamOptions& o, bool decoupled)
    : Optimizer(std::move(params), o.lr),
      beta1_(o.beta1),
      beta2_(o.beta2),
      eps_(o.eps),
      weight_decay_(o.weight_decay),
      amsgrad_(o.amsgrad),
      decoupled_(decoupled),
      slots_(params_.size()) {
  validate();
}

void Adam::validate() const {
  if (!(eps_ >= 0)) fail("{}: invalid eps {}", kind(), eps_);
  if (!(beta1_ >= 0 && beta1_ < 1)) fail("{}: invalid beta1 {} (need 0 <= beta1 < 1)", kind(), beta1_);
  if (!(beta2_ >= 0 && beta2_ < 1)) fail("{}: invalid beta2 {} (need 0 <= beta2 < 1)", kind(), beta2_);
  if (!(weight_decay_ >= 0)) fail("{}: invalid weight_decay {}", kind(), weight_decay_);
}

void Adam::update() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Variable& var = params_[i];
    const Tensor& grad = var.grad();
    if (!grad.defined()) continue;
    Tensor& value = var.mutable_value();
    Slot& s = slots_[i];
    if (!s.m.defined()) {
      s.m = Tensor::zeros_like(value);
      s.v = Tensor::zeros_like(value);
    }
    if (amsgrad_ && !s.vmax.defined()) s.vmax = Tensor::zeros_like(value);
    ++s.step;
    const AdamStepConfig config{lr_, beta1_, beta2_, eps_, weight_decay_, amsgrad_, decoupled_, s.step};
    const bool fused = use_fused_ && (value.device().is_cpu() || value.device().is_cuda());
    // The fused loop needs a contiguous parameter: update a contiguous copy and write it back.
    Tensor target = (fused && !value.is_contiguous()) ? value.contiguous() : value;
    if (fused) adam_update_fused(target, grad, s.m, s.v, s.vmax, config);
    else adam_update_composite(target, grad, s.m, s.v, s.vmax, config);
    if (target.storage() != value.storage()) value.copy_(target);
  }
}

void Adam::export_state(OptimizerState& out) const {
  out.hyper["beta1"] = beta1_;
  out.hyper["beta2"] = beta2_;
  out.hyper["eps"] = eps_;
  out.hyper["weight_decay"] = weight_decay_;
  out.hyper["amsgrad"] = amsgrad_ ? 1.0 : 0.0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.step == 0) continue;
    out.tensors.emplace_back(key("step", i), Tensor::scalar(static_cast<double>(s.step), kInt64));
    // Copies: the live buffers change in place at the next step.
    out.tensors.emplace_back(key("m", i), s.m.clone());
    out.tensors.emplace_back(key("v", i), s.v.clone());
    if (amsgrad_) out.tensors.emplace_back(key("vmax", i), s.vmax.clone());
  }
}

void Adam::import_state(const OptimizerState& in) {
  beta1_ = hyper(in, "beta1");
  beta2_ = hyper(in, "beta2");
  eps_ = hyper(in, "eps");
  weight_decay_ = hyper(in, "weight_decay");
  amsgrad_ = hyper(in, "amsgrad") != 0.0;
  validate();
  std::vector<Slot> slots(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor step = find_buffer(in, key("step", i), i, /*scalar=*/true);
    if (!step.defined()) continue;  // parameter i had no update yet
    Slot& s = slots[i];
    s.step = static_cast<int64_t>(step.item());
    if (s.step < 1) fail("optimizer state ({}): '{}' must be >= 1, got {}", in.kind, key("step", i), s.step);
    s.m = find_buffer(in, key("m", i), i);
    s.v = find_buffer(in, key("v", i), i);
    if (!s.m.defined() || !s.v.defined())
      fail("optimizer state ({}): parameter {} has a step count but no '{}'/'{}'", in.kind, i,
           key("m", i), key("v", i));
    if (amsgrad_) {
      s.vmax = find_buffer(in, key("vmax", i), i);
      if (!s.vmax.defined()) fail("optimizer state ({}): amsgrad is on but '{}' is missing", in.kind, key("vmax", i));
    }
  }
  slots_ = std::move(slots);
}

}  // namespace posgrad
