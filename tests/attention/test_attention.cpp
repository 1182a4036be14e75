// The reference attention's masks, multi-head attention, encoder blocks: masks, gradients, errors.
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "attention/reference_attention.h"
#include "attention/transformer_classifier.h"
#include "posgrad.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::throws_with;

// reference_attention without hooks over sequences, with a layer's masks (the causal one as the
// key box MultiHeadAttention makes of it).
Variable attend(const Variable& q, const Variable& k, const Variable& v, const AttentionMasks& masks = {},
                Tensor* probs = nullptr) {
  const int64_t Nq = q.size(2), N = k.size(2);
  AttentionSpec spec{Nq == N ? PositionPair(Positions::sequence(N))
                             : PositionPair(Positions::sequence(Nq), Positions::sequence(N)),
                     std::nullopt, masks.key_padding, 1.0 / std::sqrt(static_cast<double>(q.size(3)))};
  if (masks.causal) spec.box = OffsetBox{{-(N - 1)}, {0}};
  return reference_attention(q, k, v, AttentionTerms{}, spec, probs);
}

BOOST_AUTO_TEST_SUITE(reference_attention_masks)

BOOST_AUTO_TEST_CASE(causal_mask_blocks_the_future) {
  Generator gen(1);
  Variable q(normal({1, 2, 4, 3}, 0, 1, gen)), k(normal({1, 2, 4, 3}, 0, 1, gen)), v(normal({1, 2, 4, 3}, 0, 1, gen));
  AttentionMasks masks;
  masks.causal = true;
  Tensor probs;
  attend(q, k, v, masks, &probs);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j)
      if (j > i) BOOST_TEST(probs.at<float>({0, 1, i, j}) == 0.0f);
  BOOST_CHECK_CLOSE(sum(probs.select(2, 2), {-1}).to_vector<float>()[0], 1.0f, 1e-4);
  // The first query sees only itself: its output is v[0].
  Variable out = attend(q, k, v, masks);
  BOOST_TEST(max_abs_diff(out.value().narrow(2, 0, 1), v.value().narrow(2, 0, 1)) < 1e-6);
}

BOOST_AUTO_TEST_CASE(padding_mask_ignores_padded_keys_and_fully_masked_rows_are_zero) {
  Generator gen(2);
  Variable q(normal({2, 1, 3, 4}, 0, 1, gen)), k(normal({2, 1, 3, 4}, 0, 1, gen)), v(normal({2, 1, 3, 4}, 0, 1, gen));
  AttentionMasks masks;
  masks.key_padding = Tensor::from_vector({0.f, 0.f, 1.f, 1.f, 1.f, 1.f}, {2, 3});
  Tensor probs;
  Variable out = attend(q, k, v, masks, &probs);
  BOOST_TEST(sum(probs.select(0, 0).select(2, 2)).item() == 0.0);
  BOOST_TEST(sum(abs(out.value().select(0, 1))).item() == 0.0);  // every key padded: zeros, not NaN
  // Changing a padded key's value changes nothing.
  Tensor v2 = v.value().clone();
  v2.select(0, 0).select(1, 2).fill_(100.0);
  Variable out2 = attend(q, k, Variable(v2), masks);
  BOOST_TEST(max_abs_diff(out.value(), out2.value()) < 1e-6);
  masks.key_padding = Tensor::zeros({2, 4});
  BOOST_TEST(throws_with([&] { attend(q, k, v, masks); }, "key_padding must be [B, N]"));
}

BOOST_AUTO_TEST_CASE(attention_gradcheck_with_masks) {
  Generator gen(3);
  const Tensor pad = Tensor::from_vector({0., 0., 0., 1., 0., 1., 0., 0.}, {2, 4}).to(kFloat64);
  auto fn = [pad](const std::vector<Variable>& x) {
    AttentionMasks m;
    m.key_padding = pad;
    m.causal = true;
    return attend(x[0], x[1], x[2], m);
  };
  auto r = gradcheck(fn, {normal({2, 2, 4, 3}, 0, 1, gen, kFloat64), normal({2, 2, 4, 3}, 0, 1, gen, kFloat64),
                          normal({2, 2, 4, 3}, 0, 1, gen, kFloat64)});
  BOOST_TEST(r.ok, r.message);
}

BOOST_AUTO_TEST_CASE(shape_errors_name_the_shapes) {
  Variable q(Tensor::zeros({1, 2, 3, 4})), k(Tensor::zeros({1, 2, 3, 5}));
  BOOST_TEST(throws_with([&] { attend(q, k, k); }, "k, v must be [B, H, N, Dh] and q [B, H, Nq, Dh]"));
  const AttentionSpec spec{PositionPair(Positions::sequence(3))};
  BOOST_TEST(throws_with([&] { reference_attention(Variable(Tensor::zeros({3, 4})), k, k, AttentionTerms{}, spec); },
                         "and q [B, H, Nq, Dh], got q"));
  Variable k6(Tensor::zeros({1, 2, 6, 4}));
  BOOST_TEST(throws_with([&] { reference_attention(q, k6, k6, AttentionTerms{}, spec); },
                         "3 queries and 6 keys, but the positions describe sequence of 3"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(modules)

BOOST_AUTO_TEST_CASE(multi_head_attention_gradcheck_in_float64) {
  Generator gen(4);
  auto mha = std::make_shared<MultiHeadAttention>(8, 2, gen);
  mha->to(kFloat64);
  auto fn = [mha](const std::vector<Variable>& x) { return mha->forward(x[0]); };
  auto r = gradcheck(fn, {normal({2, 3, 8}, 0, 1, gen, kFloat64)});
  BOOST_TEST(r.ok, r.message);
  BOOST_TEST(mha->named_parameters().size() == 8u);
  BOOST_TEST((mha->last_probs().shape() == Shape{2, 2, 3, 3}));
  BOOST_TEST(throws_with([&] { MultiHeadAttention(10, 3, gen); }, "multiple of heads"));
  BOOST_TEST(throws_with([&] { mha->forward(Variable(Tensor::zeros({2, 3, 6}, kFloat64))); }, "[B, N, 8]"));
}

BOOST_AUTO_TEST_CASE(encoder_blocks_gradcheck_pre_and_post_norm) {
  for (bool pre : {true, false}) {
    Generator gen(5);
    TransformerBlockConfig cfg;
    cfg.width = 8;
    cfg.heads = 2;
    cfg.ff_width = 12;
    cfg.pre_norm = pre;
    cfg.activation = pre ? "gelu" : "relu";
    auto block = std::make_shared<TransformerEncoderBlock>(cfg, gen);
    block->to(kFloat64);
    // Gradients with respect to the input (parameters: the next test case).
    auto fn = [block](const std::vector<Variable>& x) { return block->forward(x[0]); };
    auto r = gradcheck(fn, {normal({2, 3, 8}, 0, 1, gen, kFloat64)});
    BOOST_TEST(r.ok, (pre ? "pre-LN: " : "post-LN: ") << r.message);
  }
}

BOOST_AUTO_TEST_CASE(block_parameter_gradients_match_finite_differences) {
  Generator gen(6);
  TransformerBlockConfig cfg;
  cfg.width = 4;
  cfg.heads = 2;
  cfg.ff_width = 6;
  auto block = std::make_shared<TransformerEncoderBlock>(cfg, gen);
  block->to(kFloat64);
  const Tensor x = normal({1, 3, 4}, 0, 1, gen, kFloat64);
  Variable loss = sum(square(block->forward(Variable(x))));
  loss.backward();
  // Central differences on a few entries of every parameter.
  for (auto& [name, p] : block->named_parameters()) {
    double* data = p.mutable_value().data<double>();
    const auto analytic = p.grad().to_vector<double>();
    for (int64_t i = 0; i < std::min<int64_t>(p.numel(), 3); ++i) {
      const double orig = data[i], eps = 1e-6;
      NoGradGuard ng;
      data[i] = orig + eps;
      const double lp = sum(square(block->forward(Variable(x)))).item();
      data[i] = orig - eps;
      const double lm = sum(square(block->forward(Variable(x)))).item();
      data[i] = orig;
      const double numeric = (lp - lm) / (2 * eps);
      BOOST_TEST(std::abs(numeric - analytic[i]) < 1e-6 + 1e-4 * std::abs(numeric), name << "[" << i << "]");
    }
  }
}

// On tree positions (no offsets) a causal mask is by token index: query i sees tokens 0..i, the
// decoder's traversal order. Each row equals the unmasked forward of its own prefix; the fused
// path refuses it by name and `auto` takes the reference.
BOOST_AUTO_TEST_CASE(causal_attention_over_tree_positions_masks_by_token_index) {
  Generator gen(9);
  MultiHeadAttention mha(8, 2, gen);
  mha.to(kFloat64);
  const std::vector<int64_t> heaps{0, 1, 2, 4, 5, 3};  // SOS, then a depth-first order
  const Tensor x = normal({2, 6, 8}, 0, 1, gen, kFloat64);
  const Positions all = Positions::tree(Tensor::from_vector(heaps, {6}));
  AttentionMasks causal;
  causal.causal = true;
  const Tensor out = mha.forward(Variable(x), causal, &all).value();  // [B, N, D]
  BOOST_TEST(!mha.last_forward_fused());
  for (int64_t t = 1; t <= 6; ++t) {
    const Positions prefix = Positions::tree(Tensor::from_vector(std::vector<int64_t>(heaps.begin(), heaps.begin() + t), {t}));
    const Tensor last = mha.forward(Variable(x.narrow(1, 0, t).contiguous()), {}, &prefix).value().narrow(1, t - 1, 1);
    BOOST_TEST(max_abs_diff(last, out.narrow(1, t - 1, 1)) < 1e-12, "row " << t - 1);
  }
  // Without the mask the first row sees later tokens.
  BOOST_TEST(max_abs_diff(mha.forward(Variable(x), {}, &all).value().narrow(1, 0, 1), out.narrow(1, 0, 1)) > 1e-6);
  mha.set_path(AttentionPath::Fused);
  BOOST_TEST(throws_with([&] { mha.forward(Variable(x), causal, &all); }, "a causal mask over tree positions"));
  mha.set_path(AttentionPath::Reference);
  auto fn = [&](const std::vector<Variable>& v) { return mha.forward(v[0], causal, &all); };
  const GradcheckResult r = gradcheck(fn, {normal({1, 6, 8}, 0, 1, gen, kFloat64)});
  BOOST_TEST(r.ok, r.message);
  // A 2-D grid has no causal order.
  const Positions grid = Positions::grid({2, 3});
  BOOST_TEST(throws_with([&] { mha.forward(Variable(x), causal, &grid); }, "1-D sequence positions or tree positions"));
}

BOOST_AUTO_TEST_CASE(classifier_rejects_too_many_tokens) {
  Generator gen(7);
  TransformerClassifierConfig cfg;
  cfg.vocab = 5;
  cfg.max_tokens = 4;
  cfg.classes = 2;
  cfg.layers = 1;
  cfg.block.width = 8;
  cfg.block.heads = 2;
  cfg.block.ff_width = 8;
  TransformerClassifier model(cfg, gen);
  BOOST_TEST((model.forward(Tensor::zeros({3, 4}, kInt64)).shape() == Shape{3, 2}));
  BOOST_TEST(throws_with([&] { model.forward(Tensor::zeros({3, 5}, kInt64)); }, "exceed the position table"));
}

BOOST_AUTO_TEST_SUITE_END()
