// The "rope" scheme (see rope.h).
// Shapes: letters of shape_legend.h; P here is the number of pairs, Dh / 2 (not table rows).
#include "attention/schemes/rope.h"

#include <cmath>

namespace posgrad {

namespace {

// First pair of group d when P pairs are cut into n groups (the first P mod n groups one larger).
int64_t group_start(int64_t P, int64_t n, int64_t d) { return d * (P / n) + std::min(d, P % n); }

}  // namespace

Rope::Rope(int64_t head_width, int64_t grid_dims, bool trainable, double base, bool split_axes)
    : head_width_(head_width), grid_dims_(grid_dims), trainable_(trainable), split_(split_axes), base_(base) {
  if (head_width <= 0 || head_width % 2 != 0)
    fail("rope: the head width Dh = {} must be even (RoPE rotates pairs of features)", head_width);
  if (!(base > 1.0)) fail("rope: option base must be > 1, got {}", base);
  const int64_t P = head_width / 2;
  const int64_t n = split_ ? std::max<int64_t>(grid_dims, 1) : 1;
  if (split_ && P < n)
    fail("rope: axes: split needs at least one pair per grid axis, but Dh = {} has {} pairs for {} axes", head_width, P, n);
  std::vector<double> theta(static_cast<size_t>(P));
  for (int64_t d = 0; d < n; ++d) {
    const int64_t a = group_start(P, n, d), b = group_start(P, n, d + 1), G = b - a;
    for (int64_t t = 0; t < G; ++t)
      theta[static_cast<size_t>(a + t)] = std::pow(base, -2.0 * static_cast<double>(t) / static_cast<double>(2 * G));
  }
  theta_exact_ = theta;
  Tensor th = Tensor::from_vector(theta, {P}).to(kFloat32);
  theta_ = trainable ? register_parameter("theta", th) : register_buffer("theta", th);
}

Tensor Rope::pair_positions(const Positions& positions) const {
  if (positions.is_tree())
    fail("rope: needs sequence or grid positions, got {} (pass Positions::sequence(N) to rotate by the flattened "
         "order)", positions.describe());
  const int64_t N = positions.tokens(), P = head_width_ / 2, n = positions.dims();
  std::vector<double> out(static_cast<size_t>(N * P));
  if (!split_ || n == 1) {  // the token's place in the flattened order
    return positions.flat_indices().to(kFloat64).reshape({N, 1}).expand({N, P}).contiguous();
  }
  if (n != grid_dims_)
    fail("rope: built for {}-D grids (axes: split) but called with {}", grid_dims_, positions.describe());
  const std::vector<int64_t> coords = positions.coordinates().to_vector<int64_t>();  // [N, n]
  for (int64_t d = 0; d < n; ++d)
    for (int64_t c = group_start(P, n, d); c < group_start(P, n, d + 1); ++c)
      for (int64_t i = 0; i < N; ++i)
        out[static_cast<size_t>(i * P + c)] = static_cast<double>(coords[static_cast<size_t>(i * n + d)]);
  return Tensor::from_vector(out, {N, P});
}

Variable Rope::apply(const Variable& x, const Positions& positions) const {
  const int64_t N = positions.tokens(), P = head_width_ / 2;
  if (x.dim() < 2 || x.size(-1) != head_width_ || x.size(-2) != N)
    fail("rope: expected [..., N = {}, Dh = {}], got {}", N, head_width_, x.value().describe());
  // angle [N, P] = position * theta: differentiable in theta when it is a parameter; frozen, in
  // double from theta_exact_ (a float32 buffer would round theta), then in the scores' dtype.
  Tensor at = pair_positions(positions);
  Variable angle;
  if (trainable_) {
    angle = Variable(at.to(x.dtype()).to(x.device())) * unsqueeze(theta_, 0);
  } else {
    std::vector<double> a = at.to_vector<double>();
    for (size_t e = 0; e < a.size(); ++e) a[e] *= theta_exact_[e % static_cast<size_t>(P)];
    angle = Variable(Tensor::from_vector(a, {N, P}).to(x.dtype()).to(x.device()));
  }
  Variable c = cos(angle), s = sin(angle);
  Shape pairs = x.value().shape();
  pairs.back() = P;
  pairs.push_back(2);
  Variable xp = reshape(x, pairs);                         // [..., N, P, 2]
  Variable even = select(xp, -1, 0), odd = select(xp, -1, 1);  // [..., N, P]
  Variable out = stack({even * c - odd * s, odd * c + even * s}, -1);
  return reshape(out, x.value().shape());
}

void Rope::rotate(Variable& q, Variable& k, const PositionPair& positions) {
  q = apply(q, positions.queries());
  k = apply(k, positions.keys());
}

std::string Rope::summary() const {
  return fmt::format("rope ({}, base {}{})", trainable_ ? "tuned" : "frozen", base_, split_ ? ", split axes" : "");
}

std::shared_ptr<AttentionHook> make_rope(const HookContext& context, const HookOptions& options, Generator&) {
  const bool trainable = options.flag("trainable", false);
  const double base = options.number("base", 10000.0);
  const bool split = options.choice("axes", "flat", {"flat", "split"}) == "split";
  const int64_t dims = std::max<int64_t>(1, static_cast<int64_t>(context.structure.size()));
  return std::make_shared<Rope>(context.head_width(), dims, trainable, base, split);
}

}  // namespace posgrad
