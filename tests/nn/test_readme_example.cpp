// The README's training example, checked for what it claims: repeating its step a few hundred
// times learns y = x0 + x1. The README's own copy is compiled and run by the docs test
// (tests/docs/), so a README edit cannot leave a stale example behind; this test has its own copy.
#include <boost/test/unit_test.hpp>

#include "nn/nn.h"
#include "posgrad.h"

using namespace posgrad;

BOOST_AUTO_TEST_CASE(readme_example_trains) {
  Generator gen(0);                                     // Philox: same numbers on every run
  auto model = std::make_shared<MLP>(std::vector<int64_t>{2, 32, 1}, "relu", 0.0, gen);
  AdamW opt(model->parameters(), {.lr = 1e-2});
  Tensor x = normal({64, 2}, 0, 1, gen), y = sum(x, {1}, true);  // learn y = x0 + x1
  Variable loss = mse_loss(model->forward(x), y);
  opt.zero_grad(); loss.backward(); opt.step();         // one training step
  const double first = loss.item();
  for (int i = 0; i < 300; ++i) {
    loss = mse_loss(model->forward(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  BOOST_TEST(loss.item() < 0.05 * first);
}
