// DropPath (see drop_path.h).
#include "nn/drop_path.h"

#include "autograd/functions.h"
#include "nn/mask_rows.h"

namespace posgrad {

namespace {
void check_p(double p) {
  if (!(p >= 0.0 && p < 1.0)) fail("drop_path: probability p must be in [0, 1), got {}", p);
}
}  // namespace

Variable drop_path(const Variable& x, double p, bool rescale, bool training, Generator& gen) {
  check_p(p);
  if (!training || p == 0.0) return x;
  if (x.dim() < 1) fail("drop_path: the input needs a batch axis, got {}", x.value().describe());
  Shape mask_shape(x.dim(), 1);
  mask_shape[0] = x.size(0);
  // Under a MaskRowsScope (a data-parallel rank) the mask is the global batch's for these rows.
  Tensor mask = bernoulli_for_rows(mask_shape, 1.0 - p, gen, x.value().dtype(), x.value().device(), "drop_path");  // [B, 1, ..., 1]
  if (rescale) mask = mul_scalar(mask, 1.0 / (1.0 - p));
  return x * Variable(mask);
}

DropPath::DropPath(double p, bool rescale, uint64_t seed) : DropPath(p, rescale, std::make_shared<Generator>(seed)) {}

DropPath::DropPath(double p, bool rescale, std::shared_ptr<Generator> gen)
    : p_(p), rescale_(rescale), gen_(std::move(gen)) {
  check_p(p);
  if (!gen_) fail("DropPath: the generator is null");
}

Variable DropPath::forward(const Variable& x) { return drop_path(x, p_, rescale_, is_training(), *gen_); }

std::string DropPath::extra_repr() const { return fmt::format("p={}, rescale={}", p_, rescale_); }

}  // namespace posgrad
