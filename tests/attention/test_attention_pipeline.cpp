// The attention pipeline itself, independent of any real scheme: positions and relative grids,
// offset boxes, the hook registry, the reference implementation against the formula of
// attention_terms.h written out as loops, and the central promise that the reference and the
// fused path agree forward and backward. A probe hook below uses every kind of table at once with
// random parameters, so a mistake in either implementation's plumbing shows up.
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "attention/fused/fused_attention.h"
#include "attention/multi_head_attention.h"
#include "attention/reference_attention.h"
#include "attention/registry.h"
#include "posgrad.h"
#include "tests/module_gradcheck.h"
#include "tests/attention_paths.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_error;
using posgrad::test::check_runs_agree;
using posgrad::test::PathRun;
using posgrad::test::run_path;
using posgrad::test::check_module_gradients;
using posgrad::test::throws_with;

namespace {

// Uses every hook point and every kind of table: rotate, key_range, and attention_terms with
// key_bias, query_table, bias, modulation, positional_modulation and prob_mask.
class ProbeHook : public AttentionHook {
 public:
  ProbeHook(int64_t H, int64_t Dh, const Positions& positions, std::optional<OffsetBox> box, Generator& gen)
      : box_(std::move(box)) {
    const int64_t R = PositionPair(positions).relative_size();
    u_ = register_parameter("u", normal({H, Dh}, 0, 0.5, gen));
    bias_ = register_parameter("bias", normal({H, R}, 0, 0.5, gen));
    table_ = register_parameter("table", normal({H, R, Dh}, 0, 0.3, gen));
    gain_ = register_parameter("gain", uniform({R}, 0.5, 1.5, gen));
    keep_ = register_parameter("keep", uniform({H, R}, 0.2, 1.0, gen));
    positional_gain_ = register_parameter("positional_gain", uniform({H, R}, 0.5, 1.5, gen));
  }
  void rotate(Variable& q, Variable& k, const PositionPair&) override {
    q = q * 1.25;
    k = k - 0.1;
  }
  std::optional<OffsetBox> key_range(const PositionPair&) const override { return box_; }
  AttentionTerms attention_terms(const PositionPair&, DType) override {
    AttentionTerms t;
    t.key_bias = u_ * 0.5;
    t.query_table = table_;
    t.bias = bias_;
    t.modulation = gain_;
    t.positional_modulation = positional_gain_;
    t.prob_mask = keep_;
    return t;
  }
  std::string summary() const override { return "probe"; }

  Variable u_, bias_, table_, gain_, keep_, positional_gain_;

 private:
  std::optional<OffsetBox> box_;
};

void check_paths_agree(const Positions& pos, const OffsetBox& box, bool causal, bool padding, DType dtype, double tol) {
  Generator gen(7);
  const int64_t D = 8, H = 2, B = 2, N = pos.tokens();
  std::vector<std::shared_ptr<AttentionHook>> hooks{std::make_shared<ProbeHook>(H, D / H, pos, box, gen)};
  MultiHeadAttention mha(D, H, gen, hooks);
  mha.to(dtype);
  Tensor x = normal({B, N, D}, 0, 1, gen, dtype);
  Tensor w = normal({B, N, D}, 0, 1, gen, dtype);
  AttentionMasks masks;
  masks.causal = causal;
  if (padding) {
    Tensor pad = Tensor::zeros({B, N}, dtype);
    pad.select(0, 1).narrow(0, N - 2, 2).fill_(1.0);
    masks.key_padding = pad;
  }
  auto forward = [&](const Variable& xv) { return mha.forward(xv, masks, &pos); };
  PathRun ref = run_path(mha, AttentionPath::Reference, x, w, forward);
  BOOST_TEST(!mha.last_forward_fused());
  PathRun fused = run_path(mha, AttentionPath::Fused, x, w, forward);
  BOOST_TEST(mha.last_forward_fused());
  check_runs_agree(mha, ref, fused, tol);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(positions)

BOOST_AUTO_TEST_CASE(grid_coordinates_and_relative_grid) {
  Positions p = Positions::grid({2, 3});
  BOOST_TEST(p.tokens() == 6);
  BOOST_TEST(p.dims() == 2);
  BOOST_TEST((p.coordinates().to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2}));
  BOOST_TEST(PositionPair(p).relative_size() == 3 * 5);
  const auto off = PositionPair(p).relative_offsets().to_vector<int64_t>();
  BOOST_TEST(off[0] == -1);  // entry 0 = (-1, -2)
  BOOST_TEST(off[1] == -2);
  BOOST_TEST(off[2 * 7] == 0);  // entry 7 = (0, 0): the centre
  BOOST_TEST(off[2 * 7 + 1] == 0);
  BOOST_TEST(PositionPair(p).relative_index({0, 0}) == 7);
  BOOST_TEST(PositionPair(p).relative_index({1, 2}) == 14);
  // Dense relative index: entry of (key - query).
  Tensor idx = PositionPair(p).dense_relative_index();
  BOOST_TEST(idx.at<int64_t>({0, 5}) == PositionPair(p).relative_index({1, 2}));
  BOOST_TEST(idx.at<int64_t>({5, 0}) == PositionPair(p).relative_index({-1, -2}));
  BOOST_TEST(idx.at<int64_t>({4, 4}) == 7);
  // Normalised grid: offset / (S - 1).
  Tensor g = PositionPair(p).normalised_relative_grid(kFloat64);
  BOOST_TEST(g.at<double>({0, 0}) == -1.0);
  BOOST_TEST(g.at<double>({0, 1}) == -1.0);
  BOOST_TEST(g.at<double>({14, 1}) == 1.0);
  BOOST_TEST(std::abs(g.at<double>({6, 1}) + 0.5) < 1e-15);  // entry 6 = (0, -1): -1/2
}

BOOST_AUTO_TEST_CASE(sequence_index_map_is_key_minus_query) {
  Positions p = Positions::sequence(5);
  Tensor idx = PositionPair(p).dense_relative_index();
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 5; ++j) BOOST_TEST(idx.at<int64_t>({i, j}) == j - i + 4);
  Tensor x = PositionPair(p).normalised_relative_grid(kFloat64);
  BOOST_TEST(x.at<double>({0, 0}) == -1.0);
  BOOST_TEST(x.at<double>({4, 0}) == 0.0);
  BOOST_TEST(x.at<double>({8, 0}) == 1.0);
}

BOOST_AUTO_TEST_CASE(tree_words_follow_the_intended_heap_mapping) {
  using W = std::vector<int64_t>;
  BOOST_TEST(Positions::tree_word(0, 2) == W{});
  BOOST_TEST(Positions::tree_word(1, 2) == W{});
  BOOST_TEST(Positions::tree_word(2, 2) == (W{0}));
  BOOST_TEST(Positions::tree_word(3, 2) == (W{1}));
  BOOST_TEST(Positions::tree_word(5, 2) == (W{0, 1}));
  BOOST_TEST(Positions::tree_word(7, 2) == (W{1, 1}));
  BOOST_TEST(Positions::tree_word(8, 2) == (W{0, 0, 0}));
  // Ternary: node 1's children are 5, 6, 7 (heap), i.e. nodes 4, 5, 6.
  BOOST_TEST(Positions::tree_word(6, 3) == (W{0, 1}));
  BOOST_TEST(Positions::tree_distance(2, 3, 2) == 2);  // siblings
  BOOST_TEST(Positions::tree_distance(1, 3, 2) == 1);  // root and its right child
  BOOST_TEST(Positions::tree_distance(4, 7, 2) == 4);
  // Depth 16 works; deeper is an error naming the depth.
  const int64_t deep = int64_t(1) << 16;  // heap 2^16 lies at depth 16
  BOOST_TEST(Positions::tree_word(deep, 2).size() == 16u);
  Positions::tree(Tensor::from_vector(std::vector<int64_t>{0, 1, deep}, {3}));
  check_error([&] { Positions::tree(Tensor::from_vector(std::vector<int64_t>{deep * 2}, {1})); }, {"depth 17", "max_depth 16"});
}

BOOST_AUTO_TEST_CASE(errors_name_the_problem) {
  check_error([] { Positions::grid({4, 0}); }, {"structure size", "4x0"});
  check_error([] { Positions::sequence(0); }, {"at least one token"});
  check_error([] { PositionPair(Positions::grid({3})).relative_index({3}); }, {"outside the relative grid"});
  check_error([] { Positions::tree(Tensor::zeros({3}, kFloat32)); }, {"int64"});
  check_error([] { Positions::tree(Tensor::from_vector(std::vector<int64_t>{1, 2}, {2})).structure(); }, {"no grid structure"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(offset_boxes_and_the_reference)

BOOST_AUTO_TEST_CASE(offset_boxes) {
  OffsetBox a{{-3, -1}, {2, 4}}, b{{-1, -5}, {5, 0}};
  OffsetBox c = a.intersect(b);
  BOOST_TEST((c.lo == std::vector<int64_t>{-1, -1}));
  BOOST_TEST((c.hi == std::vector<int64_t>{2, 0}));
  BOOST_TEST(c.volume() == 8);
  BOOST_TEST(OffsetBox({{1}, {0}}).empty());
  BOOST_TEST(OffsetBox::full(Positions::grid({3, 4})).volume() == 5 * 7);
  check_error([&] { a.intersect(OffsetBox{{0}, {1}}); }, {"2-D box with a 1-D box"});
}

BOOST_AUTO_TEST_CASE(box_mask_matches_the_spec_example) {
  // posattn spec section 12: N = 5, span size 3 (half-width 1): the reference's probabilities are
  // zero exactly outside the band.
  Generator gen(2);
  const Tensor q = normal({1, 1, 5, 2}, 0, 1, gen, kFloat64), k = normal({1, 1, 5, 2}, 0, 1, gen, kFloat64);
  Tensor p;
  reference_attention(Variable(q), Variable(k), Variable(k), AttentionTerms{},
                      AttentionSpec{Positions::sequence(5), OffsetBox{{-1}, {1}}, Tensor(), 1.0}, &p);
  const std::vector<double> allowed{1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1};
  const std::vector<double> got = p.to_vector<double>();
  for (size_t e = 0; e < allowed.size(); ++e) BOOST_TEST((got[e] > 0) == (allowed[e] == 1), "entry " << e);
}

// The formula of attention_terms.h written out per (b, h, i, j), against reference_attention:
// every kind of table, a key box, padding, and queries that are the last Nq of the N tokens.
BOOST_AUTO_TEST_CASE(reference_follows_the_formula_of_the_terms) {
  Generator gen(11);
  for (const Positions& pos : {Positions::sequence(7), Positions::grid({3, 4})}) {
    const int64_t B = 2, H = 2, Dh = 3, N = pos.tokens(), R = PositionPair(pos).relative_size();
    for (const int64_t Nq : {N, N - 2}) {
      if (Nq < N && pos.dims() > 1) continue;  // a memory is a sequence
      ProbeHook probe(H, Dh, pos, std::nullopt, gen);
      probe.to(kFloat64);
      AttentionTerms t = probe.attention_terms(pos, kFloat64);
      // The memory's relative grid (offsets -(N-1) .. Nq-1) is the start of the self grid's.
      const PositionPair pair = Nq == N ? PositionPair(pos) : PositionPair::memory(N, Nq);
      for (Variable* table : {&t.query_table, &t.bias, &t.positional_modulation, &t.prob_mask, &t.modulation})
        *table = narrow(*table, table == &t.query_table ? 1 : -1, 0, pair.relative_size());
      const Tensor q = normal({B, H, Nq, Dh}, 0, 1, gen, kFloat64), k = normal({B, H, N, Dh}, 0, 1, gen, kFloat64),
                   v = normal({B, H, N, Dh}, 0, 1, gen, kFloat64);
      Tensor pad = Tensor::zeros({B, N}, kFloat64);
      pad.select(0, 1).narrow(0, 0, 1).fill_(1.0);
      const OffsetBox box = pos.dims() == 1 ? OffsetBox{{-3}, {2}} : OffsetBox{{-1, -2}, {1, 1}};
      const double scale = 0.7;
      Tensor probs;
      const Tensor out = reference_attention(Variable(q), Variable(k), Variable(v), t, AttentionSpec{pair, box, pad, scale},
                                             &probs).value();
      const Tensor rel = PositionPair(pos).dense_relative_index(), offsets = PositionPair(pos).relative_offsets();
      auto at = [](const Variable& x, std::initializer_list<int64_t> i) { return x.value().at<double>(i); };
      double worst_p = 0, worst_o = 0;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i = 0; i < Nq; ++i) {
            const int64_t gi = N - Nq + i;  // the query's token
            std::vector<double> logit(static_cast<size_t>(N)), p(static_cast<size_t>(N));
            std::vector<bool> open(static_cast<size_t>(N));
            double top = -1e300;
            for (int64_t j = 0; j < N; ++j) {
              const int64_t r = rel.at<int64_t>({gi, j});
              std::vector<int64_t> o;
              for (int64_t d = 0; d < pos.dims(); ++d) o.push_back(offsets.at<int64_t>({r, d}));
              double content = 0, positional = at(t.bias, {h, r});
              for (int64_t c = 0; c < Dh; ++c) {
                content += q.at<double>({b, h, i, c}) * k.at<double>({b, h, j, c}) * scale +
                           at(t.key_bias, {h, c}) * k.at<double>({b, h, j, c});
                positional += q.at<double>({b, h, i, c}) * at(t.query_table, {h, r, c});
              }
              logit[size_t(j)] = at(t.modulation, {r}) * (content + at(t.positional_modulation, {h, r}) * positional);
              open[size_t(j)] = box.contains(o) && pad.at<double>({b, j}) == 0;
              if (open[size_t(j)]) top = std::max(top, logit[size_t(j)]);
            }
            double z = 0, masked = 0;
            for (int64_t j = 0; j < N; ++j) z += open[size_t(j)] ? std::exp(logit[size_t(j)] - top) : 0.0;
            for (int64_t j = 0; j < N; ++j) {
              p[size_t(j)] = open[size_t(j)] ? std::exp(logit[size_t(j)] - top) / z : 0.0;
              p[size_t(j)] *= at(t.prob_mask, {h, rel.at<int64_t>({gi, j})});
              masked += p[size_t(j)];
            }
            for (int64_t c = 0; c < Dh; ++c) {
              double o = 0;
              for (int64_t j = 0; j < N; ++j) o += p[size_t(j)] / (masked + 1e-8) * v.at<double>({b, h, j, c});
              worst_o = std::max(worst_o, std::abs(o - out.at<double>({b, h, i, c})));
            }
            for (int64_t j = 0; j < N; ++j)
              worst_p = std::max(worst_p, std::abs(p[size_t(j)] / (masked + 1e-8) - probs.at<double>({b, h, i, j})));
          }
      BOOST_TEST(worst_p < 1e-12, pos.describe() << ", Nq " << Nq << ": probabilities differ by " << worst_p);
      BOOST_TEST(worst_o < 1e-12, pos.describe() << ", Nq " << Nq << ": outputs differ by " << worst_o);
    }
  }
}

// The one escape hatch: a dense factor on the logits runs on the reference only, and the fused
// path names the hook that set it.
BOOST_AUTO_TEST_CASE(dense_modulation_is_reference_only) {
  Generator gen(12);
  const Tensor q = normal({1, 1, 4, 2}, 0, 1, gen, kFloat64);
  AttentionTerms t;
  t.dense_modulation = Tensor::full({1, 1, 4, 4}, 2.0, kFloat64);
  t.dense_modulation_owner = "probe decay";
  const AttentionSpec spec{Positions::sequence(4), std::nullopt, Tensor(), 1.0};
  Tensor doubled, plain;
  reference_attention(Variable(q), Variable(q), Variable(q), t, spec, &doubled);
  reference_attention(Variable(q * 2.0), Variable(q), Variable(q), AttentionTerms{}, spec, &plain);
  BOOST_TEST(max_abs_diff(doubled, plain) < 1e-14);
  BOOST_TEST(t.fused_blocker().find("probe decay") != std::string::npos);
  check_error([&] { fused_attention(Variable(q), Variable(q), Variable(q), t, spec); }, {"fused attention", "probe decay"});
}

// Attention dropout: the layer's own generator drops probabilities in training only (the fused
// path cannot, so a training forward runs the reference), reproducibly from its seed; in
// evaluation the layer is the one without dropout, on either path.
BOOST_AUTO_TEST_CASE(attention_dropout_acts_in_training_only) {
  const Tensor x = [] { Generator g(5); return normal({2, 6, 8}, 0, 1, g, kFloat64); }();
  auto layer = [](double rate) {
    Generator gen(9);
    auto mha = std::make_shared<MultiHeadAttention>(8, 2, gen);
    mha->to(kFloat64);
    mha->set_attention_dropout(rate, 77);
    return mha;
  };
  auto plain = layer(0.0), dropped = layer(0.5), again = layer(0.5);
  BOOST_TEST(plain->attention_dropout() == 0.0);
  BOOST_TEST(dropped->attention_dropout() == 0.5);
  const Tensor y_plain = plain->forward(Variable(x)).value();
  const Tensor y_dropped = dropped->forward(Variable(x)).value();
  BOOST_TEST(!dropped->last_forward_fused());
  BOOST_TEST(max_abs_diff(y_plain, y_dropped) > 1e-3);
  BOOST_TEST(max_abs_diff(y_dropped, again->forward(Variable(x)).value()) == 0.0);
  dropped->eval();
  BOOST_TEST(max_abs_diff(y_plain, dropped->forward(Variable(x)).value()) < 1e-12);
  BOOST_TEST(dropped->last_forward_fused());
  check_error([&] { dropped->set_attention_dropout(0.1, 1); }, {"attention dropout is already set"});
  check_error([&] { layer(1.0); }, {"attention dropout must be in [0, 1)"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(hook_registry)

BOOST_AUTO_TEST_CASE(unknown_names_and_options_are_errors_that_list_valid_ones) {
  Generator gen(1);
  HookContext ctx;
  ctx.width = 8;
  ctx.heads = 2;
  ctx.structure = {5};
  check_error([&] { make_hook(HookSpec{"no_such_scheme", {}}, ctx, gen); }, {"unknown attention hook 'no_such_scheme'", "none"});
  check_error([&] { make_hook(HookSpec{"none", HookOptions{{"colour", "red"}}}, ctx, gen); }, {"none", "unknown option colour"});
  BOOST_TEST(make_hook(HookSpec{"none", {}}, ctx, gen)->summary() == "none");
  const auto names = hook_names();
  BOOST_TEST(std::is_sorted(names.begin(), names.end()));
}

BOOST_AUTO_TEST_CASE(user_hooks_register_and_options_are_typed) {
  register_hook("test_probe", [](const HookContext& c, const HookOptions& o, Generator& g) -> std::shared_ptr<AttentionHook> {
    const int64_t half = o.integer("half", 1);
    (void)o.number("weight", 0.5);
    return std::make_shared<ProbeHook>(c.heads, c.head_width(), Positions::grid(c.structure), OffsetBox{{-half}, {half}}, g);
  }, "probe for tests");
  Generator gen(2);
  HookContext ctx;
  ctx.width = 8;
  ctx.heads = 2;
  ctx.structure = {6};
  auto hook = make_hook(HookSpec{"test_probe", HookOptions{{"half", "2"}}}, ctx, gen);
  BOOST_TEST(hook->key_range(Positions::sequence(6))->hi[0] == 2);
  check_error([&] { make_hook(HookSpec{"test_probe", HookOptions{{"half", "two"}}}, ctx, gen); }, {"test_probe", "'half' must be an integer", "two"});
  check_error([&] { make_hook(HookSpec{"test_probe", HookOptions{{"weight", "1e"}}}, ctx, gen); }, {"'weight' must be a number"});
  BOOST_TEST(hook_description("test_probe") == "probe for tests");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(attention_pipeline)

BOOST_AUTO_TEST_CASE(without_hooks_it_is_textbook_attention) {
  Generator gen(4);
  MultiHeadAttention mha(8, 2, gen);
  Tensor x = normal({2, 5, 8}, 0, 1, gen);
  AttentionMasks masks;
  masks.causal = true;
  Tensor got = mha.forward(Variable(x), masks).value();
  // The same computation spelled out: softmax(q k^T / sqrt(Dh) - inf above the diagonal) v per head.
  auto params = mha.named_parameters();
  auto proj = [&](const std::string& name, const Tensor& in) {
    Tensor w, b;
    for (auto& [n, p] : params) {
      if (n == name + ".weight") w = p.value();
      if (n == name + ".bias") b = p.value();
    }
    return add(matmul(in, w.transpose(0, 1)), b);
  };
  auto heads = [](const Tensor& t) { return t.reshape({2, 5, 2, 4}).permute({0, 2, 1, 3}); };
  const Tensor scores = mul_scalar(matmul(heads(proj("q_proj", x)), heads(proj("k_proj", x)).transpose(2, 3)), 0.5);
  const Tensor future = gt(Tensor::arange(5).reshape({1, 5}), Tensor::arange(5).reshape({5, 1})).to(kFloat32);
  const Tensor o = matmul(softmax(masked_fill(scores, future, -INFINITY), -1), heads(proj("v_proj", x)));
  Tensor expect = proj("out_proj", o.permute({0, 2, 1, 3}).reshape({2, 5, 8}));
  BOOST_TEST(max_abs_diff(got, expect) < 1e-6);
}

BOOST_AUTO_TEST_CASE(reference_and_fused_paths_agree_1d) {
  check_paths_agree(Positions::sequence(23), OffsetBox{{-4}, {3}}, false, false, kFloat32, 2e-5);
  check_paths_agree(Positions::sequence(23), OffsetBox{{-4}, {3}}, true, true, kFloat32, 2e-5);
  check_paths_agree(Positions::sequence(17), OffsetBox{{-30}, {30}}, false, true, kFloat64, 1e-12);
}

BOOST_AUTO_TEST_CASE(reference_and_fused_paths_agree_2d) {
  check_paths_agree(Positions::grid({5, 6}), OffsetBox{{-1, -2}, {2, 1}}, false, false, kFloat32, 2e-5);
  check_paths_agree(Positions::grid({4, 7}), OffsetBox{{-1, -1}, {1, 1}}, false, true, kFloat64, 1e-12);
}

BOOST_AUTO_TEST_CASE(gradcheck_through_both_paths) {
  // Every parameter of the projections and of the probe hook, and the input, against central
  // differences, through the reference and the fused path (2-D grid, key padding).
  for (AttentionPath path : {AttentionPath::Reference, AttentionPath::Fused}) {
    Generator gen(5);
    Positions pos = Positions::grid({3, 3});
    auto hook = std::make_shared<ProbeHook>(2, 2, pos, OffsetBox{{-1, 0}, {1, 1}}, gen);
    MultiHeadAttention mha(4, 2, gen, {hook});
    mha.set_path(path);
    AttentionMasks masks;
    masks.key_padding = Tensor::from_vector(std::vector<double>{0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {2, 9});
    check_module_gradients(mha, normal({2, 9, 4}, 0, 1, gen), [&](const Variable& x) { return mha.forward(x, masks, &pos); });
  }
}

BOOST_AUTO_TEST_CASE(one_rule_chooses_the_path) {
  BOOST_TEST((choose_attention_path(AttentionPath::Auto, "", "layer") == AttentionPath::Fused));
  BOOST_TEST((choose_attention_path(AttentionPath::Auto, "off the CPU", "layer") == AttentionPath::Reference));
  BOOST_TEST((choose_attention_path(AttentionPath::Reference, "", "layer") == AttentionPath::Reference));
  BOOST_TEST((choose_attention_path(AttentionPath::Fused, "", "layer") == AttentionPath::Fused));
  check_error([] { choose_attention_path(AttentionPath::Fused, "off the CPU", "my layer"); },
              {"my layer", "fused attention path cannot run", "off the CPU"});
  for (const std::string& name : attention_path_names())
    BOOST_TEST(attention_path_name(attention_path_from_name(name)) == name);
  check_error([] { attention_path_from_name("fast"); }, {"unknown attention path 'fast'", "auto, reference, fused"});
  // A layer on Auto takes the fused path when the hooks allow it.
  Generator gen(6);
  Positions pos = Positions::sequence(16);
  MultiHeadAttention a(8, 2, gen, {std::make_shared<ProbeHook>(2, 4, pos, OffsetBox{{-4}, {4}}, gen)});
  a.forward(Variable(normal({1, 16, 8}, 0, 1, gen)), {}, &pos);
  BOOST_TEST(a.last_forward_fused());
  BOOST_TEST(a.last_computed_share(pos) < 1.0);
  a.set_path(AttentionPath::Reference);
  a.forward(Variable(normal({1, 16, 8}, 0, 1, gen)), {}, &pos);
  BOOST_TEST(!a.last_forward_fused());
  BOOST_TEST(a.last_computed_share(pos) == 1.0);
}

BOOST_AUTO_TEST_CASE(probabilities_of_a_fused_forward) {
  Generator gen(8);
  Positions pos = Positions::sequence(12);
  auto hook = std::make_shared<ProbeHook>(2, 4, pos, OffsetBox{{-2}, {1}}, gen);
  MultiHeadAttention mha(8, 2, gen, {hook});
  Tensor x = normal({1, 12, 8}, 0, 1, gen);
  mha.set_path(AttentionPath::Reference);
  mha.forward(Variable(x), {}, &pos);
  Tensor ref = mha.last_probs();
  mha.set_path(AttentionPath::Fused);
  mha.forward(Variable(x), {}, &pos);
  BOOST_TEST(mha.last_probs().size(3) == 12);
  BOOST_TEST(max_abs_diff(ref, mha.last_probs()) < 1e-6);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(model_level_hook_helpers)

BOOST_AUTO_TEST_CASE(regularisers_and_after_step_reach_every_hook) {
  Generator gen(9);
  HookContext ctx;
  ctx.width = 8;
  ctx.heads = 2;
  ctx.structure = {16};
  TransformerBlockConfig cfg;
  cfg.width = 8;
  cfg.heads = 2;
  cfg.ff_width = 8;
  auto span0 = make_hook(HookSpec{"adaptive_span", HookOptions{{"max_span", "10"}, {"init", "0.5"}}}, ctx, gen);
  auto span1 = make_hook(HookSpec{"adaptive_span", HookOptions{{"max_span", "10"}, {"init", "0.25"}}}, ctx, gen);
  Sequential model;
  model.add("b0", std::make_shared<TransformerEncoderBlock>(cfg, gen, std::vector<std::shared_ptr<AttentionHook>>{span0}));
  model.add("b1", std::make_shared<TransformerEncoderBlock>(cfg, gen, std::vector<std::shared_ptr<AttentionHook>>{span1}));
  BOOST_TEST(attention_hooks(model).size() == 2u);
  const double expect = span0->regulariser().item() + span1->regulariser().item();
  BOOST_TEST(std::abs(attention_regulariser(model).item() - expect) < 1e-12);
  // Push c out of [0, 1]; after_optimizer_step clamps every hook's c back.
  for (auto& [name, p] : model.named_parameters())
    if (name.size() >= 2 && name.substr(name.size() - 2) == ".c") p.mutable_value().fill_(1.7);
  after_optimizer_step(model);
  for (auto& [name, p] : model.named_parameters())
    if (name.size() >= 2 && name.substr(name.size() - 2) == ".c") BOOST_TEST(amax(p.value()).item() == 1.0);
  Sequential empty;
  BOOST_TEST(!attention_regulariser(empty).defined());
}

BOOST_AUTO_TEST_SUITE_END()
