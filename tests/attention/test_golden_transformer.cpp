// Golden test against PyTorch: the 2-layer transformer classifier of tools/golden_transformer.py
// (pre-LN + GELU and post-LN + ReLU). The file holds the weights, inputs, logits, loss, every
// parameter gradient and the losses of 10 AdamW steps; each is compared here with a stated
// tolerance, and the worst error is printed. The same files under bf16 autocast (tensor/autocast.h:
// every matmul, forward and backward, multiplies bf16 operands; the weights stay float32) meet
// the looser tolerances of kBf16AutocastTolerances, against PyTorch's float32 numbers.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "attention/transformer_classifier.h"
#include "nn/adam.h"
#include "nn/losses.h"
#include "nn/safetensors.h"
#include "tensor/autocast.h"
#include "tests/device_support.h"
#include "tests/golden_compare.h"

using namespace posgrad;
namespace bdata = boost::unit_test::data;

namespace {

using posgrad::test::expect_close;

const char* kTransformerGoldenFiles[] = {"transformer_prenorm_gelu.safetensors", "transformer_postnorm_relu.safetensors"};

// atol and rtol of each comparison (golden_compare.h).
struct TransformerTolerances {
  double logits_atol, logits_rtol, loss_atol, loss_rtol, grad_atol, grad_rtol, steps_atol, steps_rtol;
};
// float32: float32's rounding in another order of sums.
constexpr TransformerTolerances kFloat32Tolerances{1e-5, 1e-4, 1e-6, 1e-5, 1e-5, 1e-3, 1e-4, 1e-3};
// bf16 autocast: 3 to 5 times the largest error measured on the CPU (which rounds as the GPU's
// tensor cores do) over both files: logits 1.7e-3, loss 4.2e-4, gradients 1.3e-3 absolute (bf16's
// 2^-8 relative step on operands of order 1, summed over the width), AdamW losses 7.6e-4.
constexpr TransformerTolerances kBf16AutocastTolerances{8e-3, 1e-2, 1e-3, 1e-3, 4e-3, 2e-2, 4e-3, 4e-3};

// Loads the golden weights, runs the model on `device` and compares everything (values come back
// to the CPU for the comparison).
void check_golden_transformer(const std::string& file, Device device,
                              const TransformerTolerances& tol = kFloat32Tolerances) {
  const auto golden = load_safetensors(std::string(POSGRAD_SOURCE_DIR) + "/tests/golden/" + file);
  const auto cfg_json = nlohmann::json::parse(golden.metadata.at("config"));

  TransformerClassifierConfig cfg;
  cfg.vocab = cfg_json["vocab"];
  cfg.max_tokens = cfg_json["tokens"];
  cfg.classes = cfg_json["classes"];
  cfg.layers = cfg_json["layers"];
  cfg.block.width = cfg_json["width"];
  cfg.block.heads = cfg_json["heads"];
  cfg.block.ff_width = cfg_json["ff"];
  cfg.block.pre_norm = cfg_json["pre_norm"];
  cfg.block.activation = cfg_json["activation"];
  Generator gen(123);
  TransformerClassifier model(cfg, gen);

  // Load the PyTorch weights by name: every parameter must be present, and nothing extra.
  StateDict weights;
  for (const auto& [name, t] : golden.tensors)
    if (name.rfind("param.", 0) == 0) weights.emplace_back(name.substr(6), t);
  model.load_state_dict(weights, /*strict=*/true);
  BOOST_TEST(model.named_parameters().size() == weights.size());
  model.to(device);

  const Tensor tokens = golden.at("tokens").to(device), pad = golden.at("pad_mask").to(device),
               labels = golden.at("labels").to(device);
  Variable logits = model.forward(tokens, pad);
  Variable loss = cross_entropy(logits, labels);
  loss.backward();
  BOOST_TEST_MESSAGE(file << " on " << device.str());
  const double logits_diff =
      expect_close("logits", logits.value(), golden.at("logits"), tol.logits_atol, tol.logits_rtol);
  if (autocast_bf16())  // the bf16 products must show: a float32 run would pass the loose tolerances too
    BOOST_TEST(logits_diff > 10 * kFloat32Tolerances.logits_atol, "autocast left the logits at float32 precision");
  expect_close("loss", loss.value(), golden.at("loss"), tol.loss_atol, tol.loss_rtol);
  for (const auto& [name, p] : model.named_parameters())
    expect_close("grad." + name, p.grad(), golden.at("grad." + name), tol.grad_atol, tol.grad_rtol);

  // Ten AdamW steps (lr and weight decay from the file's config) reproduce PyTorch's losses.
  AdamWOptions options;
  options.lr = cfg_json["lr"];
  options.weight_decay = cfg_json["weight_decay"];
  AdamW opt(model.parameters(), options);
  std::vector<float> losses;
  for (int step = 0; step < 10; ++step) {
    opt.zero_grad();
    Variable l = cross_entropy(model.forward(tokens, pad), labels);
    l.backward();
    opt.step();
    losses.push_back(static_cast<float>(l.item()));
  }
  expect_close("adamw_losses (10 steps)", Tensor::from_vector(losses, {10}), golden.at("adamw_losses"), tol.steps_atol,
               tol.steps_rtol);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(golden_pytorch)

BOOST_DATA_TEST_CASE(transformer_classifier_matches_pytorch, bdata::make(kTransformerGoldenFiles), file) {
  check_golden_transformer(file, kCPU);
}

BOOST_DATA_TEST_CASE(transformer_classifier_under_bf16_autocast, bdata::make(kTransformerGoldenFiles), file) {
  AutocastBf16 scope;
  check_golden_transformer(file, kCPU, kBf16AutocastTolerances);
}

BOOST_AUTO_TEST_SUITE_END()

// The same golden files on the GPU (reported as skipped where there is none).
BOOST_AUTO_TEST_SUITE(golden_pytorch_cuda, *boost::unit_test::precondition(posgrad::test::GpuPresent()))

BOOST_DATA_TEST_CASE(transformer_classifier_matches_pytorch_on_cuda, bdata::make(kTransformerGoldenFiles), file) {
  check_golden_transformer(file, posgrad::test::kGPU);
}

BOOST_DATA_TEST_CASE(transformer_classifier_under_bf16_autocast_on_cuda, bdata::make(kTransformerGoldenFiles), file) {
  AutocastBf16 scope;
  check_golden_transformer(file, posgrad::test::kGPU, kBf16AutocastTolerances);
}

BOOST_AUTO_TEST_SUITE_END()
