// The autograd engine: accumulation, retain_graph, NoGradGuard, detach, deep graphs, errors,
// gradient-ready hooks.
#include <algorithm>

#include <boost/test/unit_test.hpp>

#include "posgrad.h"

using namespace posgrad;

BOOST_AUTO_TEST_SUITE(engine)

BOOST_AUTO_TEST_CASE(gradients_accumulate_across_backward_calls) {
  Variable x(Tensor::from_vector({1.0f, 2.0f, 3.0f}, {3}), true);
  sum(x * x).backward();
  sum(x * x).backward();
  const auto g = x.grad().to_vector<float>();
  BOOST_TEST(g[0] == 4.0f);
  BOOST_TEST(g[2] == 12.0f);
  x.zero_grad();
  BOOST_TEST(!x.grad().defined());
}

BOOST_AUTO_TEST_CASE(shared_subexpressions_sum_their_gradients) {
  Variable x(Tensor::from_vector({2.0f}, {1}), true);
  Variable y = x * x;        // used twice below
  Variable z = sum(y + y * x);  // 2x^2 ... d/dx (x^2 + x^3) = 2x + 3x^2 = 16
  z.backward();
  BOOST_TEST(x.grad().item() == 16.0);
}

BOOST_AUTO_TEST_CASE(retain_graph_allows_a_second_backward) {
  Variable x(Tensor::from_vector({3.0f}, {1}), true);
  Variable y = sum(exp(x));
  y.backward(Tensor(), true);
  y.backward();
  BOOST_CHECK_CLOSE(x.grad().item(), 2.0 * std::exp(3.0), 1e-4);
  BOOST_CHECK_EXCEPTION(y.backward(), Error, [](const Error& e) {
    return std::string(e.what()).find("already freed") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(no_grad_guard_records_nothing) {
  Variable x(Tensor::ones({2}), true);
  Variable y;
  {
    NoGradGuard guard;
    y = x * 2.0;
  }
  BOOST_TEST(!y.requires_grad());
  BOOST_TEST(grad_mode_enabled());
  BOOST_TEST((x * 2.0).requires_grad());
}

BOOST_AUTO_TEST_CASE(detach_cuts_the_graph) {
  Variable x(Tensor::from_vector({2.0f}, {1}), true);
  Variable y = x * x;
  Variable z = sum(y.detach() * x);  // dz/dx = y = 4 (y treated as constant)
  z.backward();
  BOOST_TEST(x.grad().item() == 4.0);
}

BOOST_AUTO_TEST_CASE(deep_graphs_do_not_overflow_the_stack) {
  Variable x(Tensor::from_vector({1.0f}, {1}), true);
  Variable y = x;
  for (int i = 0; i < 200000; ++i) y = y + 1e-6;
  sum(y).backward();
  BOOST_TEST(x.grad().item() == 1.0);
  y = Variable();  // destroying the 200k-node chain must not recurse either
}

BOOST_AUTO_TEST_CASE(retain_grad_keeps_intermediate_gradients) {
  Variable x(Tensor::from_vector({1.0f, 2.0f}, {2}), true);
  Variable h = x * 3.0;
  h.retain_grad();
  sum(h * h).backward();
  const auto g = h.grad().to_vector<float>();
  BOOST_TEST(g[0] == 6.0f);
  BOOST_TEST(g[1] == 12.0f);
}

BOOST_AUTO_TEST_CASE(errors_name_the_problem) {
  Variable x(Tensor::ones({2, 3}), true);
  BOOST_CHECK_EXCEPTION((x * 2.0).backward(), Error, [](const Error& e) {
    return std::string(e.what()).find("not a scalar") != std::string::npos;
  });
  Variable c(Tensor::ones({2}));
  BOOST_CHECK_EXCEPTION(sum(c).backward(), Error, [](const Error& e) {
    return std::string(e.what()).find("does not require a gradient") != std::string::npos;
  });
  BOOST_CHECK_THROW(Variable(Tensor::ones({2}, kInt64)).set_requires_grad(true), Error);
}

BOOST_AUTO_TEST_CASE(backward_through_views_reaches_the_base) {
  Variable x(Tensor::arange(6).to(kFloat32).reshape({2, 3}), true);
  Variable y = sum(select(transpose(x, 0, 1), 0, 2) * 10.0);  // picks x[:, 2]
  y.backward();
  const auto g = x.grad().to_vector<float>();
  BOOST_TEST((g == std::vector<float>{0, 0, 10, 0, 0, 10}));
}

// A leaf used early and late in the graph (w feeds both the first and the last op): its hook
// runs once per backward, after its last contribution, and sees the final gradient; the hook of
// a leaf used only at the end of the forward (b) runs before the one used at its start (a).
BOOST_AUTO_TEST_CASE(grad_ready_hook_runs_once_when_the_gradient_is_final) {
  Variable a(Tensor::from_vector(std::vector<double>{1.0, 2.0}, {2}), true), w(Tensor::from_vector(std::vector<double>{3.0, -1.0}, {2}), true),
      b(Tensor::from_vector(std::vector<double>{0.5, 0.25}, {2}), true);
  std::vector<std::string> ready;
  std::vector<double> w_grad_when_ready;
  a.set_grad_ready_hook([&] { ready.push_back("a"); });
  b.set_grad_ready_hook([&] { ready.push_back("b"); });
  w.set_grad_ready_hook([&] {
    ready.push_back("w");
    w_grad_when_ready = w.grad().to_vector<double>();
  });
  auto forward = [&] { return sum(tanh(tanh(a * w) * w + b) * b); };
  forward().backward();
  BOOST_TEST(ready.size() == 3u);
  BOOST_TEST(std::count(ready.begin(), ready.end(), "w") == 1);
  BOOST_TEST((std::find(ready.begin(), ready.end(), "b") < std::find(ready.begin(), ready.end(), "a")));
  BOOST_TEST(w_grad_when_ready == w.grad().to_vector<double>(), boost::test_tools::per_element());
  // The same gradient as a backward without hooks, and the hooks run again on the next backward.
  Variable w2(w.value(), true);
  sum(tanh(tanh(a.detach() * w2) * w2 + b.detach()) * b.detach()).backward();
  BOOST_TEST(w.grad().to_vector<double>() == w2.grad().to_vector<double>(), boost::test_tools::per_element());
  forward().backward();
  BOOST_TEST(ready.size() == 6u);
  w.set_grad_ready_hook(nullptr);
  forward().backward();
  BOOST_TEST(ready.size() == 8u);  // a and b only
}

// A leaf whose only path carries no gradient (an op that returns none for that input) is final
// all the same: its hook runs, with no gradient; a leaf the graph does not reach gets no call,
// and a hook on the variable backward() starts from runs after its seed.
BOOST_AUTO_TEST_CASE(grad_ready_hook_runs_for_leaves_that_get_no_gradient) {
  Variable x(Tensor::from_vector(std::vector<double>{1.0, 2.0}, {2}), true), y(Tensor::from_vector(std::vector<double>{3.0, 4.0}, {2}), true),
      unused(Tensor::ones({1}, kFloat64), true);
  int x_calls = 0, y_calls = 0, unused_calls = 0;
  x.set_grad_ready_hook([&] { ++x_calls; });
  y.set_grad_ready_hook([&] { ++y_calls; });
  unused.set_grad_ready_hook([&] { ++unused_calls; });
  Variable blocked = record("stop_gradient", (x * 2.0).value(), {x * 2.0},
                            [](const Tensor&, const std::vector<bool>&) { return std::vector<Tensor>{Tensor()}; });
  sum(blocked + y).backward();
  BOOST_TEST(x_calls == 1);
  BOOST_TEST(!x.grad().defined());
  BOOST_TEST(y_calls == 1);
  BOOST_TEST(unused_calls == 0);
  unused.backward(Tensor::ones({1}, kFloat64));
  BOOST_TEST(unused_calls == 1);
  BOOST_CHECK_EXCEPTION((x * 2.0).set_grad_ready_hook([] {}), Error, [](const Error& e) {
    return std::string(e.what()).find("non-leaf") != std::string::npos;
  });
}

BOOST_AUTO_TEST_SUITE_END()
