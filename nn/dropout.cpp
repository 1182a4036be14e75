// Dropout (see dropout.h).
#include "nn/dropout.h"

#include "autograd/functions.h"
#include "nn/mask_rows.h"

namespace posgrad {

namespace {
void check_p(double p) {
  if (!(p >= 0.0 && p <= 1.0)) fail("dropout: probability p must be in [0, 1], got {}", p);
}
}  // namespace

Variable dropout(const Variable& x, double p, bool training, Generator& gen) {
  check_p(p);
  if (!training || p == 0.0) return x;
  if (p == 1.0) return x * Variable(Tensor::zeros(x.shape(), x.dtype(), x.device()));
  // mask = bernoulli(1 - p) / (1 - p): kept elements are scaled up, dropped ones are 0.
  // Under a MaskRowsScope (a data-parallel rank) the mask is the global batch's for these rows.
  const Tensor mask =
      mul_scalar(bernoulli_for_rows(x.shape(), 1.0 - p, gen, x.dtype(), x.device(), "dropout"), 1.0 / (1.0 - p));
  return x * Variable(mask);
}

Dropout::Dropout(double p, uint64_t seed) : Dropout(p, std::make_shared<Generator>(seed)) {}

Dropout::Dropout(double p, std::shared_ptr<Generator> gen) : p_(p), gen_(std::move(gen)) {
  check_p(p);
  if (!gen_) fail("Dropout: the generator is null");
}

Variable Dropout::forward(const Variable& x) { return dropout(x, p_, is_training(), *gen_); }

std::string Dropout::extra_repr() const { return fmt::format("p={}", p_); }

}  // namespace posgrad
