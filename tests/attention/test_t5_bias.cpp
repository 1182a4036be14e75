// Tests of the tutorial scheme t5_bias (docs/tutorial-new-scheme.md walks through this file):
// bucket facts, gradients, relative invariance, reference vs fused path, and the PyTorch golden
// file of tools/golden_t5_bias.py.
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "attention/multi_head_attention.h"
#include "attention/schemes/t5_bias.h"
#include "nn/adam.h"
#include "nn/safetensors.h"
#include "posgrad.h"
#include "tests/module_gradcheck.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_error;
using posgrad::test::check_module_gradients;

namespace {

std::shared_ptr<AttentionHook> t5(int64_t heads, int64_t buckets, int64_t max_distance, Generator& gen) {
  HookContext ctx;
  ctx.width = 4 * heads;
  ctx.heads = heads;
  return make_hook(HookSpec{"t5_bias", HookOptions{{"buckets", std::to_string(buckets)},
                                                   {"max_distance", std::to_string(max_distance)}}},
                   ctx, gen);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(t5_bias)

BOOST_AUTO_TEST_CASE(buckets_are_exact_near_and_logarithmic_far) {
  Generator gen(1);
  T5Bias bias(2, 32, 128, true, gen);
  // Keys in the past (offset < 0): 8 exact buckets 0..7, then log-spaced up to 15.
  auto b = bias.buckets_of({0, -1, -7, -8, -16, -127, -128, -1000});
  BOOST_TEST((b == std::vector<int64_t>{0, 1, 7, 8, 10, 15, 15, 15}));
  // Keys in the future use the other half of the buckets.
  auto f = bias.buckets_of({1, 7, 8, 1000});
  BOOST_TEST((f == std::vector<int64_t>{17, 23, 24, 31}));
  T5Bias causal(2, 16, 64, false, gen);
  BOOST_TEST((causal.buckets_of({5, 0, -3}) == std::vector<int64_t>{0, 0, 3}));
  check_error([&] { T5Bias(2, 2, 10, true, gen); }, {"t5_bias", "at least 4 buckets"});
}

BOOST_AUTO_TEST_CASE(gradcheck_of_bias_table_and_input) {
  Generator gen(2);
  MultiHeadAttention mha(8, 2, gen, {t5(2, 8, 10, gen)});
  const Positions pos = Positions::sequence(9);
  check_module_gradients(mha, normal({2, 9, 8}, 0, 1, gen), [&](const Variable& x) { return mha.forward(x, {}, &pos); });
}

BOOST_AUTO_TEST_CASE(reference_and_fused_paths_agree) {
  Generator gen(3);
  MultiHeadAttention mha(8, 2, gen, {t5(2, 8, 10, gen)});
  const Positions pos = Positions::sequence(20);
  Tensor x = normal({2, 20, 8}, 0, 1, gen);
  AttentionMasks causal;
  causal.causal = true;
  std::vector<Tensor> outs, grads;
  for (AttentionPath path : {AttentionPath::Reference, AttentionPath::Fused}) {
    mha.set_path(path);
    mha.zero_grad();
    Variable xv(x, true);
    Variable out = mha.forward(xv, causal, &pos);
    sum(square(out)).backward();
    outs.push_back(out.value());
    grads.push_back(mha.named_parameters().back().second.grad());  // hooks.0.bias
    grads.push_back(xv.grad());
  }
  BOOST_TEST(max_abs_diff(outs[0], outs[1]) < 1e-5);
  BOOST_TEST(max_abs_diff(grads[0], grads[2]) < 1e-5);
  BOOST_TEST(max_abs_diff(grads[1], grads[3]) < 1e-5);
}

BOOST_AUTO_TEST_CASE(scores_depend_only_on_offsets) {
  // The bias of (i, j) equals that of (i + s, j + s): compare probability rows of a layer whose
  // projections are zero, so only the positional term remains.
  Generator gen(4);
  MultiHeadAttention mha(8, 2, gen, {t5(2, 8, 10, gen)});
  for (auto& [name, p] : mha.named_parameters())
    if (name.find("proj") != std::string::npos) p.mutable_value().fill_(0.0);
  const Positions pos = Positions::sequence(12);
  mha.forward(Variable(normal({1, 12, 8}, 0, 1, gen)), {}, &pos);
  const Tensor p = mha.last_probs();  // [1, H, N, N]; softmax shifts do not matter for ratios
  for (int64_t i = 2; i < 6; ++i)
    for (int64_t d = -2; d <= 2; ++d) {
      const double a = std::log(p.at<float>({0, 1, i, i + d})) - std::log(p.at<float>({0, 1, i, i}));
      const double b = std::log(p.at<float>({0, 1, i + 3, i + 3 + d})) - std::log(p.at<float>({0, 1, i + 3, i + 3}));
      BOOST_TEST(std::abs(a - b) < 1e-5);
    }
}

BOOST_AUTO_TEST_CASE(matches_pytorch_golden) {
  const auto golden = load_safetensors(std::string(POSGRAD_SOURCE_DIR) + "/tests/golden/t5_bias.safetensors");
  Generator gen(5);
  MultiHeadAttention mha(8, 2, gen, {t5(2, 8, 10, gen)});
  mha.to(kFloat64);
  for (auto& [name, p] : mha.named_parameters()) p.mutable_value().copy_(golden.at("param." + name));
  const Positions pos = Positions::sequence(12);
  // The scheme's buckets equal the golden file's dense bucket matrix.
  auto* hook = dynamic_cast<T5Bias*>(mha.hooks()[0].get());
  std::vector<int64_t> offsets;
  for (int64_t i = 0; i < 12; ++i)
    for (int64_t j = 0; j < 12; ++j) offsets.push_back(j - i);
  BOOST_TEST(hook->buckets_of(offsets) == golden.at("buckets").to_vector<int64_t>(), boost::test_tools::per_element());

  const Tensor x = golden.at("x"), target = golden.at("target");
  Variable xv(x, true);
  Variable out = mha.forward(xv, {}, &pos);
  Variable loss = mean(square(out - Variable(target)));
  loss.backward();
  double worst = max_abs_diff(out.value(), golden.at("out"));
  worst = std::max(worst, max_abs_diff(xv.grad(), golden.at("grad.input")));
  for (auto& [name, p] : mha.named_parameters()) {
    const double e = max_abs_diff(p.grad(), golden.at("grad." + name));
    BOOST_TEST(e < 1e-10, name << " gradient differs by " << e);
    worst = std::max(worst, e);
  }
  BOOST_TEST(std::abs(loss.item() - golden.at("loss").item()) < 1e-12);
  Adam opt(mha.parameters(), AdamOptions{0.05});
  std::vector<double> losses;
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    mean(square(mha.forward(Variable(x), {}, &pos) - Variable(target))).backward();
    opt.step();
    losses.push_back(mean(square(mha.forward(Variable(x), {}, &pos) - Variable(target))).item());
  }
  const auto expect = golden.at("adam_losses").to_vector<double>();
  for (size_t i = 0; i < 3; ++i) BOOST_TEST(std::abs(losses[i] - expect[i]) < 1e-10 * (1 + std::abs(expect[i])));
  BOOST_TEST_MESSAGE("t5_bias vs PyTorch: worst |diff| " << worst);
  BOOST_TEST(worst < 1e-10);
}

BOOST_AUTO_TEST_SUITE_END()
