// OrthogonalGenerators and matrix_powers (see orthogonal.h).
// Shapes: letters of shape_legend.h; d is the matrix size and W a generator, as in orthogonal.h.
#include "nn/orthogonal.h"

#include <cmath>
#include <vector>

#include "autograd/functions.h"
#include "nn/matrix_exp.h"

namespace posgrad {

GeneratorInit parse_generator_init(const std::string& name) {
  if (name == "rope_like") return GeneratorInit::RopeLike;
  if (name == "near_identity") return GeneratorInit::NearIdentity;
  if (name == "normal") return GeneratorInit::Normal;
  fail("OrthogonalGenerators: unknown init \"{}\" (valid: rope_like, near_identity, normal)", name);
}

const char* generator_init_name(GeneratorInit init) {
  switch (init) {
    case GeneratorInit::RopeLike: return "rope_like";
    case GeneratorInit::NearIdentity: return "near_identity";
    case GeneratorInit::Normal: return "normal";
  }
  return "?";
}

Variable matrix_powers(const Variable& w, int64_t size) {
  if (w.dim() < 2 || w.size(-1) != w.size(-2))
    fail("matrix_powers: expected a batch of square matrices [..., d, d], got {}", w.value().describe());
  if (size < 0) fail("matrix_powers: size must be >= 0, got {} (for {})", size, w.value().describe());
  // The run of consecutive powers [W^1, ..., W^len]  [len, ..., d, d].
  Variable run = unsqueeze(w, 0);
  int64_t len = 1;
  while (len < size) {  // ceil(log2 size) rounds
    const Variable last = narrow(run, 0, len - 1, 1);  // W^len  [1, ..., d, d]
    run = cat({run, matmul(run, last)}, 0);             // W^i W^len = W^(i+len)
    len *= 2;
  }
  const int64_t d = w.size(-1);
  const Tensor r = Tensor::arange(d, w.dtype(), w.device());
  Shape eye_shape = w.shape();
  eye_shape.insert(eye_shape.begin(), 1);
  const Tensor eye = eq(r.reshape({d, 1}), r.reshape({1, d})).expand(eye_shape);  // [1, ..., d, d]
  if (size == 0) return Variable(eye.contiguous());
  return cat({Variable(eye), narrow(run, 0, 0, size)}, 0);
}

OrthogonalGenerators::OrthogonalGenerators(int64_t count, int64_t dim, GeneratorInit init, Generator& gen,
                                           double stddev)
    : count_(count), dim_(dim), init_(init) {
  if (count < 1 || dim < 1)
    fail("OrthogonalGenerators: count and dim must be >= 1, got count={} dim={}", count, dim);
  Tensor a;
  switch (init) {
    case GeneratorInit::RopeLike: {
      if (dim % 2 != 0) fail("OrthogonalGenerators: rope_like init needs an even dim, got {}", dim);
      const int64_t n = dim / 2;
      std::vector<double> values(static_cast<size_t>(count * dim * dim), 0.0);
      for (int64_t g = 0; g < count; ++g)
        for (int64_t j = 0; j < n; ++j) {
          const double theta = std::pow(10000.0, -2.0 * static_cast<double>(j / 2) / static_cast<double>(n));
          values[static_cast<size_t>(g * dim * dim + (2 * j) * dim + 2 * j + 1)] = theta;  // A[2j, 2j+1]
        }
      a = Tensor::from_vector(values, {count, dim, dim}).to(kFloat32);
      break;
    }
    case GeneratorInit::NearIdentity: {
      const Tensor r = Tensor::arange(dim, kFloat32);
      const Tensor lower = gt(r.reshape({dim, 1}), r.reshape({1, dim}));  // strict lower triangle, 1/0
      a = softmax(normal({count, dim, dim}, 0.0, 1.0, gen) * lower, -1) * lower;
      break;
    }
    case GeneratorInit::Normal:
      if (!(stddev >= 0) || !std::isfinite(stddev))
        fail("OrthogonalGenerators: normal init needs a finite stddev >= 0, got {}", stddev);
      a = normal({count, dim, dim}, 0.0, stddev, gen);
      break;
  }
  generators_ = register_parameter("generators", a.contiguous());
}

Variable OrthogonalGenerators::skew() const { return generators_ - transpose(generators_, -1, -2); }

Variable OrthogonalGenerators::matrices() const { return matrix_exp(skew()); }

std::string OrthogonalGenerators::extra_repr() const {
  return fmt::format("count={}, dim={}, init={}", count_, dim_, generator_init_name(init_));
}

}  // namespace posgrad
