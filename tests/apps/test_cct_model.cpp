// The CCT model (apps/cct/cct_model.h) against its PyTorch twin (tools/golden_cct.py ->
// tests/golden/cct_*.safetensors): logits, the label-smoothed loss, every parameter's gradient
// and three AdamW steps, for each positional scheme of Table 2(c) and for pre-LN, on the CPU and
// (where there is one) on the GPU; the token grid
// of the paper's geometry; the tokenizer's bad-input errors; DropPath's schedule over layers.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "apps/cct/cct_figures.h"
#include "apps/common/rotation_angles.h"
#include "apps/cct/cct_model.h"
#include "apps/cct/sinusoidal_grid.h"
#include "nn/nn.h"
#include "posgrad.h"
#include "tests/device_support.h"
#include "tests/golden_compare.h"
#include "tests/test_support.h"

using namespace posgrad;
namespace bdata = boost::unit_test::data;

namespace {

const std::vector<std::string> kGoldenCases = {"cct_sinusoidal", "cct_sinusoidal_2d", "cct_learned_absolute",
                                               "cct_ape_grid",   "cct_ape",           "cct_ape_grid_prenorm"};

CctConfig small_config(const nlohmann::json& cfg) {
  CctConfig c;
  c.image_size = cfg["image"];
  c.channels = cfg["channels"];
  c.classes = cfg["classes"];
  c.width = cfg["width"];
  c.heads = cfg["heads"];
  c.layers = cfg["layers"];
  c.ff_width = cfg["ff"];
  c.conv_kernel = cfg["conv_kernel"];
  c.pool_kernel = cfg["pool_kernel"];
  c.pool_stride = cfg["pool_kernel"];
  c.positional = cfg["scheme"];
  c.pre_norm = cfg["pre_norm"];
  c.dropout = 0.0;
  c.attention_dropout = 0.0;
  c.drop_path_step = 0.0;
  return c;
}

// Golden file `name` on `device` (the values come back to the CPU for the comparisons).
void check_golden_cct(const std::string& name, Device device) {
  const auto golden = load_safetensors(std::string(POSGRAD_SOURCE_DIR) + "/tests/golden/" + name + ".safetensors");
  const auto cfg = nlohmann::json::parse(golden.metadata.at("config"));
  Generator gen(1);
  CctModel model(small_config(cfg), gen);
  model.to(kFloat64);
  model.to(device);
  for (auto& [pname, p] : model.named_parameters()) {
    BOOST_REQUIRE_MESSAGE(golden.contains("param." + pname), "no golden parameter " << pname);
    p.mutable_value().copy_(golden.at("param." + pname).to(device));
  }
  BOOST_TEST(model.named_parameters().size() * 2 + 5 == golden.tensors.size());  // param + grad each, and 5 more
  const Tensor images = golden.at("images").to(device), labels = golden.at("labels").to(device);
  const double smoothing = cfg["smoothing"];
  Variable logits = model.forward(images);
  test::expect_close("logits", logits.value(), golden.at("logits"), 1e-10, 1e-8);
  Variable loss = cross_entropy(logits, labels, Reduction::Mean, -100, smoothing);
  test::expect_close("loss", loss.value(), golden.at("loss"), 1e-10, 1e-8);
  model.zero_grad();
  loss.backward();
  for (auto& [pname, p] : model.named_parameters())
    test::expect_close("grad." + pname, p.grad(), golden.at("grad." + pname), 1e-9, 1e-6);
  // Three AdamW steps from the same start (fresh gradients).
  for (auto& [pname, p] : model.named_parameters()) p.mutable_value().copy_(golden.at("param." + pname).to(device));
  AdamW opt(model.parameters(), {.lr = cfg["lr"], .weight_decay = cfg["weight_decay"]});
  const auto expected = golden.at("adamw_losses").template to_vector<double>();
  for (size_t step = 0; step < expected.size(); ++step) {
    opt.zero_grad();
    Variable l = cross_entropy(model.forward(images), labels, Reduction::Mean, -100, smoothing);
    BOOST_TEST(std::abs(l.item() - expected[step]) < 1e-8, "AdamW step " << step << ": " << l.item() << " vs " << expected[step]);
    l.backward();
    opt.step();
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cct_model)

BOOST_DATA_TEST_CASE(golden_pytorch, bdata::make(kGoldenCases), name) { check_golden_cct(name, kCPU); }

BOOST_AUTO_TEST_CASE(paper_geometry_and_drop_path_schedule) {
  Generator gen(2);
  CctConfig c;  // the paper's: 32 x 32 images, conv 3x3 no padding -> 30 x 30, max_pool 3 -> 10 x 10
  c.width = 32;
  c.heads = 4;
  c.ff_width = 64;
  CctModel model(c, gen);
  BOOST_TEST(model.token_grid() == std::vector<int64_t>({10, 10}));
  // p_l = 0.1 l: 0, 0.1, ..., 0.6 for 7 layers, unscaled (the released code).
  for (int64_t l = 0; l < 7; ++l) {
    const std::string repr = model.blocks()[l]->named_children().back().second->extra_repr();
    BOOST_TEST(repr == fmt::format("p={}, rescale=false", 0.1 * static_cast<double>(l)));
  }
  // APE is one module shared by every layer: one set of generators ([2 H, Dh/2, Dh/2] for the grid).
  BOOST_TEST(model.parameter("positional.orthogonal.generators").shape() == Shape({8, 4, 4}));
  model.eval();
  Generator g2(3);
  BOOST_TEST(model.forward(normal({2, 3, 32, 32}, 0, 1, g2)).shape() == Shape({2, 10}));
}

BOOST_AUTO_TEST_CASE(tokenizer_bad_input_one_line) {
  Generator gen(1);
  CctConfig c;
  c.width = 16;
  c.heads = 2;
  c.layers = 1;
  c.image_size = 4;  // conv 3x3 -> 2x2, too small for max_pool 3
  test::check_error([&] { CctModel(c, gen); },
                    {"CCT tokenizer (conv 3x3 stride 1 padding 0, max_pool 3x3 stride 3 padding 0)", "4x4 image",
                     "max_pool2d", "row extent 3", "padded input's 2"});
  c.image_size = 32;
  CctModel model(c, gen);
  test::check_error([&] { model.forward(Tensor::zeros({1, 3, 16, 16})); },
                    {"CCT: a 16x16 image gives a 4x4 token grid", "built for 32x32 images (10x10 tokens)"});
  test::check_error([&] { model.forward(Tensor::zeros({1, 1, 32, 32})); }, {"CCT: images must be [B, 3, Y, Y]", "[1, 1, 32, 32]"});
  c.positional = "sinusoidal_2d";
  c.width = 18;
  test::check_error([&] { CctModel(c, gen); }, {"sinusoidal_2d", "multiple of 4", "18"});
}

BOOST_AUTO_TEST_CASE(sinusoidal_2d_table_by_hand) {
  SinusoidalGrid s(4, 10000.0);
  // D = 4: features (sin r, cos r, sin c, cos c) at frequency 1.
  const auto t = s.table(2, 3).to_vector<double>();
  const int64_t token = 1 * 3 + 2;  // row 1, column 2
  BOOST_TEST(std::abs(t[token * 4 + 0] - std::sin(1.0)) < 1e-12);
  BOOST_TEST(std::abs(t[token * 4 + 1] - std::cos(1.0)) < 1e-12);
  BOOST_TEST(std::abs(t[token * 4 + 2] - std::sin(2.0)) < 1e-12);
  BOOST_TEST(std::abs(t[token * 4 + 3] - std::cos(2.0)) < 1e-12);
}

BOOST_AUTO_TEST_CASE(rotation_angles_of_a_known_rotation) {
  // A 5 x 5 orthogonal matrix: rotations by 1.1 and 0.3 in the planes (0, 1) and (2, 3) (the
  // second one conjugated by a swap of axes 2 and 3, i.e. turned the other way), 1 on axis 4.
  std::vector<double> w(25, 0.0);
  auto set = [&](int i, int j, double v) { w[i * 5 + j] = v; };
  set(0, 0, std::cos(1.1)), set(0, 1, -std::sin(1.1)), set(1, 0, std::sin(1.1)), set(1, 1, std::cos(1.1));
  set(2, 2, std::cos(0.3)), set(2, 3, std::sin(0.3)), set(3, 2, -std::sin(0.3)), set(3, 3, std::cos(0.3));
  set(4, 4, 1.0);
  const std::vector<double> angles = apps::rotation_angles(w, 5);
  BOOST_REQUIRE_EQUAL(angles.size(), 2u);
  BOOST_TEST(std::abs(angles[0] - 0.3) < 1e-9);
  BOOST_TEST(std::abs(angles[1] - 1.1) < 1e-9);
}

BOOST_AUTO_TEST_SUITE_END()

// The same golden files on the GPU (reported as skipped where there is none).
BOOST_AUTO_TEST_SUITE(cct_model_cuda, *boost::unit_test::precondition(posgrad::test::GpuPresent()))

BOOST_DATA_TEST_CASE(golden_pytorch_on_cuda, bdata::make(kGoldenCases), name) {
  check_golden_cct(name, posgrad::test::kGPU);
}

BOOST_AUTO_TEST_SUITE_END()
