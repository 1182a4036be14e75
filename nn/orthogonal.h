// OrthogonalGenerators: G learnable orthogonal matrices W_g = exp(A_g - A_g^T) in SO(d), the
// parameterisation of algebraic positional encodings (APE): one dense generator per head (or per
// (axis, head)), and the table of powers [I, W, W^2, ..., W^S] that maps a position p to W^p.
//
//   generators  A  [G, d, d]   the parameter; only its skew part A - A^T reaches the forward, so
//                              the symmetric part gets no loss gradient (only weight decay)
//   matrices()  W  [G, d, d]   matrix_exp(A - A^T) (nn/matrix_exp.h), recomputed on every call
//   matrix_powers(W, S)        [S+1, G, d, d] = [I, W, ..., W^S], by doubling: ceil(log2 S)
//                              rounds of one batched matmul each
//
// Initialisers (GeneratorInit):
//   rope_like      the APE paper's default ("w/ init"): with n = d/2, theta_j = 10000^(-2 floor(j/2)/n)
//                  for j = 0..n-1, A has A[2j, 2j+1] = theta_j and zeros elsewhere, so A - A^T is
//                  block-diagonal [[0, theta_j], [-theta_j, 0]] and W is exactly the block
//                  rotations [[cos theta_j, sin theta_j], [-sin theta_j, cos theta_j]]. Every
//                  generator is the same; needs an even d; draws no random numbers.
//   near_identity  the "w/o init" variant, as the original code drew it: a standard normal
//                  [G, d, d], zero outside the strict lower triangle, softmax over the last axis,
//                  masked to the strict lower triangle again. Entries are about 1/d, W is near I.
//   normal         A ~ N(0, stddev^2), dense.
//
// Deliberately not here: applying W^p to queries and keys, position indexing, grids and trees
// (the positional schemes do that with this module), and any other orthogonal parameterisation
// (Cayley, Householder).
// Shapes: letters of shape_legend.h; here d is the matrix size, W a generator matrix (not the
// window) and S the highest power in a table.
#pragma once

#include <string>

#include "nn/module.h"
#include "tensor/random.h"

namespace posgrad {

enum class GeneratorInit { RopeLike, NearIdentity, Normal };

// "rope_like", "near_identity" or "normal"; anything else is an Error listing the three.
GeneratorInit parse_generator_init(const std::string& name);
const char* generator_init_name(GeneratorInit init);

// W [..., d, d] -> [S+1, ..., d, d] = [I, W, W^2, ..., W^S] for S = size >= 0, differentiable.
// Doubling: start from the run [W]; each round appends every entry of the run multiplied by the
// run's last entry (one batched matmul), doubling the run; after ceil(log2 S) rounds keep S
// entries and put I in front.
Variable matrix_powers(const Variable& w, int64_t size);

class OrthogonalGenerators : public Module {
 public:
  // `count` generators G of size d x d (float32); `stddev` is used by GeneratorInit::Normal only.
  OrthogonalGenerators(int64_t count, int64_t dim, GeneratorInit init, Generator& gen, double stddev = 0.02);
  OrthogonalGenerators(int64_t count, int64_t dim, const std::string& init, Generator& gen, double stddev = 0.02)
      : OrthogonalGenerators(count, dim, parse_generator_init(init), gen, stddev) {}

  Variable skew() const;                    // A - A^T            [G, d, d]
  Variable matrices() const;                // W = exp(A - A^T)   [G, d, d]
  Variable powers(int64_t size) const {     // [I, W, ..., W^size] [size+1, G, d, d]
    return matrix_powers(matrices(), size);
  }

  const Variable& generators() const { return generators_; }  // A [G, d, d]
  int64_t count() const { return count_; }
  int64_t dim() const { return dim_; }
  GeneratorInit init() const { return init_; }
  std::string extra_repr() const override;

 private:
  int64_t count_, dim_;
  GeneratorInit init_;
  Variable generators_;
};

}  // namespace posgrad
