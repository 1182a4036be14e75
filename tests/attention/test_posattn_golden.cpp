// Golden test against PyTorch for the posattn classifier: tools/golden_posattn.py writes a
// 2-block model built in plain torch from the posattn spec's formulas (SIREN 1-D + Gaussian span
// t = 0.1, SIREN 2-D + span, txl_baseline, standard Transformer-XL + span) and with each absolute
// scheme added to the tokens (sinusoidal 1-D, learned_absolute on the 8x8 grid; ape.md section
// 6), in float64. Here the same weights are loaded into
// PosattnClassifier; logits, loss, every parameter gradient, the losses of 3 Adam steps and the
// learned sigmas are compared, on the reference and the fast path, in float64 (tight: 1e-13 +
// 1e-12 |ref| on the CPU, where every arm agrees to below 1e-15) and float32 (loose), and again
// on the GPU (reference path) where one is usable. The worst error of each is printed.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "attention/posattn_classifier.h"
#include "nn/adam.h"
#include "nn/losses.h"
#include "nn/safetensors.h"
#include "tests/device_support.h"
#include "tests/golden_compare.h"

using namespace posgrad;
namespace bdata = boost::unit_test::data;

namespace {

struct Tolerance {
  double atol, rtol;
};

struct Run {
  AttentionPath path;
  DType dtype;
  Tolerance value, grad, loss;
};

// Checks max |ours - ref| / (atol + rtol |ref|) <= 1; returns max |ours - ref|.
double expect_close(const std::string& what, const Tensor& ours, const Tensor& ref, Tolerance tol) {
  return posgrad::test::expect_close(what, ours, ref, tol.atol, tol.rtol);
}

PosattnClassifierConfig config_from(const nlohmann::json& j) {
  PosattnClassifierConfig c;
  c.input_dim = j["input_dim"];
  c.width = j["width"];
  c.heads = j["heads"];
  c.layers = j["layers"];
  c.ff_width = j["ff"];
  c.output_hidden = j["out_hidden"];
  c.classes = j["classes"];
  c.dropout = 0.0;
  c.dims = j["dims"];
  c.structure = j["image"].get<std::vector<int64_t>>();
  c.positional = j["positional"];
  if (c.positional == "siren" || c.positional == "txl_baseline")
    c.positional_options["hidden"] = std::to_string(j["pe_hidden"].get<int64_t>());
  if (c.positional == "siren") {
    c.positional_options["layers"] = std::to_string(j["pe_layers"].get<int64_t>());
    c.positional_options["omega"] = fmt::format("{}", j["omega"].get<double>());
  }
  c.span = j["span"];
  c.threshold = j["threshold"];
  return c;
}

const char* kPosattnGoldenFiles[] = {"posattn_siren1d_span.safetensors", "posattn_siren2d_span.safetensors",
                              "posattn_baseline.safetensors", "posattn_txl_span.safetensors",
                              "posattn_sinusoidal.safetensors", "posattn_learned_absolute.safetensors"};

// Loads the golden weights into PosattnClassifier, runs it on `device` and compares everything
// (values come back to the CPU for the comparison), on the reference and the fused path (the GPU has
// only the reference path).
void check_golden_posattn(const std::string& file, Device device) {
  const auto golden = load_safetensors(std::string(POSGRAD_SOURCE_DIR) + "/tests/golden/" + file);
  const auto cfg_json = nlohmann::json::parse(golden.metadata.at("config"));
  const PosattnClassifierConfig cfg = config_from(cfg_json);
  StateDict weights;
  for (const auto& [name, t] : golden.tensors)
    if (name.rfind("param.", 0) == 0) weights.emplace_back(name.substr(6), t);

  // float64 on the CPU: every arm agrees to below 1e-15 (worst logits 6.7e-16, gradients 6.1e-16),
  // so the bound is 1e-13 + 1e-12 |ref|: a table or constant of any arm computed in float32
  // (txl_baseline's sinusoids rounded to float32 move the logits by about 1e-9) fails it, as it
  // did not the former 1e-10 + 1e-8 |ref|. The GPU keeps that looser bound (cuBLAS and the CUDA
  // kernels sum in other orders; not measured here).
  const Tolerance f64 = device.is_cpu() ? Tolerance{1e-13, 1e-12} : Tolerance{1e-10, 1e-8};
  const Tolerance f64_grad = device.is_cpu() ? Tolerance{1e-13, 1e-11} : Tolerance{1e-10, 1e-7};
  const Run runs[] = {
      {AttentionPath::Reference, kFloat64, f64, f64_grad, f64},
      {AttentionPath::Fused, kFloat64, f64, f64_grad, f64},
      {AttentionPath::Reference, kFloat32, {2e-5, 1e-4}, {2e-5, 2e-3}, {1e-5, 1e-4}},
      {AttentionPath::Fused, kFloat32, {2e-5, 1e-4}, {2e-5, 2e-3}, {1e-5, 1e-4}},
  };
  for (const Run& run : runs) {
    BOOST_TEST_MESSAGE(file << " on " << device.str() << ", " << attention_path_name(run.path)
                            << " path, " << (run.dtype == kFloat64 ? "float64" : "float32"));
    Generator gen(5);
    PosattnClassifier model(cfg, gen);
    model.set_path(run.path);
    model.to(run.dtype);  // first: loading converts the file's float64 to the module's dtype
    model.load_state_dict(weights, /*strict=*/true);
    BOOST_TEST(model.named_parameters().size() == weights.size());
    model.to(device);
    const Tensor images = golden.at("images").to(run.dtype).to(device), labels = golden.at("labels").to(device);

    Variable logits = model.forward(Variable(images));
    Variable loss = cross_entropy(logits, labels);
    loss.backward();
    double worst_grad = 0.0;
    const double dl = expect_close("logits", logits.value(), golden.at("logits"), run.value);
    expect_close("loss", loss.value(), golden.at("loss"), run.loss);
    for (const auto& [name, p] : model.named_parameters())
      worst_grad = std::max(worst_grad, expect_close("grad." + name, p.grad(), golden.at("grad." + name), run.grad));

    AdamOptions adam;
    adam.lr = cfg_json["lr"];
    Adam opt(model.parameters(), adam);
    std::vector<double> losses;
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      Variable l = cross_entropy(model.forward(Variable(images)), labels);
      l.backward();
      opt.step();
      losses.push_back(l.item());
    }
    const double da = expect_close("adam_losses (3 steps)", Tensor::from_vector(losses, {3}), golden.at("adam_losses"), run.loss);
    double ds = 0.0;
    if (cfg.span) {
      std::vector<Tensor> sigmas;
      for (int64_t i = 0; i < cfg.layers; ++i) sigmas.push_back(model.parameter(fmt::format("blocks.{}.attn.hooks.1.sigma", i)).value());
      ds = expect_close("sigma after 3 steps", stack(sigmas, 0), golden.at("sigma_after"), run.grad);
      for (const auto& line : model.hook_summaries()) BOOST_TEST_MESSAGE("  " << line);
    }
    BOOST_TEST_MESSAGE(fmt::format("  worst |diff|: logits {:.3g}, gradients {:.3g}, adam losses {:.3g}, sigma {:.3g}", dl,
                                   worst_grad, da, ds));
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(posattn_golden)

BOOST_DATA_TEST_CASE(posattn_classifier_matches_pytorch, bdata::make(kPosattnGoldenFiles), file) {
  check_golden_posattn(file, kCPU);
}

BOOST_AUTO_TEST_SUITE_END()

// The same golden files on the GPU (reported as skipped where there is none).
BOOST_AUTO_TEST_SUITE(posattn_golden_cuda, *boost::unit_test::precondition(posgrad::test::GpuPresent()))

BOOST_DATA_TEST_CASE(posattn_classifier_matches_pytorch_on_cuda, bdata::make(kPosattnGoldenFiles), file) {
  check_golden_posattn(file, posgrad::test::kGPU);
}

BOOST_AUTO_TEST_SUITE_END()
