// gradcheck (see gradcheck.h).
#include "autograd/gradcheck.h"

#include <cmath>

#include "autograd/functions.h"

namespace posgrad {

namespace {
// Offsets (in elements, from the storage start) of every logical element of t, row-major.
std::vector<int64_t> element_offsets(const Tensor& t) {
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(t.numel()));
  std::vector<int64_t> idx(static_cast<size_t>(t.dim()), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t off = t.offset();
    for (int64_t d = 0; d < t.dim(); ++d) off += idx[d] * t.stride(d);
    offsets.push_back(off);
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++idx[d] < t.size(d)) break;
      idx[d] = 0;
    }
  }
  return offsets;
}

// x as fn sees it on `device`: the CPU tensor itself, or a view with x's strides of a copy of
// x's whole storage on the device (so the current, perturbed values are what is sent).
Tensor on_device(const Tensor& x, Device device) {
  if (device.is_cpu()) return x;
  const auto n = static_cast<int64_t>(x.storage()->nbytes() / sizeof(double));
  return x.as_strided({n}, {1}, 0).to(device).as_strided(x.shape(), x.strides(), x.offset());
}
}  // namespace

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  std::vector<Variable> vars;
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_dtype(inputs[i], kFloat64, "gradcheck input");
    if (!inputs[i].device().is_cpu())
      fail("gradcheck: input {} is {}; pass CPU tensors and set GradcheckOptions::device to run "
           "fn on {}", i, inputs[i].describe(), inputs[i].device().str());
    for (int64_t d = 0; d < inputs[i].dim(); ++d)
      if (inputs[i].stride(d) == 0 && inputs[i].size(d) > 1)
        fail("gradcheck: input {} is a broadcast view (stride 0); pass a real tensor", i);
    vars.emplace_back(on_device(inputs[i], options.device), true);
  }
  Variable out = fn(vars);
  Generator gen(options.seed);
  const Tensor weights = uniform(out.shape(), 0.5, 1.5, gen, kFloat64).to(out.value().device());
  auto scalar_of = [&](const Variable& o) { return sum(mul(o, Variable(weights))); };
  // fn at the current (perturbed) CPU inputs, reduced to the scalar.
  auto probe = [&] {
    std::vector<Variable> now;
    for (const Tensor& x : inputs) now.emplace_back(on_device(x, options.device), false);
    return scalar_of(fn(now)).item();
  };

  scalar_of(out).backward();

  GradcheckResult result;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    const Tensor analytic = vars[i].grad().defined() ? vars[i].grad() : Tensor::zeros(x.shape(), kFloat64);
    const std::vector<double> a = analytic.to_vector<double>();
    double* base = static_cast<double*>(x.storage()->data());
    const std::vector<int64_t> offsets = element_offsets(x);
    for (size_t k = 0; k < offsets.size(); ++k) {
      double& slot = base[offsets[k]];
      const double orig = slot;
      double lp, lm;
      {
        NoGradGuard no_grad;
        slot = orig + options.eps;
        lp = probe();
        slot = orig - options.eps;
        lm = probe();
      }
      slot = orig;
      const double numeric = (lp - lm) / (2.0 * options.eps);
      const double err = std::abs(numeric - a[k]);
      result.max_abs_error = std::max(result.max_abs_error, std::isnan(err) ? INFINITY : err);
      if (!(err <= options.atol + options.rtol * std::abs(numeric)) && result.ok) {
        result.ok = false;
        result.message = fmt::format("input {} {} element {}: analytic {:.10g} vs numeric {:.10g} (|diff| {:.3g})",
                                     i, x.describe(), k, a[k], numeric, err);
      }
    }
  }
  return result;
}

}  // namespace posgrad
