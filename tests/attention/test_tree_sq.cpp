// The Tree-SQ scheme (tree_sq, spec ape.md section 6): the one-hot word stacks of hand-written
// heap positions (most recent step first, truncated to max_depth), the slot exponents of both
// tilings, the PyTorch golden files (tools/golden_tree_sq.py: output and every gradient, binary
// trees with both tilings and a ternary tree), gradcheck in float64, and the errors.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "attention/schemes/tree_sq.h"
#include "nn/safetensors.h"
#include "posgrad.h"
#include "tests/golden_compare.h"
#include "tests/module_gradcheck.h"
#include "tests/test_support.h"

using namespace posgrad;
namespace bdata = boost::unit_test::data;

namespace {

std::shared_ptr<TreeSq> build(const HookOptions& options, int64_t width, Generator& gen) {
  auto hook = std::dynamic_pointer_cast<TreeSq>(make_hook(HookSpec{"tree_sq", options}, HookContext{.width = width, .heads = 2}, gen));
  BOOST_REQUIRE(hook);
  return hook;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tree_sq)

BOOST_AUTO_TEST_CASE(word_stacks_of_hand_written_heap_positions) {
  Generator gen(1);
  auto sq = build({{"max_depth", "3"}}, 24, gen);  // Z = 6 slots, F = 4
  // SOS (0) and the root (1): the empty word. Heap 5 = [0, 1]: the last step (1) at level 0, the
  // one before (0) at level 1. Heap 16 = [0, 0, 0, 0]: only the last 3 steps are kept.
  const Tensor s = sq->word_stacks(Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3, 5, 16}, {6}));
  BOOST_TEST(s.shape() == (Shape{6, 6}), boost::test_tools::per_element());
  const std::vector<double> expected{0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0,  1, 0, 0, 0, 0, 0,
                                     0, 1, 0, 0, 0, 0,  0, 1, 1, 0, 0, 0,  1, 0, 1, 0, 1, 0};
  BOOST_TEST(s.to_vector<double>() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(slot_exponents_of_both_tilings) {
  Generator gen(2);
  // The released model: kappa 2, max_depth 8 (Z = 16).
  const std::vector<int64_t> levels{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
  const std::vector<int64_t> released{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7};
  BOOST_TEST(build({}, 32, gen)->slot_exponents() == levels, boost::test_tools::per_element());
  BOOST_TEST(build({{"tiling", "released"}}, 32, gen)->slot_exponents() == released, boost::test_tools::per_element());
  // The weight rows: p^e sqrt((1 - p^2) F / 2), p = tanh(w) in (tanh 0.7, tanh 0.999).
  auto sq = build({{"max_depth", "2"}}, 8, gen);  // F = 2
  sq->to(kFloat64);
  const Tensor w = sq->named_parameters()[0].second.value();
  const Tensor weight = sq->slot_weights().value();  // [4, 2]
  for (int64_t f = 0; f < 2; ++f) {
    const double p = std::tanh(w.to_vector<double>()[static_cast<size_t>(f)]), scale = std::sqrt(1 - p * p);
    BOOST_TEST(p > std::tanh(0.7) - 1e-12);
    BOOST_TEST(p < std::tanh(0.999) + 1e-12);
    BOOST_TEST(std::abs(weight.at<double>({0, f}) - scale) < 1e-12);  // level 0, F / 2 = 1
    BOOST_TEST(std::abs(weight.at<double>({3, f}) - p * scale) < 1e-12);  // level 1
  }
}

BOOST_DATA_TEST_CASE(matches_pytorch, bdata::make({"levels", "released", "ternary"}), name) {
  const auto golden = load_safetensors(std::string(POSGRAD_SOURCE_DIR) + "/tests/golden/tree_sq_" + name + ".safetensors");
  const auto cfg = nlohmann::json::parse(golden.metadata.at("config"));
  const int64_t branching = cfg["branching"], max_depth = cfg["max_depth"], width = cfg["width"];
  const std::string tiling = cfg["tiling"];
  Generator gen(3);
  const HookOptions options{{"branching", std::to_string(branching)}, {"max_depth", std::to_string(max_depth)},
                            {"tiling", tiling}};
  auto sq = build(options, width, gen);
  sq->to(kFloat64);
  sq->load_state_dict(StateDict{{"w", golden.at("param.w")}}, /*strict=*/true);
  const Positions at = Positions::tree(golden.at("heap"), branching);
  test::expect_close("stacks", sq->word_stacks(golden.at("heap")), golden.at("stacks"), 1e-15, 0);  // ones and zeros
  const Variable x(golden.at("x"), true);
  const Variable out = sq->embed(x, at);
  test::expect_close("out", out.value(), golden.at("out"), 1e-12, 1e-10);
  sum(out * Variable(golden.at("g"))).backward();
  test::expect_close("grad.w", sq->named_parameters()[0].second.grad(), golden.at("grad.w"), 1e-12, 1e-10);
  test::expect_close("grad.input", x.grad(), golden.at("grad.input"), 1e-12, 1e-10);
}

BOOST_AUTO_TEST_CASE(gradcheck_in_float64) {
  Generator gen(4);
  for (const char* tiling : {"levels", "released"}) {
    auto sq = build({{"max_depth", "3"}, {"tiling", tiling}}, 12, gen);
    const Positions at = Positions::tree(Tensor::from_vector(std::vector<int64_t>{0, 1, 3, 6, 13, 27, 2, 5}, {2, 4}));
    test::check_module_gradients(*sq, normal({2, 4, 12}, 0, 1, gen), [&](const Variable& x) { return sq->embed(x, at); });
  }
}

BOOST_AUTO_TEST_CASE(bad_input_names_what_is_wrong) {
  Generator gen(5);
  test::check_error([&] { build({}, 24, gen); }, {"tree_sq", "width 24", "word slots, branching x max_depth = 2 x 8"});
  test::check_error([&] { build({{"tiling", "tiled"}}, 32, gen); }, {"tiling", "levels", "released"});
  test::check_error([&] { build({{"max_depth", "4611686018427387904"}}, 32, gen); }, {"width 32", "2 x 4611686018427387904"});
  test::check_error([&] { build({{"max_depth", "0"}}, 32, gen); }, {"max_depth must be >= 1, got 0"});
  auto sq = build({{"max_depth", "2"}}, 8, gen);
  const Variable x(Tensor::zeros({1, 3, 8}));
  test::check_error([&] { sq->embed(x, Positions::sequence(3)); }, {"tree_sq", "needs tree (heap) positions", "sequence of 3"});
  const Tensor ternary = Tensor::from_vector(std::vector<int64_t>{1, 2, 3}, {3});
  test::check_error([&] { sq->embed(x, Positions::tree(ternary, 3)); }, {"branching 2", "branching 3"});
  test::check_error([&] { sq->embed(Variable(Tensor::zeros({1, 4, 8})), Positions::tree(ternary)); }, {"[B, 3, 8]"});
}

BOOST_AUTO_TEST_SUITE_END()
