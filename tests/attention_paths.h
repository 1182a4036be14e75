// Reference-vs-fast path checks shared by the attention test files: run one attention layer
// forward and backward through a given path, then assert that two runs agree (output, input
// gradient and every parameter gradient).
#pragma once

#include <boost/test/unit_test.hpp>

#include <functional>
#include <string>
#include <vector>

#include "attention/multi_head_attention.h"

namespace posgrad::test {

struct PathRun {
  Tensor out, dx;
  std::vector<Tensor> grads;  // one per mha.parameters(), zeros where no gradient flowed
};

// Backward of sum(forward(x) * weights) with `mha` on `path`.
inline PathRun run_path(MultiHeadAttention& mha, AttentionPath path, const Tensor& x, const Tensor& weights,
                        const std::function<Variable(const Variable&)>& forward) {
  mha.set_path(path);
  mha.zero_grad();
  Variable xv(x, true);
  Variable out = forward(xv);
  sum(out * Variable(weights)).backward();
  PathRun r{out.value(), xv.grad(), {}};
  for (auto& p : mha.parameters()) r.grads.push_back(p.grad().defined() ? p.grad() : Tensor::zeros_like(p.value()));
  return r;
}

// Every tensor of the two runs within `tol`; `label` (if any) starts each message.
inline void check_runs_agree(const MultiHeadAttention& mha, const PathRun& ref, const PathRun& fast, double tol,
                             const std::string& label = "") {
  const std::string at = label.empty() ? "" : label + ": ";
  BOOST_TEST(max_abs_diff(ref.out, fast.out) < tol, at << "output differs by " << max_abs_diff(ref.out, fast.out));
  BOOST_TEST(max_abs_diff(ref.dx, fast.dx) < tol, at << "dx differs by " << max_abs_diff(ref.dx, fast.dx));
  const auto names = mha.named_parameters();
  for (size_t i = 0; i < ref.grads.size(); ++i)
    BOOST_TEST(max_abs_diff(ref.grads[i], fast.grads[i]) < tol,
               at << names[i].first << " gradient differs by " << max_abs_diff(ref.grads[i], fast.grads[i]));
}

}  // namespace posgrad::test
