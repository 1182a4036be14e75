// Loss functions (see losses.h).
// Shapes: letters of shape_legend.h (C: classes); M here is the number of targets, not keys.
#include "nn/losses.h"

#include <algorithm>
#include <limits>

#include "autograd/functions.h"

namespace posgrad {

Reduction parse_reduction(const std::string& name) {
  if (name == "none") return Reduction::None;
  if (name == "mean") return Reduction::Mean;
  if (name == "sum") return Reduction::Sum;
  fail("unknown reduction '{}' (valid: none, mean, sum)", name);
}

namespace {

using Grads = std::vector<Tensor>;

// Reduces per-element losses; Mean divides the sum by `count` (0 elements -> 0, not NaN).
Variable reduce(const Variable& elements, Reduction reduction, int64_t count) {
  switch (reduction) {
    case Reduction::None: return elements;
    case Reduction::Sum: return sum(elements);
    case Reduction::Mean: return mul_scalar(sum(elements), 1.0 / static_cast<double>(std::max<int64_t>(count, 1)));
  }
  fail("unknown reduction {}", static_cast<int>(reduction));
}

void check_same_shape(const Variable& a, const Variable& b, const char* op, const char* what_a, const char* what_b) {
  if (!a.defined() || !b.defined()) fail("{}: undefined {}", op, !a.defined() ? what_a : what_b);
  if (!is_floating(a.dtype()) || !is_floating(b.dtype()))
    fail("{}: {} {} and {} {} must be floating-point", op, what_a, a.value().describe(), what_b, b.value().describe());
  if (a.shape() != b.shape())
    fail("{}: {} {} and {} {} must have the same shape", op, what_a, a.value().describe(), what_b, b.value().describe());
  if (a.dtype() != b.dtype())
    fail("{}: {} {} and {} {} must have the same dtype", op, what_a, a.value().describe(), what_b, b.value().describe());
  check_same_device(a.value(), b.value(), op);
}

// The negative log-likelihood per target. log_probs [..., C], targets int64 [...] (the same
// leading shape). Returns the per-target losses [M] (0 where ignored), the keep mask [M] (1 =
// counted) and the number of counted targets.
struct Picked {
  Variable nll;   // [M]
  Variable logp;  // [M, C]
  Tensor keep;    // [M], dtype of log_probs
  int64_t count = 0;
};

Picked pick_targets(const Variable& log_probs, const Tensor& targets, int64_t ignore_index, const char* op) {
  if (!log_probs.defined() || !is_floating(log_probs.dtype()) || log_probs.dim() < 1)
    fail("{}: input must be a floating-point tensor [..., C], got {}", op,
         log_probs.defined() ? log_probs.value().describe() : std::string("an undefined tensor"));
  if (!targets.defined() || targets.dtype() != kInt64)
    fail("{}: targets must be an int64 tensor of class indices, got {}", op,
         targets.defined() ? targets.describe() : std::string("an undefined tensor"));
  const Shape lead(log_probs.shape().begin(), log_probs.shape().end() - 1);
  if (targets.shape() != lead)
    fail("{}: targets {} must have the input's shape without its class axis, i.e. {} (input {}, classes last)", op,
         targets.describe(), shape_str(lead), log_probs.value().describe());
  check_same_device(log_probs.value(), targets, op);
  const int64_t C = log_probs.size(-1), M = targets.numel();
  if (C == 0) fail("{}: input {} has no classes", op, log_probs.value().describe());

  // Validate on the host and build the gather index (ignored -> class 0) and the keep mask.
  const std::vector<int64_t> t = targets.to(kCPU).to_vector<int64_t>();
  std::vector<int64_t> safe(static_cast<size_t>(M));
  std::vector<double> keep(static_cast<size_t>(M));
  Picked p;
  for (int64_t i = 0; i < M; ++i) {
    const int64_t c = t[static_cast<size_t>(i)];
    if (c == ignore_index) continue;
    if (c < 0 || c >= C)
      fail("{}: target {} (element {} of targets {}) is out of range [0, {}) and is not ignore_index {}", op, c, i,
           targets.describe(), C, ignore_index);
    safe[static_cast<size_t>(i)] = c;
    keep[static_cast<size_t>(i)] = 1.0;
    ++p.count;
  }
  const Device device = log_probs.device();
  const Tensor index = Tensor::from_vector<int64_t>(safe, {M, 1}).to(device);
  p.keep = Tensor::from_vector<double>(keep, {M}).to(log_probs.dtype()).to(device);
  p.logp = reshape(log_probs, {M, C});
  p.nll = neg(reshape(gather(p.logp, 1, index), {M})) * Variable(p.keep);
  return p;
}

}  // namespace

Variable nll_loss(const Variable& log_probs, const Tensor& targets, Reduction reduction, int64_t ignore_index) {
  Picked p = pick_targets(log_probs, targets, ignore_index, "nll_loss");
  Variable el = reduction == Reduction::None ? reshape(p.nll, targets.shape()) : p.nll;
  return reduce(el, reduction, p.count);
}

Variable cross_entropy(const Variable& logits, const Tensor& targets, Reduction reduction, int64_t ignore_index,
                       double label_smoothing) {
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0))
    fail("cross_entropy: label_smoothing must be in [0, 1], got {}", label_smoothing);
  if (!logits.defined() || !is_floating(logits.dtype()) || logits.dim() < 1)
    fail("cross_entropy: logits must be a floating-point tensor [..., C], got {}",
         logits.defined() ? logits.value().describe() : std::string("an undefined tensor"));
  Picked p = pick_targets(log_softmax(logits, -1), targets, ignore_index, "cross_entropy");
  Variable el = p.nll;
  if (label_smoothing > 0.0) {
    // eps * mean over classes of -log p, counted only where the target is not ignored.
    const double C = static_cast<double>(logits.size(-1));
    Variable smooth = neg(sum(p.logp, {1})) * Variable(p.keep);
    el = el * (1.0 - label_smoothing) + smooth * (label_smoothing / C);
  }
  if (reduction == Reduction::None) el = reshape(el, targets.shape());
  return reduce(el, reduction, p.count);
}

Variable binary_cross_entropy(const Variable& probs, const Variable& targets, Reduction reduction) {
  check_same_shape(probs, targets, "binary_cross_entropy", "probs", "targets");
  const Tensor& p = probs.value();
  const Tensor& t = targets.value();
  if (p.numel() > 0) {
    const double lo = amin(p).item(), hi = amax(p).item();
    if (!(lo >= 0.0 && hi <= 1.0))
      fail("binary_cross_entropy: probs {} must lie in [0, 1], found values in [{}, {}] (use "
           "binary_cross_entropy_with_logits for logits)", p.describe(), lo, hi);
  }
  // l = -(t log p + (1 - t) log(1 - p)), each log clamped to >= -100 as PyTorch does.
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor log_p = clamp(log(p), -100.0, inf);
  const Tensor log_q = clamp(log(add_scalar(neg(p), 1.0)), -100.0, inf);
  const Tensor loss = neg(add(mul(t, log_p), mul(add_scalar(neg(t), 1.0), log_q)));
  // dl/dp = (p - t) / max(p (1 - p), 1e-12) (PyTorch's formula, finite at p = 0 and 1);
  // dl/dt = log(1 - p) - log(p) (clamped).
  Variable el = record("binary_cross_entropy", loss, {probs, targets},
                       [p, t, log_p, log_q](const Tensor& g, const std::vector<bool>& needs) {
                         Grads grads(2);
                         if (needs[0]) {
                           const Tensor denom = clamp(mul(p, add_scalar(neg(p), 1.0)), 1e-12, std::numeric_limits<double>::infinity());
                           grads[0] = mul(g, div(sub(p, t), denom));
                         }
                         if (needs[1]) grads[1] = mul(g, sub(log_q, log_p));
                         return grads;
                       });
  return reduce(el, reduction, el.numel());
}

Variable binary_cross_entropy_with_logits(const Variable& logits, const Variable& targets, Reduction reduction) {
  check_same_shape(logits, targets, "binary_cross_entropy_with_logits", "logits", "targets");
  const Tensor& x = logits.value();
  const Tensor& t = targets.value();
  // l = max(x, 0) - x t + log(1 + exp(-|x|)): never exponentiates a large positive number.
  const Tensor loss = add(sub(relu(x), mul(x, t)), log(add_scalar(exp(neg(abs(x))), 1.0)));
  // dl/dx = sigmoid(x) - t (smooth everywhere, also at x = 0); dl/dt = -x.
  Variable el = record("binary_cross_entropy_with_logits", loss, {logits, targets},
                       [x, t](const Tensor& g, const std::vector<bool>& needs) {
                         Grads grads(2);
                         if (needs[0]) grads[0] = mul(g, sub(sigmoid(x), t));
                         if (needs[1]) grads[1] = neg(mul(g, x));
                         return grads;
                       });
  return reduce(el, reduction, el.numel());
}

Variable mse_loss(const Variable& input, const Variable& target, Reduction reduction) {
  check_same_shape(input, target, "mse_loss", "input", "target");
  Variable el = square(input - target);
  return reduce(el, reduction, el.numel());
}

}  // namespace posgrad
