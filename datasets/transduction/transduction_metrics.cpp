// The transduction metrics (see transduction_metrics.h).
#include "datasets/transduction/transduction_metrics.h"

#include <cmath>
#include <vector>

#include "tensor/error.h"

namespace posgrad {

namespace {

// The three inputs read back as flat vectors, after checking their shapes.
struct MetricInputs {
  int64_t B = 0, T = 0, V = 0;
  std::vector<double> logits;
  std::vector<int64_t> targets;
};

MetricInputs read_inputs(const char* what, const Tensor& logits, const Tensor& targets,
                         std::initializer_list<const Tensor*> masks) {
  if (!logits.defined() || logits.dim() != 3 || !is_floating(logits.dtype()))
    fail("{}: logits must be a float [B, T, V] tensor, got {}", what, logits.defined() ? logits.describe() : "undefined");
  MetricInputs in{logits.size(0), logits.size(1), logits.size(2), {}, {}};
  if (in.V < 1) fail("{}: logits have an empty vocabulary axis ({})", what, logits.describe());
  const Shape bt{in.B, in.T};
  if (!targets.defined() || targets.dtype() != kInt64 || targets.shape() != bt)
    fail("{}: targets must be int64 {} to match the logits {}, got {}", what, shape_str(bt), logits.describe(),
         targets.defined() ? targets.describe() : "undefined");
  for (const Tensor* mask : masks)
    if (!mask->defined() || mask->shape() != bt)
      fail("{}: masks must be {} to match the logits {}, got {}", what, shape_str(bt), logits.describe(),
           mask->defined() ? mask->describe() : "undefined");
  in.logits = logits.to_vector<double>();
  in.targets = targets.to_vector<int64_t>();
  return in;
}

std::vector<bool> read_mask(const Tensor& mask) {
  const std::vector<double> values = mask.to_vector<double>();
  std::vector<bool> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i] != 0.0;
  return out;
}

// -log softmax(row)[target], in double.
double cross_entropy_at(const MetricInputs& in, int64_t position, const char* what) {
  const int64_t target = in.targets[static_cast<size_t>(position)];
  if (target < 0 || target >= in.V)
    fail("{}: target {} at batch row {}, step {} is outside 0..{}", what, target, position / in.T, position % in.T,
         in.V - 1);
  const double* row = in.logits.data() + position * in.V;
  double max = row[0];
  for (int64_t v = 1; v < in.V; ++v) max = std::max(max, row[v]);
  double sum = 0.0;
  for (int64_t v = 0; v < in.V; ++v) sum += std::exp(row[v] - max);
  return max + std::log(sum) - row[target];
}

}  // namespace

double TokenLoss::mean() const {
  if (tokens <= 0) fail("TokenLoss: no tokens were counted, so there is no mean loss");
  return loss_sum / static_cast<double>(tokens);
}

double TokenLoss::perplexity() const { return std::exp(mean()); }

double ExactMatch::accuracy() const {
  if (examples <= 0) fail("ExactMatch: no examples were counted");
  return static_cast<double>(matched) / static_cast<double>(examples);
}

TokenLoss token_cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& target_mask) {
  const char* what = "token_cross_entropy";
  const MetricInputs in = read_inputs(what, logits, targets, {&target_mask});
  const std::vector<bool> scored = read_mask(target_mask);
  TokenLoss out;
  for (int64_t p = 0; p < in.B * in.T; ++p) {
    if (!scored[static_cast<size_t>(p)]) continue;
    out.loss_sum += cross_entropy_at(in, p, what);
    ++out.tokens;
  }
  return out;
}

TokenLoss released_token_cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& target_mask,
                                       const Tensor& input_mask) {
  const char* what = "released_token_cross_entropy";
  const MetricInputs in = read_inputs(what, logits, targets, {&target_mask, &input_mask});
  const std::vector<bool> scored = read_mask(target_mask), counted = read_mask(input_mask);
  TokenLoss out;
  for (int64_t p = 0; p < in.B * in.T; ++p) {
    if (!counted[static_cast<size_t>(p)]) continue;
    if (scored[static_cast<size_t>(p)]) out.loss_sum += cross_entropy_at(in, p, what);
    ++out.tokens;
  }
  return out;
}

ExactMatch exact_match(const Tensor& logits, const Tensor& targets, const Tensor& target_mask) {
  const char* what = "exact_match";
  const MetricInputs in = read_inputs(what, logits, targets, {&target_mask});
  const std::vector<bool> scored = read_mask(target_mask);
  ExactMatch out;
  for (int64_t b = 0; b < in.B; ++b) {
    bool any = false, all_right = true;
    for (int64_t t = 0; t < in.T; ++t) {
      const int64_t p = b * in.T + t;
      if (!scored[static_cast<size_t>(p)]) continue;
      any = true;
      const int64_t target = in.targets[static_cast<size_t>(p)];
      if (target < 0 || target >= in.V)
        fail("{}: target {} at batch row {}, step {} is outside 0..{}", what, target, b, t, in.V - 1);
      const double* row = in.logits.data() + p * in.V;
      int64_t best = 0;
      for (int64_t v = 1; v < in.V; ++v)
        if (row[v] > row[best]) best = v;
      all_right = all_right && best == target;
    }
    if (!any) fail("{}: batch row {} has no scored position", what, b);
    out.matched += all_right;
    ++out.examples;
  }
  return out;
}

}  // namespace posgrad
