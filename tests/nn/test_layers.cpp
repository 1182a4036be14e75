// Layers: forward values and shapes, float64 gradchecks of whole modules (parameters and input),
// default initialisation, dropout statistics and modes, activations, Sequential and MLP.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <functional>
#include <optional>

#include "nn/nn.h"
#include "nn/token_counts.h"
#include "posgrad.h"
#include "tests/module_gradcheck.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_error;
using posgrad::test::check_module_gradients;

namespace {

double variance(const std::vector<float>& v) {
  double m = 0, s = 0;
  for (float x : v) m += x;
  m /= static_cast<double>(v.size());
  for (float x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(layers)

// ------------------------------------------------------------ Linear

BOOST_AUTO_TEST_CASE(linear_forward_any_leading_axes) {
  Generator gen(1);
  Linear lin(4, 3, true, gen);
  BOOST_TEST(lin.weight().shape() == (Shape{3, 4}), boost::test_tools::per_element());
  BOOST_TEST(lin.bias().shape() == (Shape{3}), boost::test_tools::per_element());
  const Tensor x = normal({2, 5, 4}, 0, 1, gen);  // [B, N, in]
  const Tensor y = lin.forward(x).value();
  BOOST_TEST(y.shape() == (Shape{2, 5, 3}), boost::test_tools::per_element());
  // y[b, n, o] = sum_i x[b, n, i] W[o, i] + b[o]
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t n = 0; n < 5; ++n)
      for (int64_t o = 0; o < 3; ++o) {
        double ref = lin.bias().value().at<float>({o});
        for (int64_t i = 0; i < 4; ++i) ref += x.at<float>({b, n, i}) * lin.weight().value().at<float>({o, i});
        BOOST_TEST(std::abs(y.at<float>({b, n, o}) - ref) < 1e-5);
      }
  // A 1-D input [in] -> [out], and a non-contiguous input.
  const Tensor v = x.select(0, 1).select(0, 2);
  BOOST_TEST(max_abs_diff(lin.forward(v).value(), y.select(0, 1).select(0, 2)) < 1e-6);
  const Tensor xt = x.transpose(0, 1);  // [N, B, in], strided
  BOOST_TEST(max_abs_diff(lin.forward(xt).value(), y.transpose(0, 1)) < 1e-6);
}

BOOST_AUTO_TEST_CASE(linear_without_bias_and_errors) {
  Generator gen(2);
  Linear lin(4, 3, false, gen);
  BOOST_TEST(!lin.bias().defined());
  BOOST_TEST(lin.parameters().size() == 1u);
  BOOST_TEST(lin.to_string() == "Linear(in=4, out=3, bias=false)");
  check_error([&] { lin.forward(Tensor::zeros({2, 5})); }, {"float32[2, 5]", "4"});
}

BOOST_AUTO_TEST_CASE(linear_gradcheck) {
  Generator gen(3);
  // The functional form, with a non-contiguous input.
  const GradcheckResult r = gradcheck([](const std::vector<Variable>& v) { return linear(v[0], v[1], v[2]); },
                                      {normal({3, 2, 4}, 0, 1, gen, kFloat64).transpose(0, 1),
                                       normal({5, 4}, 0, 1, gen, kFloat64), normal({5}, 0, 1, gen, kFloat64)});
  BOOST_TEST(r.ok, r.message);
  // The module: weight, bias and input.
  Linear lin(4, 5, true, gen);
  check_module_gradients(lin, normal({2, 3, 4}, 0, 1, gen), [&](const Variable& x) { return lin.forward(x); });
  Linear nobias(4, 2, false, gen);
  check_module_gradients(nobias, normal({3, 4}, 0, 1, gen), [&](const Variable& x) { return nobias.forward(x); });
}

BOOST_AUTO_TEST_CASE(linear_default_init_matches_pytorch) {
  // PyTorch: W ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform, a = sqrt(5)), so var = 1/(3 in);
  // b ~ U(-1/sqrt(in), 1/sqrt(in)).
  Generator gen(4);
  const int64_t in = 256, out = 1024;
  Linear lin(in, out, true, gen);
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  const std::vector<float> w = lin.weight().value().to_vector<float>();
  BOOST_TEST(amax(abs(lin.weight().value())).item() <= bound);
  BOOST_TEST(amax(abs(lin.weight().value())).item() > 0.99 * bound);
  BOOST_TEST(variance(w) == 1.0 / (3.0 * in), boost::test_tools::tolerance(0.02));
  BOOST_TEST(std::abs(mean(lin.weight().value()).item()) < 0.01 * bound);
  BOOST_TEST(amax(abs(lin.bias().value())).item() <= bound);
  BOOST_TEST(variance(lin.bias().value().to_vector<float>()) == 1.0 / (3.0 * in), boost::test_tools::tolerance(0.15));
  // Reproducible from the seed; a different seed differs.
  Generator same(4), other(5);
  BOOST_TEST(max_abs_diff(Linear(in, out, true, same).weight().value(), lin.weight().value()) == 0.0);
  BOOST_TEST(max_abs_diff(Linear(in, out, true, other).weight().value(), lin.weight().value()) > 0.0);
}

// ------------------------------------------------------------ LayerNorm

BOOST_AUTO_TEST_CASE(layer_norm_normalises_the_last_axis) {
  Generator gen(5);
  LayerNorm ln(16);
  BOOST_TEST(ln.to_string() == "LayerNorm(width=16, eps=1e-05, affine=true)");
  BOOST_TEST(ln.weight().value().to_vector<float>() == std::vector<float>(16, 1.0f), boost::test_tools::per_element());
  BOOST_TEST(ln.bias().value().to_vector<float>() == std::vector<float>(16, 0.0f), boost::test_tools::per_element());
  const Tensor x = add_scalar(mul_scalar(normal({2, 3, 16}, 0, 1, gen), 3.0), 5.0);
  const Tensor y = ln.forward(x).value();
  const std::vector<float> m = mean(y, {-1}).to_vector<float>();
  const std::vector<float> v = var(y, {-1}, false, 0).to_vector<float>();
  for (size_t i = 0; i < m.size(); ++i) {
    BOOST_TEST(std::abs(m[i]) < 1e-5);
    BOOST_TEST(v[i] == 1.0, boost::test_tools::tolerance(1e-3));
  }
  // Affine: y' = y * w + b.
  Variable(ln.weight()).mutable_value().fill_(2.0);
  Variable(ln.bias()).mutable_value().fill_(-1.0);
  BOOST_TEST(max_abs_diff(ln.forward(x).value(), add_scalar(mul_scalar(y, 2.0), -1.0)) < 1e-5);
  LayerNorm plain(16, 1e-5, false);
  BOOST_TEST(plain.parameters().empty());
  BOOST_TEST(max_abs_diff(plain.forward(x).value(), y) < 1e-6);
  check_error([&] { ln.forward(Tensor::zeros({2, 8})); }, {"LayerNorm(16)", "float32[2, 8]"});
}

BOOST_AUTO_TEST_CASE(layer_norm_gradcheck) {
  Generator gen(6);
  LayerNorm ln(6);
  // Non-trivial affine parameters, so their gradients are tested meaningfully.
  init::uniform_(Variable(ln.weight()).mutable_value(), 0.5, 1.5, gen);
  init::uniform_(Variable(ln.bias()).mutable_value(), -0.2, 0.2, gen);
  check_module_gradients(ln, normal({2, 3, 6}, 0, 1, gen), [&](const Variable& x) { return ln.forward(x); });
  LayerNorm plain(5, 1e-5, false);
  check_module_gradients(plain, normal({4, 5}, 0, 1, gen), [&](const Variable& x) { return plain.forward(x); });
}

// ------------------------------------------------------------ Embedding

BOOST_AUTO_TEST_CASE(embedding_looks_up_rows) {
  Generator gen(7);
  Embedding emb(10, 4, gen);
  const Tensor idx = Tensor::from_vector<int64_t>({3, 0, 9, 3, 1, 1}, {2, 3});  // [B, N]
  const Variable y = emb.forward(idx);
  BOOST_TEST(y.shape() == (Shape{2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(max_abs_diff(y.value().select(0, 1).select(0, 0), emb.weight().value().select(0, 3)) == 0.0);
  BOOST_TEST(max_abs_diff(y.value().select(0, 0).select(0, 2), emb.weight().value().select(0, 9)) == 0.0);
  // Through the Variable overload (as Sequential calls it), the same rows.
  BOOST_TEST(max_abs_diff(emb.forward(Variable(idx)).value(), y.value()) == 0.0);

  // Gradient: repeated indices accumulate, unused rows get 0.
  sum(y).backward();
  const Tensor g = emb.weight().grad();
  BOOST_TEST(g.at<float>({3, 0}) == 2.0f);
  BOOST_TEST(g.at<float>({1, 2}) == 2.0f);
  BOOST_TEST(g.at<float>({9, 1}) == 1.0f);
  BOOST_TEST(g.at<float>({5, 0}) == 0.0f);

  check_error([&] { emb.forward(Tensor::from_vector<int64_t>({1, 10}, {2})); }, {"Embedding(10, 4)", "index 10", "[0, 10)"});
  check_error([&] { emb.forward(Tensor::from_vector<int64_t>({-1, 2}, {2})); }, {"index -1"});
  check_error([&] { emb.forward(Tensor::zeros({2})); }, {"int64", "float32[2]"});
}

BOOST_AUTO_TEST_CASE(embedding_init_and_gradcheck) {
  Generator gen(8);
  Embedding big(1000, 64, gen);  // PyTorch default: N(0, 1)
  const std::vector<float> w = big.weight().value().to_vector<float>();
  BOOST_TEST(variance(w) == 1.0, boost::test_tools::tolerance(0.02));
  BOOST_TEST(std::abs(mean(big.weight().value()).item()) < 0.01);

  Embedding emb(5, 3, gen);
  const Tensor idx = Tensor::from_vector<int64_t>({4, 0, 4, 2}, {2, 2});
  check_module_gradients(emb, idx, [&](const Variable& i) { return emb.forward(i); });
}

BOOST_AUTO_TEST_CASE(embedding_scale_grad_by_freq_divides_by_counts) {
  Generator gen(9);
  Embedding emb(6, 3, gen);
  emb.set_scale_grad_by_freq(true);
  const Tensor idx = Tensor::from_vector<int64_t>({3, 0, 3, 1, 3, 1}, {2, 3});  // [B, N]: 3 thrice, 1 twice, 0 once
  const Variable y = emb.forward(idx);                                           // [B, N, 3]
  BOOST_TEST(max_abs_diff(y.value(), index_select(emb.weight().value(), 0, idx)) == 0.0);  // the lookup is unchanged
  const Tensor upstream = normal({2, 3, 3}, 0, 1, gen);
  sum(y * Variable(upstream)).backward();
  const Tensor g = emb.weight().grad();
  const auto u = [&](int64_t b, int64_t n, int64_t c) { return upstream.at<float>({b, n, c}); };
  for (int64_t c = 0; c < 3; ++c) {
    BOOST_TEST(g.at<float>({3, c}) == (u(0, 0, c) + u(0, 2, c) + u(1, 1, c)) / 3.0f, boost::test_tools::tolerance(1e-6f));
    BOOST_TEST(g.at<float>({1, c}) == (u(1, 0, c) + u(1, 2, c)) / 2.0f, boost::test_tools::tolerance(1e-6f));
    BOOST_TEST(g.at<float>({0, c}) == u(0, 1, c), boost::test_tools::tolerance(1e-6f));
    BOOST_TEST(g.at<float>({5, c}) == 0.0f);
  }
}

// A data-parallel rank's embedding under a TokenCountsScope of the global batch: the two ranks'
// table gradients (rows 0..1 and 2..4 of a batch of 5, the source and the decoder input looked up
// in turn) sum to the single process's, while without the scope they do not (each rank counts a
// token in its own rows).
BOOST_AUTO_TEST_CASE(embedding_scale_grad_by_freq_counts_in_the_global_batch_of_a_rank) {
  Generator gen(10);
  Embedding emb(7, 3, gen);
  emb.set_scale_grad_by_freq(true);
  const Tensor source = Tensor::from_vector<int64_t>({1, 2, 2, 0, 1, 1, 6, 2, 0, 5, 5, 1, 2, 3, 0}, {5, 3});  // [G, N]
  const Tensor input = Tensor::from_vector<int64_t>({4, 1, 4, 2, 4, 5, 4, 1, 4, 3}, {5, 2});            // [G, T]
  const Tensor up_source = normal({5, 3, 3}, 0, 1, gen), up_input = normal({5, 2, 3}, 0, 1, gen);
  // The table gradient of rows [first, first + count), both lookups.
  const auto table_gradient = [&](int64_t first, int64_t count, bool scoped) {
    emb.zero_grad();
    std::optional<TokenCountsScope> scope;
    if (scoped) scope.emplace(std::vector<Tensor>{source, input}, first);
    const Variable s = emb.forward(source.narrow(0, first, count).contiguous());
    const Variable i = emb.forward(input.narrow(0, first, count).contiguous());
    sum(s * Variable(up_source.narrow(0, first, count).contiguous())).backward();
    sum(i * Variable(up_input.narrow(0, first, count).contiguous())).backward();
    return emb.weight().grad().clone();
  };
  const Tensor whole = table_gradient(0, 5, false);
  const Tensor ranks = table_gradient(0, 2, true) + table_gradient(2, 3, true);
  BOOST_TEST(max_abs_diff(ranks, whole) < 1e-6);
  const Tensor unscoped = table_gradient(0, 2, false) + table_gradient(2, 3, false);
  BOOST_TEST(max_abs_diff(unscoped, whole) > 1e-3);
  // A row of token 4 (5 in the input's 10 lookups): the rank's gradient row is its rows' upstream / 5.
  const Tensor rank1 = table_gradient(2, 3, true);
  for (int64_t c = 0; c < 3; ++c)
    BOOST_TEST(rank1.at<float>({4, c}) ==
                   (up_input.at<float>({2, 0, c}) + up_input.at<float>({3, 0, c}) + up_input.at<float>({4, 0, c})) / 5.0f,
               boost::test_tools::tolerance(1e-5f));
  // Indices that are not the scope's rows are an error naming them.
  TokenCountsScope wrong({source, input}, 1);
  check_error([&] { emb.forward(source.narrow(0, 0, 2).contiguous()); }, {"Embedding", "are not rows 1..2 of any global tensor"});
}

// ------------------------------------------------------------ Dropout

BOOST_AUTO_TEST_CASE(dropout_keeps_the_expectation) {
  const double p = 0.3;
  Dropout drop(p, 123);
  const int64_t n = 200000;
  const Tensor x = Tensor::full({n}, 2.0);
  const Tensor y = drop.forward(x).value();
  const std::vector<float> v = y.to_vector<float>();
  int64_t zeros = 0;
  for (float e : v) {
    if (e == 0.0f) ++zeros;
    else BOOST_REQUIRE(std::abs(e - 2.0f / 0.7f) < 1e-5);  // kept values are scaled by 1/(1-p)
  }
  // Binomial standard errors are ~0.001 (fraction) and ~0.003 (mean); allow ~5 of them.
  BOOST_TEST(static_cast<double>(zeros) / n == p, boost::test_tools::tolerance(0.02));
  BOOST_TEST(mean(y).item() == 2.0, boost::test_tools::tolerance(0.01));

  // The gradient is the same mask.
  Variable xv(x, true);
  Dropout again(p, 123);
  const Variable out = again.forward(xv);
  sum(out).backward();
  BOOST_TEST(max_abs_diff(xv.grad(), mul_scalar(out.value(), 0.5)) < 1e-6);
  BOOST_TEST(max_abs_diff(out.value(), y) == 0.0);  // same seed, same mask
}

BOOST_AUTO_TEST_CASE(dropout_modes_and_edge_cases) {
  Generator gen(9);
  const Tensor x = normal({64, 32}, 0, 1, gen);
  Dropout drop(0.5, 1);
  BOOST_TEST(max_abs_diff(drop.forward(x).value(), x) > 0.0);
  const Tensor a = drop.forward(x).value(), b = drop.forward(x).value();
  BOOST_TEST(max_abs_diff(a, b) > 0.0);  // a fresh mask per call
  drop.eval();
  BOOST_TEST(max_abs_diff(drop.forward(x).value(), x) == 0.0);
  drop.train();
  BOOST_TEST(max_abs_diff(drop.forward(x).value(), x) > 0.0);

  Dropout none(0.0);
  BOOST_TEST(max_abs_diff(none.forward(x).value(), x) == 0.0);
  Dropout all(1.0);
  BOOST_TEST(amax(abs(all.forward(x).value())).item() == 0.0);
  check_error([] { Dropout bad(1.5); }, {"[0, 1]", "1.5"});
  check_error([] { Dropout bad(-0.1); }, {"[0, 1]"});

  // float64 inputs get float64 masks.
  BOOST_TEST((drop.forward(x.to(kFloat64)).dtype() == kFloat64));
  // A shared generator: two modules draw from one stream (one state to checkpoint).
  auto shared = std::make_shared<Generator>(5);
  Dropout d1(0.5, shared), d2(0.5, shared);
  d1.forward(x);
  BOOST_TEST(shared->offset() > 0u);
  const uint64_t after_first = shared->offset();
  d2.forward(x);
  BOOST_TEST(shared->offset() > after_first);
}

// ------------------------------------------------------------ activations

BOOST_AUTO_TEST_CASE(activations_compute_their_functions) {
  const Tensor x = Tensor::from_vector<double>({-1.0, 0.5, 2.0}, {3});
  // Reference GELU values from PyTorch 1.13: F.gelu(torch.tensor([-1., .5, 2.], dtype=float64)).
  const std::vector<double> gelu_ref = {-0.15865525393145702, 0.34573123063700656, 1.9544997361036416};
  const std::vector<double> g = make_activation("gelu")->forward(x).value().to_vector<double>();
  for (size_t i = 0; i < 3; ++i) BOOST_TEST(g[i] == gelu_ref[i], boost::test_tools::tolerance(1e-12));
  auto vals = [&](const std::string& name) { return make_activation(name, 3.0)->forward(x).value().to_vector<double>(); };
  for (size_t i = 0; i < 3; ++i) {
    const double v = x.to_vector<double>()[i];
    BOOST_TEST(vals("relu")[i] == std::max(v, 0.0));
    BOOST_TEST(vals("sigmoid")[i] == 1.0 / (1.0 + std::exp(-v)), boost::test_tools::tolerance(1e-12));
    BOOST_TEST(vals("tanh")[i] == std::tanh(v), boost::test_tools::tolerance(1e-12));
    BOOST_TEST(vals("sine")[i] == std::sin(3.0 * v), boost::test_tools::tolerance(1e-12));
    BOOST_TEST(vals("identity")[i] == v);
  }
  check_error([] { make_activation("swish"); }, {"'swish'", "relu", "sine"});
  BOOST_TEST(Sine(10.0).to_string() == "Sine(omega_0=10)");
}

BOOST_AUTO_TEST_CASE(sine_gradcheck) {
  Generator gen(10);
  for (double omega : {1.0, 30.0}) {
    const GradcheckResult r = gradcheck([omega](const std::vector<Variable>& v) { return sine(v[0], omega); },
                                        {normal({3, 4}, 0, 0.1, gen, kFloat64)});
    BOOST_TEST(r.ok, "omega " << omega << ": " << r.message);
  }
  // A small SIREN-like stack, gradchecked end to end through the modules.
  Sequential net{std::make_shared<Linear>(2, 8, true, gen), std::make_shared<Sine>(10.0),
                 std::make_shared<Linear>(8, 3, true, gen), std::make_shared<Tanh>()};
  check_module_gradients(net, uniform({5, 2}, -1, 1, gen), [&](const Variable& x) { return net.forward(x); });
}

// ------------------------------------------------------------ Sequential and MLP

BOOST_AUTO_TEST_CASE(sequential_runs_children_in_order) {
  Generator gen(11);
  auto l1 = std::make_shared<Linear>(4, 6, true, gen);
  auto l2 = std::make_shared<Linear>(6, 2, true, gen);
  Sequential seq{l1, std::make_shared<ReLU>(), l2};
  seq.add("out", std::make_shared<Sigmoid>());
  const Tensor x = normal({3, 4}, 0, 1, gen);
  const Tensor ref = sigmoid(l2->forward(relu(l1->forward(x))).value());
  BOOST_TEST(max_abs_diff(seq.forward(x).value(), ref) == 0.0);
  BOOST_TEST(seq.size() == 4u);
  BOOST_TEST(seq[2].get() == l2.get());
  std::vector<std::string> names;
  for (const auto& [n, _] : seq.named_parameters()) names.push_back(n);
  BOOST_TEST(names == (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}), boost::test_tools::per_element());
  check_error([&] { seq[4]; }, {"index 4", "size 4"});
}

BOOST_AUTO_TEST_CASE(mlp_layout_and_forward) {
  Generator gen(12);
  MLP mlp({4, 8, 8, 2}, "gelu", 0.1, gen);
  std::vector<std::string> names;
  for (const auto& [n, _] : mlp.named_parameters()) names.push_back(n);
  // Linear, GELU, Dropout per hidden layer, as an nn.Sequential in PyTorch would name them.
  BOOST_TEST(names == (std::vector<std::string>{"0.weight", "0.bias", "3.weight", "3.bias", "6.weight", "6.bias"}),
             boost::test_tools::per_element());
  BOOST_TEST(mlp.num_parameters() == 4 * 8 + 8 + 8 * 8 + 8 + 8 * 2 + 2);
  const Tensor x = normal({5, 3, 4}, 0, 1, gen);
  BOOST_TEST(mlp.forward(x).shape() == (Shape{5, 3, 2}), boost::test_tools::per_element());
  BOOST_TEST(max_abs_diff(mlp.forward(x).value(), mlp.forward(x).value()) > 0.0);  // dropout in training
  mlp.eval();
  BOOST_TEST(max_abs_diff(mlp.forward(x).value(), mlp.forward(x).value()) == 0.0);

  // The posattn output net: Linear -> LayerNorm -> ReLU -> Dropout -> Linear.
  MLPOptions o;
  o.layer_norm = true;
  o.dropout = 0.1;
  MLP head({64, 64, 10}, gen, o);
  BOOST_TEST(head.num_parameters() == 4938);  // posattn spec: "output MLP 4938"
  BOOST_TEST(head[1]->type_name() == "LayerNorm");
  BOOST_TEST(head[2]->type_name() == "ReLU");
  BOOST_TEST(head[3]->type_name() == "Dropout");

  check_error([&] { MLP({4}, "relu", 0.0, gen); }, {"at least"});
  check_error([&] { MLP({4, 2}, "swish", 0.0, gen); }, {"'swish'"});
}

BOOST_AUTO_TEST_CASE(mlp_gradcheck) {
  Generator gen(13);
  MLPOptions o;
  o.activation = "tanh";
  o.layer_norm = true;
  MLP mlp({3, 5, 4, 2}, gen, o);
  check_module_gradients(mlp, normal({4, 3}, 0, 1, gen), [&](const Variable& x) { return mlp.forward(x); });
}

BOOST_AUTO_TEST_SUITE_END()
