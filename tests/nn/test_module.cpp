// Module: parameter naming and order, tying, train/eval, state_dict round trips and every
// load_state_dict error, zero_grad, dtype and device moves, printing.
#include <boost/test/unit_test.hpp>

#include "nn/nn.h"
#include "posgrad.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_error;

namespace {

// A two-level toy model: own parameter, a buffer, and two children (one nested).
class Block : public Module {
 public:
  explicit Block(Generator& gen) {
    scale = register_parameter("scale", Tensor::ones({3}));
    fc = register_module("fc", std::make_shared<Linear>(3, 3, true, gen));
    steps = register_buffer("steps", Tensor::zeros({1}, kInt64));
  }
  Variable forward(const Variable& x) override { return fc->forward(x * scale); }
  Variable scale, steps;
  std::shared_ptr<Linear> fc;
};

class Toy : public Module {
 public:
  explicit Toy(Generator& gen) {
    embed = register_module("embed", std::make_shared<Linear>(4, 3, true, gen));
    temperature = register_parameter("temperature", Tensor::full({}, 2.0));
    block = register_module("blocks.0", std::make_shared<Block>(gen));
    norm = register_module("norm", std::make_shared<LayerNorm>(3));
    drop = register_module("drop", std::make_shared<Dropout>(0.5, 3));
  }
  Variable forward(const Variable& x) override {
    return drop->forward(norm->forward(block->forward(embed->forward(x)) * temperature));
  }
  std::shared_ptr<Linear> embed;
  Variable temperature;
  std::shared_ptr<Block> block;
  std::shared_ptr<LayerNorm> norm;
  std::shared_ptr<Dropout> drop;
};

std::vector<std::string> names_of(const std::vector<std::pair<std::string, Variable>>& named) {
  std::vector<std::string> out;
  for (const auto& [n, _] : named) out.push_back(n);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(module)

BOOST_AUTO_TEST_CASE(parameters_are_named_with_dots_in_registration_order) {
  Generator gen(1);
  Toy toy(gen);
  // Own parameters first, then each child in registration order (PyTorch's order).
  const std::vector<std::string> expected = {"temperature", "embed.weight", "embed.bias",
                                             "blocks.0.scale", "blocks.0.fc.weight", "blocks.0.fc.bias",
                                             "norm.weight", "norm.bias"};
  BOOST_TEST(names_of(toy.named_parameters()) == expected, boost::test_tools::per_element());
  BOOST_TEST(toy.parameters().size() == expected.size());
  BOOST_TEST(toy.num_parameters() == 1 + 12 + 3 + 3 + 9 + 3 + 3 + 3);
  for (const auto& p : toy.parameters()) BOOST_TEST(p.requires_grad());
  BOOST_TEST(names_of(toy.named_buffers()) == std::vector<std::string>{"blocks.0.steps"}, boost::test_tools::per_element());
  // The Variables are the ones the layers hold (same state, not copies).
  BOOST_TEST(toy.parameter("embed.weight").impl() == toy.embed->weight().impl());
  BOOST_TEST(toy.parameter("blocks.0.scale").impl() == toy.block->scale.impl());

  std::vector<std::string> modules;
  for (const auto& [n, m] : toy.named_modules()) modules.push_back(n + ":" + m->type_name());
  const std::vector<std::string> expected_modules = {":Toy", "embed:Linear", "blocks.0:Block", "blocks.0.fc:Linear",
                                                     "norm:LayerNorm", "drop:Dropout"};
  BOOST_TEST(modules == expected_modules, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(registration_errors_name_the_problem) {
  Module m;
  m.register_parameter("w", Tensor::zeros({2}));
  check_error([&] { m.register_parameter("w", Tensor::zeros({2})); }, {"'w'", "already registered"});
  check_error([&] { m.register_buffer("w", Tensor::zeros({2})); }, {"'w'", "already registered"});
  check_error([&] { m.register_parameter("a.b", Tensor::zeros({2})); }, {"'a.b'", "must not contain '.'"});
  check_error([&] { m.register_parameter("", Tensor::zeros({2})); }, {"must not be empty"});
  check_error([&] { m.register_parameter("i", Tensor::zeros({2}, kInt64)); }, {"'i'", "floating-point"});
  check_error([&] { m.register_module("w", std::make_shared<ReLU>()); }, {"'w'", "already registered"});
  check_error([&] { m.parameter("nope"); }, {"'nope'", "w"});
  check_error([&] { m.forward(Variable(Tensor::zeros({1}))); }, {"Module", "forward"});
}

BOOST_AUTO_TEST_CASE(tied_parameters_appear_once) {
  Generator gen(2);
  Module m;
  auto a = m.register_module("a", std::make_shared<Linear>(3, 3, false, gen));
  m.register_module("b", a);  // the same module twice (weight tying)
  BOOST_TEST(m.parameters().size() == 1u);
  BOOST_TEST(m.num_parameters() == 9);
  BOOST_TEST(m.state_dict().size() == 2u);  // but both names are saved, like PyTorch
}

BOOST_AUTO_TEST_CASE(train_and_eval_are_recursive) {
  Generator gen(3);
  Toy toy(gen);
  BOOST_TEST(toy.is_training());
  toy.eval();
  for (const auto& [n, m] : toy.named_modules()) BOOST_TEST(!m->is_training(), n);
  toy.train();
  for (const auto& [n, m] : toy.named_modules()) BOOST_TEST(m->is_training(), n);
  // Eval mode makes the forward deterministic (dropout off).
  toy.eval();
  const Tensor x = normal({5, 4}, 0, 1, gen);
  BOOST_TEST(max_abs_diff(toy.forward(x).value(), toy.forward(x).value()) == 0.0);
}

BOOST_AUTO_TEST_CASE(state_dict_round_trip) {
  Generator g1(10), g2(20);
  Toy a(g1), b(g2);
  a.eval();
  b.eval();
  a.block->steps.mutable_value().fill_(7);
  const Tensor x = normal({2, 4}, 0, 1, g1);
  BOOST_TEST(max_abs_diff(a.forward(x).value(), b.forward(x).value()) > 1e-3);

  const StateDict sd = a.state_dict();
  const std::vector<std::string> keys = {"temperature", "embed.weight", "embed.bias", "blocks.0.scale",
                                         "blocks.0.steps", "blocks.0.fc.weight", "blocks.0.fc.bias",
                                         "norm.weight", "norm.bias"};
  std::vector<std::string> got;
  for (const auto& [k, _] : sd) got.push_back(k);
  BOOST_TEST(got == keys, boost::test_tools::per_element());

  const Variable held = b.embed->weight();  // e.g. an optimizer's handle
  const LoadStateResult r = b.load_state_dict(sd);
  BOOST_TEST(r.missing_keys.empty());
  BOOST_TEST(r.unexpected_keys.empty());
  BOOST_TEST(max_abs_diff(a.forward(x).value(), b.forward(x).value()) == 0.0);
  BOOST_TEST(b.block->steps.value().item() == 7.0);
  // Loaded in place: the handle held before the load sees the new values.
  BOOST_TEST(held.impl() == b.embed->weight().impl());
  BOOST_TEST(max_abs_diff(held.value(), a.embed->weight().value()) == 0.0);
  // ...and they are copies, not aliases of the source.
  Variable(a.embed->weight()).mutable_value().fill_(0.0);
  BOOST_TEST(max_abs_diff(held.value(), a.embed->weight().value()) > 0.0);

  // The std::map overload, with dtype conversion (a float64 dict into a float32 model).
  std::map<std::string, Tensor> m;
  for (const auto& [k, t] : sd) m[k] = is_floating(t.dtype()) ? t.to(kFloat64) : t;
  Toy c(g2);
  c.load_state_dict(m);
  BOOST_TEST((c.embed->weight().dtype() == kFloat32));
  BOOST_TEST(max_abs_diff(c.norm->weight().value(), a.norm->weight().value()) == 0.0);
}

BOOST_AUTO_TEST_CASE(load_state_dict_errors_name_keys_and_shapes) {
  Generator gen(4);
  Toy toy(gen);
  const Tensor before = toy.embed->weight().value().clone();
  auto dict_without = [&](const std::string& key) {
    StateDict sd;
    for (auto& [k, t] : toy.state_dict())
      if (k != key) sd.emplace_back(k, t.clone());
    return sd;
  };

  // Missing key.
  check_error([&] { toy.load_state_dict(dict_without("norm.bias")); }, {"missing keys", "'norm.bias'"});

  // Unexpected key.
  StateDict extra = dict_without("");
  extra.emplace_back("head.weight", Tensor::zeros({2, 2}));
  check_error([&] { toy.load_state_dict(extra); }, {"unexpected keys", "'head.weight'"});

  // Shape mismatch (an error even when not strict); names the key and both shapes.
  StateDict wrong = dict_without("embed.weight");
  wrong.emplace_back("embed.weight", Tensor::ones({4, 3}));
  check_error([&] { toy.load_state_dict(wrong); }, {"'embed.weight'", "[4, 3]", "[3, 4]", "shape mismatch"});
  check_error([&] { toy.load_state_dict(wrong, /*strict=*/false); }, {"'embed.weight'", "[4, 3]", "[3, 4]"});

  // Duplicate keys in the dict.
  StateDict dup = dict_without("");
  dup.emplace_back("norm.bias", Tensor::zeros({3}));
  check_error([&] { toy.load_state_dict(dup); }, {"more than once", "'norm.bias'"});

  // A failed load modifies nothing (the mismatch was found before any copy).
  BOOST_TEST(max_abs_diff(toy.embed->weight().value(), before) == 0.0);

  // Non-strict: the skipped keys are reported, the rest is loaded.
  StateDict partial = dict_without("norm.bias");
  partial.emplace_back("head.weight", Tensor::zeros({2, 2}));
  for (auto& [k, t] : partial)
    if (k == "embed.weight") t.fill_(0.25);
  const LoadStateResult r = toy.load_state_dict(partial, false);
  BOOST_TEST(r.missing_keys == std::vector<std::string>{"norm.bias"}, boost::test_tools::per_element());
  BOOST_TEST(r.unexpected_keys == std::vector<std::string>{"head.weight"}, boost::test_tools::per_element());
  BOOST_TEST(amax(toy.embed->weight().value()).item() == 0.25);
}

BOOST_AUTO_TEST_CASE(zero_grad_drops_every_gradient) {
  Generator gen(5);
  Toy toy(gen);
  sum(toy.forward(normal({2, 4}, 0, 1, gen))).backward();
  for (const auto& [n, p] : toy.named_parameters()) BOOST_TEST(p.grad().defined(), n);
  toy.zero_grad();
  for (const auto& [n, p] : toy.named_parameters()) BOOST_TEST(!p.grad().defined(), n);
}

BOOST_AUTO_TEST_CASE(to_dtype_converts_in_place) {
  Generator gen(6);
  Toy toy(gen);
  const std::vector<Variable> held = toy.parameters();
  sum(toy.forward(normal({2, 4}, 0, 1, gen))).backward();
  const Tensor w32 = toy.embed->weight().value().clone();

  toy.to(kFloat64);
  for (const auto& p : held) {
    BOOST_TEST((p.dtype() == kFloat64));
    BOOST_TEST((p.grad().dtype() == kFloat64));
  }
  BOOST_TEST((toy.block->steps.dtype() == kInt64));  // integer buffers keep their dtype
  BOOST_TEST(max_abs_diff(toy.embed->weight().value().to(kFloat32), w32) == 0.0);
  // The model now runs in float64.
  const Variable y = toy.forward(normal({2, 4}, 0, 1, gen, kFloat64));
  BOOST_TEST((y.dtype() == kFloat64));

  toy.to(kFloat32);
  BOOST_TEST((held[1].dtype() == kFloat32));
  BOOST_TEST(max_abs_diff(toy.embed->weight().value(), w32) == 0.0);
}

BOOST_AUTO_TEST_CASE(to_device) {
  Generator gen(7);
  Linear lin(3, 2, true, gen);
  lin.to(kCPU);  // a no-op on the CPU
  BOOST_TEST(lin.weight().device().is_cpu());
  const Tensor w = lin.weight().value().clone();
  const Device cuda = Device::parse("cuda");
  try {
    lin.to(cuda);
  } catch (const Error& e) {
    // A CPU-only build: the Tensor's clear message, and the module is unchanged.
    BOOST_TEST_MESSAGE("to(cuda): " << e.what());
    BOOST_TEST(std::string(e.what()).find("CUDA") != std::string::npos);
    BOOST_TEST(lin.weight().device().is_cpu());
    return;
  }
  // A CUDA build: the values survive the round trip.
  BOOST_TEST(lin.weight().device().is_cuda());
  lin.to(kCPU);
  BOOST_TEST(max_abs_diff(lin.weight().value(), w) == 0.0);
}

BOOST_AUTO_TEST_CASE(to_string_prints_the_tree) {
  Generator gen(8);
  Sequential seq{std::make_shared<Linear>(4, 3, true, gen), std::make_shared<ReLU>(), std::make_shared<Sine>(30.0)};
  const std::string s = seq.to_string();
  BOOST_TEST_MESSAGE(s);
  BOOST_TEST(s.find("Sequential(") == 0u);
  BOOST_TEST(s.find("(0): Linear(in=4, out=3, bias=true)") != std::string::npos);
  BOOST_TEST(s.find("(1): ReLU()") != std::string::npos);
  BOOST_TEST(s.find("(2): Sine(omega_0=30)") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
