// Every registered hook changes the model it is given: for each name in hook_names() (built-ins
// and any hook a test registered before), the model built with that scheme and the same model
// built with `none` (the weights they share copied over) must give different logits. This is
// the test that catches a scheme that is registered but never reached by the model, as the
// absolute schemes once were (a PosattnClassifier with `sinusoidal` gave the logits of `none`).
//
// Each scheme runs in the smallest model that accepts it, on the structure it needs: a 1-D
// PosattnClassifier (12 tokens) by default, a 2-D one (3 x 4 grid) for ape_grid, and one
// attention layer on tree positions for ape_tree (PosattnClassifier has no tree input), the
// embeddings on tree positions for tree_sq (an absolute scheme of heap positions).
// Options are chosen so that every hook bites at initialisation; none is left out except `none`
// itself, the baseline.
#include <boost/test/unit_test.hpp>

#include <map>
#include <string>

#include "attention/multi_head_attention.h"
#include "attention/posattn_classifier.h"
#include "attention/registry.h"
#include "posgrad.h"

using namespace posgrad;

namespace {

enum class Structure { Sequence, Grid, Tree };

struct Arm {
  std::map<std::string, std::string> options;
  Structure structure = Structure::Sequence;
};

// Schemes that need a structure or options other than the defaults, and why.
const std::map<std::string, Arm> kArms = {
    // The default radius (16) covers all 12 tokens, which would leave attention unchanged by
    // construction: radius 1 blocks most keys.
    {"local_window", {{{"radius", "1"}}, Structure::Sequence}},
    {"ape_grid", {{}, Structure::Grid}},  // one generator per grid axis: grid positions only
    {"ape_tree", {{}, Structure::Tree}},  // tree (heap) positions only
    {"tree_sq", {{{"max_depth", "2"}}, Structure::Tree}},  // heap positions; 2 levels x 2 branches fit the width 8
};

constexpr int64_t kWidth = 8, kHeads = 2;

PosattnClassifierConfig small_classifier(const std::string& positional, const std::map<std::string, std::string>& options,
                                         int64_t dims) {
  PosattnClassifierConfig c;
  c.width = kWidth;
  c.heads = kHeads;
  c.layers = 2;
  c.ff_width = 16;
  c.output_hidden = 8;
  c.classes = 5;
  c.dropout = 0.0;
  c.structure = {3, 4};
  c.dims = dims;
  c.positional = positional;
  c.positional_options = options;
  return c;
}

// max |logits(scheme) - logits(none)| for the classifier; the none model's weights (every one
// of which the scheme model also has) are loaded into the scheme model.
double classifier_effect(const std::string& name, const Arm& arm) {
  const int64_t dims = arm.structure == Structure::Grid ? 2 : 1;
  Generator gen_none(7), gen_scheme(7), data(8);
  PosattnClassifier none(small_classifier("none", {}, dims), gen_none);
  PosattnClassifier scheme(small_classifier(name, arm.options, dims), gen_scheme);
  const LoadStateResult loaded = scheme.load_state_dict(none.state_dict(), /*strict=*/false);
  BOOST_TEST(loaded.unexpected_keys.empty(), name << ": the none model has weights the scheme model lacks");
  none.eval();
  scheme.eval();
  const Variable images(uniform({2, 3, 4, 3}, -1, 1, data));
  return max_abs_diff(scheme.forward(images).value(), none.forward(images).value());
}

// max |out(scheme) - out(none)| for one attention layer on tree positions (same projections).
double tree_layer_effect(const std::string& name, const Arm& arm) {
  const Positions tree = Positions::tree(Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}, {7}));
  const HookContext context{.width = kWidth, .heads = kHeads, .structure = {}};
  Generator gen(9), data(10);
  const auto hook = make_hook(HookSpec{name, HookOptions(arm.options)}, context, gen);
  if (auto absolute = std::dynamic_pointer_cast<AbsoluteEncoding>(hook)) {  // tree_sq: on the embeddings
    const Variable x(normal({2, tree.tokens(), kWidth}, 0, 1, data));
    return max_abs_diff(absolute->embed(x, tree).value(), x.value());
  }
  MultiHeadAttention none(kWidth, kHeads, gen, {make_hook(HookSpec{"none", {}}, context, gen)});
  MultiHeadAttention scheme(kWidth, kHeads, gen, {hook});
  scheme.load_state_dict(none.state_dict(), /*strict=*/false);
  const Variable x(normal({2, tree.tokens(), kWidth}, 0, 1, data));
  return max_abs_diff(scheme.forward(x, {}, &tree).value(), none.forward(x, {}, &tree).value());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(every_scheme_acts)

BOOST_AUTO_TEST_CASE(every_registered_hook_changes_the_output_compared_with_none) {
  const std::vector<std::string> names = hook_names();
  BOOST_TEST(names.size() >= 16u);  // the built-ins at least
  for (const std::string& name : names) {
    if (name == "none") continue;  // the baseline every other hook is compared with
    const auto it = kArms.find(name);
    const Arm arm = it == kArms.end() ? Arm{} : it->second;
    const double effect = arm.structure == Structure::Tree ? tree_layer_effect(name, arm) : classifier_effect(name, arm);
    BOOST_TEST_MESSAGE(name << ": max |output - output with none| = " << effect);
    BOOST_TEST(effect > 1e-4, name << " leaves the output unchanged compared with none (max |diff| " << effect << ")");
  }
}

BOOST_AUTO_TEST_SUITE_END()
