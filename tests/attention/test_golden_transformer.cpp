// Golden test against PyTorch: the 2-layer transformer classifier of tools/golden_transformer.py
// (pre-LN + GELU and post-LN + ReLU). The file holds the weights, inputs, logits, loss, every
// parameter gradient and the losses of 10 AdamW steps; each is compared here with a stated
// tolerance, and the worst error is printed.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "attention/transformer_classifier.h"
#include "nn/adam.h"
#include "nn/losses.h"
#include "nn/safetensors.h"
#include "tests/device_support.h"
#include "tests/golden_compare.h"

using namespace posgrad;
namespace bdata = boost::unit_test::data;

namespace {

using posgrad::test::expect_close;

const char* kTransformerGoldenFiles[] = {"transformer_prenorm_gelu.safetensors", "transformer_postnorm_relu.safetensors"};

// Loads the golden weights, runs the model on `device` and compares everything (values come back
// to the CPU for the comparison).
void check_golden_transformer(const std::string& file, Device device) {
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
  expect_close("logits", logits.value(), golden.at("logits"), 1e-5, 1e-4);
  expect_close("loss", loss.value(), golden.at("loss"), 1e-6, 1e-5);
  for (const auto& [name, p] : model.named_parameters())
    expect_close("grad." + name, p.grad(), golden.at("grad." + name), 1e-5, 1e-3);

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
  expect_close("adamw_losses (10 steps)", Tensor::from_vector(losses, {10}), golden.at("adamw_losses"), 1e-4, 1e-3);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(golden_pytorch)

BOOST_DATA_TEST_CASE(transformer_classifier_matches_pytorch, bdata::make(kTransformerGoldenFiles), file) {
  check_golden_transformer(file, kCPU);
}

BOOST_AUTO_TEST_SUITE_END()

// The same golden files on the GPU (reported as skipped where there is none).
BOOST_AUTO_TEST_SUITE(golden_pytorch_cuda, *boost::unit_test::precondition(posgrad::test::GpuPresent()))

BOOST_DATA_TEST_CASE(transformer_classifier_matches_pytorch_on_cuda, bdata::make(kTransformerGoldenFiles), file) {
  check_golden_transformer(file, posgrad::test::kGPU);
}

BOOST_AUTO_TEST_SUITE_END()
