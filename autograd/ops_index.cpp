// Differentiable indexing: index_select <-> index_add and gather <-> scatter_add are each
// other's adjoints, so each backward is the other op.
#include "autograd/functions.h"

namespace posgrad {

namespace {
using Grads = std::vector<Tensor>;
}

Variable index_select(const Variable& x, int64_t axis, const Tensor& index) {
  const Shape in = x.shape();
  const int64_t ax = normalize_axis(axis, x.shape(), "index_select");
  return record("index_select", index_select(x.value(), ax, index), {x},
                [in, ax, index](const Tensor& g, const std::vector<bool>&) {
                  return Grads{index_add(in, ax, index, g)};
                });
}

Variable index_add(const Shape& shape, int64_t axis, const Tensor& index, const Variable& src) {
  const int64_t ax = normalize_axis(axis, shape, "index_add");
  const Shape src_shape = src.shape();
  return record("index_add", index_add(shape, ax, index, src.value()), {src},
                [ax, index, src_shape](const Tensor& g, const std::vector<bool>&) {
                  return Grads{index_select(g, ax, index).reshape(src_shape)};
                });
}

Variable gather(const Variable& x, int64_t axis, const Tensor& index) {
  const Shape in = x.shape();
  return record("gather", gather(x.value(), axis, index), {x}, [in, axis, index](const Tensor& g, const std::vector<bool>&) {
    return Grads{scatter_add(in, axis, index, g.contiguous())};
  });
}

Variable scatter_add(const Shape& shape, int64_t axis, const Tensor& index, const Variable& src) {
  return record("scatter_add", scatter_add(shape, axis, index, src.value()), {src},
                [axis, index](const Tensor& g, const std::vector<bool>&) { return Grads{gather(g, axis, index)}; });
}

}  // namespace posgrad
