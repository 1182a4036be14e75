// The README's positional-attention example, checked for what it computes: the output shape, finite
// values and the span box at init. The README's own copy is compiled and run by the docs test
// (tests/docs/), so a README edit cannot leave a stale example behind; this test has its own copy.
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "posgrad.h"

using namespace posgrad;

BOOST_AUTO_TEST_CASE(readme_positional_example_runs) {
  Generator gen(0);
  HookContext ctx{.width = 64, .heads = 8, .structure = {32, 32}};
  auto siren = make_hook(HookSpec{"siren", {}}, ctx, gen);
  auto span = make_hook(HookSpec{"gaussian_span", HookOptions{{"sigma", "0.3"}, {"threshold", "0.1"}}}, ctx, gen);
  MultiHeadAttention attention(64, 8, gen, {siren, span});
  Positions grid = Positions::grid({32, 32});
  Variable out = attention.forward(normal({2, 1024, 64}, 0, 1, gen), {}, &grid);  // [B, N, D]
  BOOST_TEST((out.value().shape() == Shape{2, 1024, 64}));
  BOOST_TEST(std::isfinite(sum(out.value()).item()));
  // The span box at init is 41 x 41 (posattn spec section 12).
  BOOST_TEST(attention.key_box(grid, false)->volume() == 41 * 41);
}
