// The algebraic positional encodings (ape, ape_grid, ape_tree): gradients through
// MultiHeadAttention for the generators and the input, relative invariance under shifts of all
// positions, the RoPE-like init against its closed-form block rotations, tree cancellation with
// explicit matrices (intended and released mappings), the decay factors of every variant, the
// heap -> word mappings of the spec, 16-deep trees, the reference path against the fused
// path, option errors, and the PyTorch golden files of tools/golden_ape.py.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "attention/multi_head_attention.h"
#include "attention/registry.h"
#include "attention/schemes/ape_grid.h"
#include "attention/schemes/ape_sequence.h"
#include "attention/schemes/ape_tree.h"
#include "nn/adam.h"
#include "nn/safetensors.h"
#include "posgrad.h"
#include "tests/module_gradcheck.h"
#include "tests/attention_pairs.h"
#include "tests/attention_paths.h"
#include "tests/golden_compare.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_runs_agree;
using posgrad::test::PathRun;
using posgrad::test::run_path;
using posgrad::test::check_error;
using posgrad::test::check_module_gradients;
namespace bdata = boost::unit_test::data;

// The file's helpers and suites in a namespace of their own: test_schemes_basic.cpp, in the same
// unity batch (cmake/build_speed.cmake), has a build() helper of the same name.
namespace ape_tests {
namespace {

std::shared_ptr<AttentionHook> build(const std::string& name, std::map<std::string, std::string> options, int64_t D,
                                     int64_t H, std::vector<int64_t> structure, Generator& gen) {
  return make_hook(HookSpec{name, HookOptions(std::move(options))},
                   HookContext{.width = D, .heads = H, .structure = std::move(structure)}, gen);
}

// Replaces every APE generator parameter of `m` by N(0, stddev^2) entries (dense, generic W).
void randomise_generators(Module& m, Generator& gen, double stddev = 0.4) {
  for (auto& [name, p] : m.named_parameters())
    if (name.size() >= 21 && name.compare(name.size() - 21, 21, "orthogonal.generators") == 0)
      p.mutable_value() = normal(p.shape(), 0.0, stddev, gen, p.dtype());
}

Tensor matrix(const Tensor& t) { return t.contiguous(); }
Tensor mm(const Tensor& a, const Tensor& b) { return matmul(a, b); }
Tensor tr(const Tensor& a) { return a.transpose(-1, -2).contiguous(); }

// Scores q~ . k~ [B, H, N, N] after the hook's rotate.
Tensor rotated_scores(AttentionHook& hook, const Tensor& q, const Tensor& k, const Positions& pos) {
  Variable qv(q), kv(k);
  hook.rotate(qv, kv, pos);
  return matmul(qv.value(), kv.value().transpose(-1, -2));
}

// t_j = 10000^(-2 floor(j/2) / n), n = d / 2: the RoPE-like angles of the spec (duplicated).
double rope_like_angle(int64_t d, int64_t j) {
  return std::pow(10000.0, -2.0 * static_cast<double>(j / 2) / static_cast<double>(d / 2));
}

// The closed-form RoPE-like rotation of the spec: block j of W^p is [[cos p t_j, sin p t_j],
// [-sin p t_j, cos p t_j]]. `as_float`: the angles rounded to float32, as the parameter stores them.
Tensor rope_like_power(int64_t d, int64_t p, bool as_float = false) {
  const int64_t n = d / 2;
  std::vector<double> w(static_cast<size_t>(d * d), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    const double exact = rope_like_angle(d, j);
    const double theta = as_float ? static_cast<double>(static_cast<float>(exact)) : exact;
    const double c = std::cos(static_cast<double>(p) * theta), s = std::sin(static_cast<double>(p) * theta);
    const int64_t a = 2 * j, b = 2 * j + 1;
    w[static_cast<size_t>(a * d + a)] = c;
    w[static_cast<size_t>(a * d + b)] = s;
    w[static_cast<size_t>(b * d + a)] = -s;
    w[static_cast<size_t>(b * d + b)] = c;
  }
  return Tensor::from_vector(w, {d, d});
}

// The factor a hook's terms put on the logits of every (query, key) pair: [1, H|1, N, N] from a
// modulation table, or the tree's dense modulation [B|1, 1, N, N].
Tensor decay_of(AttentionHook& hook, const Positions& pos) {
  const AttentionTerms t = hook.attention_terms(pos, kFloat64);
  const int64_t N = pos.tokens();
  if (t.dense_modulation.defined()) return t.dense_modulation;
  if (!t.modulation.defined()) return Tensor::ones({1, 1, N, N}, kFloat64);
  const Tensor m = posgrad::test::on_pairs(t.modulation, pos);
  return m.reshape({1, m.numel() / (N * N), N, N});
}

// A hook that only narrows the keys to a box (so the fused path skips keys).
class BoxHook : public AttentionHook {
 public:
  explicit BoxHook(OffsetBox box) : box_(std::move(box)) {}
  std::optional<OffsetBox> key_range(const PositionPair&) const override { return box_; }
  std::string summary() const override { return "box"; }

 private:
  OffsetBox box_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(ape)

BOOST_AUTO_TEST_CASE(registry_builds_every_variant_and_rejects_bad_options) {
  Generator gen(1);
  for (const char* name : {"ape", "ape_grid", "ape_tree"}) {
    auto hook = build(name, {}, 16, 2, {}, gen);
    BOOST_TEST_MESSAGE(hook->summary());
    BOOST_TEST(hook->summary().find(name) == 0);
    // One generator parameter: ape [H, Dh, Dh], ape_grid [2H, Dh/2, Dh/2], ape_tree [kappa H, Dh, Dh].
    const auto params = hook->named_parameters();
    BOOST_REQUIRE(params.size() == 1u);
    BOOST_TEST(params[0].first == "orthogonal.generators");
  }
  BOOST_TEST((build("ape", {}, 16, 2, {}, gen)->named_parameters()[0].second.shape() == Shape{2, 8, 8}));
  BOOST_TEST((build("ape_grid", {}, 16, 2, {3, 3}, gen)->named_parameters()[0].second.shape() == Shape{4, 4, 4}));
  BOOST_TEST((build("ape_grid", {{"axes", "4"}}, 16, 2, {}, gen)->named_parameters()[0].second.shape() == Shape{8, 2, 2}));
  BOOST_TEST((build("ape_tree", {}, 16, 2, {}, gen)->named_parameters()[0].second.shape() == Shape{4, 8, 8}));
  BOOST_TEST((build("ape_tree", {{"shared_heads", "true"}, {"branching", "3"}}, 16, 2, {}, gen)
                  ->named_parameters()[0].second.shape() == Shape{3, 8, 8}));

  check_error([&] { build("ape_grid", {{"axes", "3"}}, 16, 2, {}, gen); }, {"ape_grid", "divisible", "3"});
  check_error([&] { build("ape", {{"init", "rope"}}, 16, 2, {}, gen); }, {"init", "rope_like", "near_identity"});
  check_error([&] { build("ape", {{"decay", "1.5"}}, 16, 2, {}, gen); }, {"decay", "[0, 1]"});
  check_error([&] { build("ape", {{"mapping", "released"}}, 16, 2, {}, gen); }, {"unknown option", "mapping"});
  check_error([&] { build("ape_tree", {{"mapping", "off_by_one"}}, 16, 2, {}, gen); }, {"mapping", "intended", "released"});
  check_error([&] { build("ape_tree", {{"decay_distance", "x"}}, 16, 2, {}, gen); }, {"decay_distance"});
}

BOOST_AUTO_TEST_CASE(variants_reject_the_wrong_positions) {
  Generator gen(2);
  auto seq = build("ape", {}, 8, 2, {}, gen);
  auto grid = build("ape_grid", {}, 8, 2, {}, gen);
  auto tree = build("ape_tree", {}, 8, 2, {}, gen);
  Variable q(normal({1, 2, 4, 4}, 0, 1, gen)), k(normal({1, 2, 4, 4}, 0, 1, gen));
  const Positions heap = Positions::tree(Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3}, {4}));
  const Positions ternary = Positions::tree(Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3}, {4}), 3);
  check_error([&] { seq->rotate(q, k, heap); }, {"ape", "ape_tree"});
  check_error([&] { grid->rotate(q, k, heap); }, {"ape_grid", "tree"});
  check_error([&] { grid->rotate(q, k, Positions::sequence(4)); }, {"ape_grid", "2 axes"});
  check_error([&] { tree->rotate(q, k, Positions::sequence(4)); }, {"ape_tree", "tree positions"});
  check_error([&] { tree->rotate(q, k, ternary); }, {"branching factor 2", "3"});
  Variable wrong(normal({1, 3, 4, 4}, 0, 1, gen));
  check_error([&] { seq->rotate(wrong, k, Positions::sequence(4)); }, {"ape", "H = 2"});
}

BOOST_AUTO_TEST_CASE(rope_like_init_equals_the_closed_form_block_rotations) {
  Generator gen(3);
  const int64_t H = 2, Dh = 8, N = 12;
  ApeSequence hook(H, Dh, ApeSettings{}, gen);  // rope_like is the default
  hook.to(kFloat64);
  // A holds the angles (float32 parameter): A[2j, 2j+1] = t_j, zeros elsewhere.
  const Tensor A = hook.generators().generators().value();  // [H, Dh, Dh]
  for (int64_t j = 0; j < Dh / 2; ++j)
    BOOST_TEST(A.at<double>({1, 2 * j, 2 * j + 1}) == static_cast<double>(static_cast<float>(rope_like_angle(Dh, j))));
  BOOST_TEST(sum(abs(A)).item() == sum(abs(A.narrow(0, 0, 1))).item() * H);
  const Tensor W = hook.generators().matrices().value();  // [H, Dh, Dh]
  const Tensor maps = hook.token_maps(Positions::sequence(N)).value();  // [H, N, Dh, Dh]
  double worst_w = 0, worst_power = 0, worst_orth = 0, worst_exact = 0;
  for (int64_t h = 0; h < H; ++h) {
    worst_w = std::max(worst_w, max_abs_diff(W.select(0, h), rope_like_power(Dh, 1, true)));
    for (int64_t p = 0; p < N; ++p) {
      const Tensor m = maps.select(0, h).select(0, p);
      worst_power = std::max(worst_power, max_abs_diff(m, rope_like_power(Dh, p, true)));
      worst_exact = std::max(worst_exact, max_abs_diff(m, rope_like_power(Dh, p)));
      worst_orth = std::max(worst_orth, max_abs_diff(mm(tr(m), m), rope_like_power(Dh, 0)));
    }
  }
  BOOST_TEST_MESSAGE("rope_like: |W - closed form| " << worst_w << ", |W^p - closed form| " << worst_power
                                                     << ", |W^pT W^p - I| " << worst_orth
                                                     << ", |W^p - exact-angle form| " << worst_exact);
  BOOST_TEST(worst_w < 1e-14);
  BOOST_TEST(worst_power < 1e-12);
  BOOST_TEST(worst_orth < 1e-13);
  BOOST_TEST(worst_exact < 1e-8);  // only the float32 rounding of the angles (p <= 11)
  // The frequencies are duplicated: blocks 0 and 1 share theta = 1, blocks 2 and 3 theta = 0.01.
  BOOST_TEST(std::abs(W.at<double>({0, 0, 1}) - std::sin(1.0)) < 1e-9);
  BOOST_TEST(std::abs(W.at<double>({0, 2, 3}) - std::sin(1.0)) < 1e-9);
  BOOST_TEST(std::abs(W.at<double>({0, 4, 5}) - std::sin(0.01)) < 1e-9);
  BOOST_TEST(std::abs(W.at<double>({0, 6, 7}) - std::sin(0.01)) < 1e-9);
}

BOOST_AUTO_TEST_CASE(doubling_table_matches_repeated_products_and_grid_direct_sum) {
  Generator gen(4);
  const int64_t H = 2, Dh = 4, N = 11;
  ApeSequence seq(H, Dh, ApeSettings{GeneratorInit::Normal}, gen);
  seq.to(kFloat64);
  randomise_generators(seq, gen);
  const Tensor W = seq.generators().matrices().value();
  const Tensor maps = seq.token_maps(Positions::sequence(N)).value();
  double worst = 0;
  for (int64_t h = 0; h < H; ++h) {
    Tensor p = rope_like_power(Dh, 0);
    for (int64_t t = 0; t < N; ++t) {
      worst = std::max(worst, max_abs_diff(maps.select(0, h).select(0, t), p));
      p = mm(p, W.select(0, h));
    }
  }
  BOOST_TEST(worst < 1e-12);

  // Grid: token (r, c) maps the first Dh/2 features with W_0^r, the rest with W_1^c.
  ApeGrid grid(H, Dh, 2, ApeSettings{GeneratorInit::Normal}, gen);
  grid.to(kFloat64);
  randomise_generators(grid, gen);
  const Positions pos = Positions::grid({3, 4});
  const Tensor G = grid.generators().matrices().value();  // [2H, 2, 2]
  const auto axis = grid.axis_maps(pos);                  // 2 x [H, N, 2, 2]
  Tensor q = normal({1, H, 12, Dh}, 0, 1, gen, kFloat64);
  Variable qv(q), kv(q);
  grid.rotate(qv, kv, pos);
  double worst_grid = 0;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t t = 0; t < 12; ++t) {
      const int64_t r = t / 4, c = t % 4;
      Tensor a = rope_like_power(2, 0), b = rope_like_power(2, 0);
      for (int64_t i = 0; i < r; ++i) a = mm(a, G.select(0, h));
      for (int64_t i = 0; i < c; ++i) b = mm(b, G.select(0, H + h));
      worst_grid = std::max(worst_grid, max_abs_diff(axis[0].value().select(0, h).select(0, t), a));
      worst_grid = std::max(worst_grid, max_abs_diff(axis[1].value().select(0, h).select(0, t), b));
      const Tensor x = q.select(0, 0).select(0, h).select(0, t);  // [Dh]
      const Tensor expect = cat(std::vector<Tensor>{mm(a, x.narrow(0, 0, 2).reshape({2, 1})), mm(b, x.narrow(0, 2, 2).reshape({2, 1}))}, 0);
      worst_grid = std::max(worst_grid, max_abs_diff(qv.value().select(0, 0).select(0, h).select(0, t), expect.reshape({Dh})));
    }
  BOOST_TEST(worst_grid < 1e-12);
}

BOOST_AUTO_TEST_CASE(sequence_scores_are_invariant_to_a_shift_of_all_positions) {
  Generator gen(5);
  const int64_t B = 2, H = 2, Dh = 4, N = 5;
  auto hook = build("ape", {{"decay", "1"}, {"init", "normal"}}, H * Dh, H, {}, gen);
  hook->to(kFloat64);
  randomise_generators(*hook, gen);
  const Tensor q = normal({B, H, N, Dh}, 0, 1, gen, kFloat64), k = normal({B, H, N, Dh}, 0, 1, gen, kFloat64);
  const Tensor base = rotated_scores(*hook, q, k, Positions::sequence(N));
  for (int64_t s : {1, 3, 7}) {
    // The same contents at positions s..s+N-1 of a longer sequence.
    const Tensor pad_q = normal({B, H, s, Dh}, 0, 1, gen, kFloat64), pad_k = normal({B, H, s, Dh}, 0, 1, gen, kFloat64);
    const Tensor shifted = rotated_scores(*hook, cat(std::vector<Tensor>{pad_q, q}, 2), cat(std::vector<Tensor>{pad_k, k}, 2), Positions::sequence(N + s));
    const double diff = max_abs_diff(shifted.narrow(2, s, N).narrow(3, s, N), base);
    BOOST_TEST(diff < 1e-12, "shift " << s << ": scores differ by " << diff);
  }
  // Not trivially invariant: the scores do depend on the relative offset.
  BOOST_TEST(max_abs_diff(rotated_scores(*hook, q, k, Positions::sequence(N)), matmul(q, k.transpose(-1, -2))) > 1e-3);
}

BOOST_AUTO_TEST_CASE(grid_scores_are_invariant_to_a_shift_of_both_axes) {
  Generator gen(6);
  const int64_t B = 1, H = 2, Dh = 4;
  auto hook = build("ape_grid", {{"decay", "0"}, {"init", "normal"}}, H * Dh, H, {3, 3}, gen);
  hook->to(kFloat64);
  randomise_generators(*hook, gen);
  const Tensor q = normal({B, H, 9, Dh}, 0, 1, gen, kFloat64), k = normal({B, H, 9, Dh}, 0, 1, gen, kFloat64);
  const Tensor base = rotated_scores(*hook, q, k, Positions::grid({3, 3}));
  for (auto [s0, s1] : {std::pair<int64_t, int64_t>{1, 2}, {2, 0}, {3, 1}}) {
    const int64_t rows = 3 + s0, cols = 3 + s1, M = rows * cols;
    // Token (r, c) of the 3x3 grid sits at (r + s0, c + s1); every other cell holds noise.
    Tensor big_q = normal({B, H, M, Dh}, 0, 1, gen, kFloat64), big_k = normal({B, H, M, Dh}, 0, 1, gen, kFloat64);
    std::vector<int64_t> where;
    for (int64_t t = 0; t < 9; ++t) where.push_back((t / 3 + s0) * cols + t % 3 + s1);
    for (int64_t t = 0; t < 9; ++t) {
      big_q.narrow(2, where[static_cast<size_t>(t)], 1).copy_(q.narrow(2, t, 1));
      big_k.narrow(2, where[static_cast<size_t>(t)], 1).copy_(k.narrow(2, t, 1));
    }
    const Tensor shifted = rotated_scores(*hook, big_q, big_k, Positions::grid({rows, cols}));
    const Tensor index = Tensor::from_vector(where, {9});
    const Tensor picked = index_select(index_select(shifted, 2, index), 3, index);
    const double diff = max_abs_diff(picked, base);
    BOOST_TEST(diff < 1e-12, "shift (" << s0 << ", " << s1 << "): scores differ by " << diff);
  }
}

BOOST_AUTO_TEST_CASE(heap_positions_map_to_the_words_of_the_spec) {
  using W = std::vector<int64_t>;
  // Intended: heap p is the 0-indexed node p - 1; 0 (SOS / padding) and the root are the identity.
  BOOST_TEST((ape_tree_word(0, 2, TreeMapping::Intended) == W{}));
  BOOST_TEST((ape_tree_word(1, 2, TreeMapping::Intended) == W{}));
  BOOST_TEST((ape_tree_word(2, 2, TreeMapping::Intended) == W{0}));
  BOOST_TEST((ape_tree_word(3, 2, TreeMapping::Intended) == W{1}));
  BOOST_TEST((ape_tree_word(4, 2, TreeMapping::Intended) == W{0, 0}));
  BOOST_TEST((ape_tree_word(5, 2, TreeMapping::Intended) == W{0, 1}));
  BOOST_TEST((ape_tree_word(7, 2, TreeMapping::Intended) == W{1, 1}));
  BOOST_TEST((ape_tree_word(9, 2, TreeMapping::Intended) == W{0, 0, 1}));
  // Ternary: node p's children are 3(p-1)+2 .. 3(p-1)+4.
  BOOST_TEST((ape_tree_word(4, 3, TreeMapping::Intended) == W{2}));
  BOOST_TEST((ape_tree_word(5, 3, TreeMapping::Intended) == W{0, 0}));
  // Released (spec section 5): root -> [0], node 2 -> [1], 3 -> [0,0], 4 -> [0,1], 7 -> [0,0,0].
  BOOST_TEST((ape_tree_word(0, 2, TreeMapping::Released) == W{}));
  BOOST_TEST((ape_tree_word(1, 2, TreeMapping::Released) == W{0}));
  BOOST_TEST((ape_tree_word(2, 2, TreeMapping::Released) == W{1}));
  BOOST_TEST((ape_tree_word(3, 2, TreeMapping::Released) == W{0, 0}));
  BOOST_TEST((ape_tree_word(4, 2, TreeMapping::Released) == W{0, 1}));
  BOOST_TEST((ape_tree_word(7, 2, TreeMapping::Released) == W{0, 0, 0}));
  BOOST_TEST((ape_tree_word(8, 2, TreeMapping::Released) == W{0, 0, 1}));
}

BOOST_AUTO_TEST_CASE(tree_prefixes_cancel_with_explicit_matrices) {
  Generator gen(7);
  const int64_t H = 2, Dh = 4;
  for (TreeMapping mapping : {TreeMapping::Intended, TreeMapping::Released}) {
    ApeTree tree(H, Dh, 2, false, mapping, TreeDistance::Intended, ApeSettings{GeneratorInit::Normal}, gen);
    tree.to(kFloat64);
    randomise_generators(tree, gen);
    const Tensor W = tree.branch_matrices().value();  // [2, H, Dh, Dh]
    // u = [0, 1], v = [0, 0, 1]: intended heaps 5 and 9, released heaps 4 and 8.
    const std::vector<int64_t> heaps = mapping == TreeMapping::Intended ? std::vector<int64_t>{5, 9} : std::vector<int64_t>{4, 8};
    const Tensor M = tree.node_maps(heaps).value();  // [2, H, Dh, Dh]
    for (int64_t h = 0; h < H; ++h) {
      const Tensor W0 = W.select(0, 0).select(0, h), W1 = W.select(0, 1).select(0, h);
      const Tensor Mu = M.select(0, 0).select(0, h), Mv = M.select(0, 1).select(0, h);
      BOOST_TEST(max_abs_diff(Mu, mm(tr(W0), tr(W1))) < 1e-13);          // M(u) = W0^T W1^T
      BOOST_TEST(max_abs_diff(Mv, mm(mm(tr(W0), tr(W0)), tr(W1))) < 1e-13);
      const double diff = max_abs_diff(mm(tr(Mu), Mv), mm(mm(W1, tr(W0)), tr(W1)));  // W1 W0^T W1^T
      BOOST_TEST(diff < 1e-12, "M(u)^T M(v) differs from W1 W0^T W1^T by " << diff);
    }
  }
  // Siblings below any prefix are related by the same matrix W0 W1^T (intended mapping):
  // children of heaps 1, 2 and 5 are (2, 3), (4, 5) and (10, 11).
  ApeTree tree(H, Dh, 2, false, TreeMapping::Intended, TreeDistance::Intended, ApeSettings{GeneratorInit::Normal}, gen);
  tree.to(kFloat64);
  randomise_generators(tree, gen);
  const Tensor M = tree.node_maps({2, 3, 4, 5, 10, 11}).value();
  const Tensor W = tree.branch_matrices().value();
  for (int64_t h = 0; h < H; ++h) {
    const Tensor expect = mm(W.select(0, 0).select(0, h), tr(W.select(0, 1).select(0, h)));
    for (int64_t pair = 0; pair < 3; ++pair) {
      const Tensor rel = mm(tr(M.select(0, 2 * pair).select(0, h)), M.select(0, 2 * pair + 1).select(0, h));
      BOOST_TEST(max_abs_diff(rel, expect) < 1e-12);
    }
  }
}

BOOST_AUTO_TEST_CASE(shared_heads_use_one_set_of_branch_generators) {
  Generator gen(8);
  ApeTree tree(2, 4, 2, true, TreeMapping::Released, TreeDistance::Released, ApeSettings{GeneratorInit::Normal}, gen);
  tree.to(kFloat64);
  randomise_generators(tree, gen);
  BOOST_TEST((tree.node_maps({0, 1, 6}).shape() == Shape{3, 1, 4, 4}));
  // Through rotate the single head map broadcasts: both heads of a token get the same map.
  const Positions pos = Positions::tree(Tensor::from_vector(std::vector<int64_t>{0, 1, 6}, {3}));
  Tensor x = normal({1, 1, 3, 4}, 0, 1, gen, kFloat64).expand({1, 2, 3, 4}).contiguous();
  Variable q(x), k(x);
  tree.rotate(q, k, pos);
  BOOST_TEST(max_abs_diff(q.value().select(1, 0), q.value().select(1, 1)) == 0.0);
  BOOST_TEST(max_abs_diff(q.value().select(2, 0), x.select(2, 0)) == 0.0);  // heap 0: identity
}

BOOST_AUTO_TEST_CASE(sequence_decay_is_098_to_the_offset) {
  Generator gen(9);
  auto hook = build("ape", {}, 8, 2, {}, gen);  // default decay 0.98
  const int64_t N = 7;
  const Positions pos = Positions::sequence(N);
  const Tensor dense = decay_of(*hook, pos);  // [1, 1, N, N]
  double worst = 0;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j)
      worst = std::max(worst, std::abs(dense.at<double>({0, 0, i, j}) - std::pow(0.98, std::abs(i - j))));
  BOOST_TEST(worst < 1e-15);
  // On a grid, "ape" reads the flat index: decay^|flat(j) - flat(i)|.
  const Positions grid = Positions::grid({2, 3});
  const Tensor g = decay_of(*hook, grid);
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 6; ++j) BOOST_TEST(std::abs(g.at<double>({0, 0, i, j}) - std::pow(0.98, std::abs(i - j))) < 1e-15);
  // decay 1 or 0: the logits come back untouched.
  for (const char* off : {"1", "0"}) {
    auto plain = build("ape", {{"decay", off}}, 8, 2, {}, gen);
    BOOST_TEST(max_abs_diff(decay_of(*plain, pos), Tensor::ones({1, 1, N, N}, kFloat64)) == 0.0);
  }
}

BOOST_AUTO_TEST_CASE(grid_decay_is_098_to_the_floored_euclidean_distance) {
  Generator gen(10);
  auto hook = build("ape_grid", {}, 8, 2, {3, 4}, gen);
  const Positions pos = Positions::grid({3, 4});
  const Tensor f = decay_of(*hook, pos);
  double worst = 0;
  for (int64_t i = 0; i < 12; ++i)
    for (int64_t j = 0; j < 12; ++j) {
      const double dr = static_cast<double>(i / 4 - j / 4), dc = static_cast<double>(i % 4 - j % 4);
      worst = std::max(worst, std::abs(f.at<double>({0, 0, i, j}) - std::pow(0.98, std::floor(std::sqrt(dr * dr + dc * dc)))));
    }
  BOOST_TEST(worst < 1e-15);
  // Spot values: offset (1, 1) -> floor(1.41) = 1; (2, 3) -> floor(3.61) = 3.
  BOOST_TEST(std::abs(f.at<double>({0, 0, 0, 5}) - 0.98) < 1e-15);
  BOOST_TEST(std::abs(f.at<double>({0, 0, 0, 11}) - std::pow(0.98, 3)) < 1e-15);
  BOOST_TEST(integer_sqrt(0) == 0);
  BOOST_TEST(integer_sqrt(15) == 3);
  BOOST_TEST(integer_sqrt(16) == 4);
  BOOST_TEST(integer_sqrt(1000000000000LL - 1) == 999999);
}

BOOST_AUTO_TEST_CASE(tree_decay_uses_the_true_tree_distance_or_the_released_formula) {
  Generator gen(11);
  // Intended distances equal Positions::tree_distance for every pair.
  const std::vector<int64_t> heaps{0, 1, 2, 3, 4, 5, 6, 7, 9, 14, 13};
  const int64_t N = static_cast<int64_t>(heaps.size());
  const Tensor d = ape_tree_distances(Tensor::from_vector(heaps, {N}), 2, TreeMapping::Intended, TreeDistance::Intended);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j)
      BOOST_TEST(d.at<int64_t>({i, j}) == Positions::tree_distance(heaps[static_cast<size_t>(i)], heaps[static_cast<size_t>(j)], 2));
  // The released formula 2 (L - lcp_padded), spec section 10 item 4: heaps 1, 3, 7 under the released
  // mapping are [0], [0,0], [0,0,0] (L = 3): root vs its right child gives 4 instead of 1.
  const Tensor three = Tensor::from_vector(std::vector<int64_t>{1, 3, 7}, {3});
  const Tensor rel = ape_tree_distances(three, 2, TreeMapping::Released, TreeDistance::Released);
  const Tensor tru = ape_tree_distances(three, 2, TreeMapping::Released, TreeDistance::Intended);
  BOOST_TEST((rel.to_vector<int64_t>() == std::vector<int64_t>{0, 4, 4, 4, 0, 2, 4, 2, 0}));
  BOOST_TEST((tru.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 1, 0, 1, 2, 1, 0}));
  // Intended mapping + released distance: words [], [1], [1,1] (L = 2).
  const Tensor mixed = ape_tree_distances(three, 2, TreeMapping::Intended, TreeDistance::Released);
  BOOST_TEST((mixed.to_vector<int64_t>() == std::vector<int64_t>{0, 4, 4, 4, 0, 2, 4, 2, 0}));

  // Through the terms (the dense modulation): [B, N] heaps give per-row factors 0.98^distance.
  const Tensor heap2 = Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 0, 4, 5, 9, 1}, {2, 4});
  const Positions pos = Positions::tree(heap2);
  auto intended = build("ape_tree", {}, 8, 2, {}, gen);
  auto released = build("ape_tree", {{"mapping", "released"}, {"decay_distance", "released"}}, 8, 2, {}, gen);
  const Tensor fi = decay_of(*intended, pos), fr = decay_of(*released, pos);
  BOOST_TEST((fi.shape() == Shape{2, 1, 4, 4}));
  const Tensor di = ape_tree_distances(heap2, 2, TreeMapping::Intended, TreeDistance::Intended);
  const Tensor dr = ape_tree_distances(heap2, 2, TreeMapping::Released, TreeDistance::Released);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        BOOST_TEST(std::abs(fi.at<double>({b, 0, i, j}) - std::pow(0.98, di.at<int64_t>({b, i, j}))) < 1e-15);
        BOOST_TEST(std::abs(fr.at<double>({b, 0, i, j}) - std::pow(0.98, dr.at<int64_t>({b, i, j}))) < 1e-15);
      }
  // Row 1 = heaps 4, 5, 9, 1: 4 = [0,0] and 9 = [0,0,1] are one step apart; released: L = 3 over
  // the whole batch, words [0,1], [0,0,0], [0,1,0], [0] -> 4 vs 9: 2 (3 - 2) = 2 (= true 1 + 1).
  BOOST_TEST(di.at<int64_t>({1, 0, 2}) == 1);
  BOOST_TEST(dr.at<int64_t>({1, 0, 2}) == 2);
}

BOOST_AUTO_TEST_CASE(sixteen_deep_tree_positions_work) {
  Generator gen(12);
  const int64_t H = 2, Dh = 4;
  ApeTree tree(H, Dh, 2, false, TreeMapping::Intended, TreeDistance::Intended, ApeSettings{GeneratorInit::Normal}, gen);
  tree.to(kFloat64);
  randomise_generators(tree, gen);
  // Depth 16: the leftmost (2^16, word 0^16) and rightmost (2^17 - 1, word 1^16) nodes.
  const int64_t left = int64_t{1} << 16, right = (int64_t{1} << 17) - 1;
  BOOST_TEST(ape_tree_word(left, 2, TreeMapping::Intended).size() == 16u);
  BOOST_TEST((ape_tree_word(right, 2, TreeMapping::Intended) == std::vector<int64_t>(16, 1)));
  const Tensor M = tree.node_maps({left, right}).value();
  const Tensor W = tree.branch_matrices().value();
  for (int64_t h = 0; h < H; ++h)
    for (int64_t b = 0; b < 2; ++b) {
      Tensor expect = rope_like_power(Dh, 0);
      for (int i = 0; i < 16; ++i) expect = mm(expect, tr(W.select(0, b).select(0, h)));
      BOOST_TEST(max_abs_diff(M.select(0, b).select(0, h), expect) < 1e-11);
    }
  // Through the attention layer, with the decay: finite, and the depth-16 pair is 32 steps apart.
  const Tensor heap = Tensor::from_vector(std::vector<int64_t>{0, 1, left, right, 2}, {5});
  const Positions pos = Positions::tree(heap);
  BOOST_TEST(ape_tree_distances(heap, 2, TreeMapping::Intended, TreeDistance::Intended).at<int64_t>({2, 3}) == 32);
  auto hook = build("ape_tree", {}, H * Dh, H, {}, gen);
  MultiHeadAttention mha(H * Dh, H, gen, {hook});
  Variable x(normal({2, 5, H * Dh}, 0, 1, gen), true);
  Variable out = mha.forward(x, {}, &pos);
  sum(out).backward();
  BOOST_TEST(std::isfinite(sum(out.value()).item()));
  BOOST_TEST(std::isfinite(sum(mha.parameter("hooks.0.orthogonal.generators").grad()).item()));
  // Depth 17 is past the positions' limit.
  check_error([&] { Positions::tree(Tensor::from_vector(std::vector<int64_t>{int64_t{1} << 17}, {1})); }, {"depth 17"});
}

BOOST_AUTO_TEST_CASE(frozen_generators_get_no_gradient) {
  Generator gen(13);
  auto hook = build("ape", {{"trainable", "false"}}, 8, 2, {}, gen);
  BOOST_TEST(hook->summary().find("frozen") != std::string::npos);
  MultiHeadAttention mha(8, 2, gen, {hook});
  Variable out = mha.forward(Variable(normal({1, 5, 8}, 0, 1, gen)));
  sum(out).backward();
  const Variable g = mha.parameter("hooks.0.orthogonal.generators");
  BOOST_TEST(!g.requires_grad());
  BOOST_TEST(!g.grad().defined());
  BOOST_TEST(mha.parameter("q_proj.weight").grad().defined());
}

// ---------------------------------------------------------------- gradients (float64)

BOOST_AUTO_TEST_CASE(gradcheck_sequence_through_attention) {
  Generator gen(20);
  const int64_t N = 5, H = 2, Dh = 4;
  for (bool causal : {false, true}) {
    auto hook = build("ape", {{"decay", "0.9"}, {"init", "near_identity"}}, H * Dh, H, {}, gen);
    MultiHeadAttention mha(H * Dh, H, gen, {hook});
    randomise_generators(mha, gen);
    const Positions pos = Positions::sequence(N);
    AttentionMasks masks;
    masks.causal = causal;
    mha.set_path(AttentionPath::Reference);
    check_module_gradients(mha, normal({2, N, H * Dh}, 0, 1, gen),
                           [&](const Variable& x) { return mha.forward(x, masks, &pos); });
  }
}

BOOST_AUTO_TEST_CASE(gradcheck_grid_through_attention) {
  Generator gen(21);
  const int64_t H = 2, Dh = 4;
  auto hook = build("ape_grid", {{"decay", "0.9"}}, H * Dh, H, {3, 3}, gen);
  MultiHeadAttention mha(H * Dh, H, gen, {hook});
  randomise_generators(mha, gen);
  const Positions pos = Positions::grid({3, 3});
  check_module_gradients(mha, normal({2, 9, H * Dh}, 0, 1, gen),
                         [&](const Variable& x) { return mha.forward(x, {}, &pos); });
}

BOOST_AUTO_TEST_CASE(gradcheck_tree_through_attention) {
  Generator gen(22);
  const int64_t H = 2, Dh = 4;
  struct Case {
    std::map<std::string, std::string> options;
    Tensor heap;
  };
  const Case cases[] = {
      {{{"decay", "0.9"}}, Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3, 5, 1, 3, 6, 7, 13}, {2, 5})},
      {{{"decay", "0.9"}, {"shared_heads", "true"}, {"mapping", "released"}, {"decay_distance", "released"}},
       Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 4, 9}, {5})},
  };
  for (const auto& c : cases) {
    auto hook = build("ape_tree", c.options, H * Dh, H, {}, gen);
    MultiHeadAttention mha(H * Dh, H, gen, {hook});
    randomise_generators(mha, gen);
    const Positions pos = Positions::tree(c.heap);
    check_module_gradients(mha, normal({2, 5, H * Dh}, 0, 1, gen),
                           [&](const Variable& x) { return mha.forward(x, {}, &pos); });
  }
}

// ---------------------------------------------------------------- reference vs fused path

BOOST_AUTO_TEST_CASE(reference_and_fused_paths_agree) {
  struct Setup {
    std::string name;
    Positions pos;
    std::optional<OffsetBox> box;
    bool causal;
  };
  const Setup setups[] = {
      {"ape", Positions::sequence(9), std::nullopt, true},
      {"ape", Positions::sequence(9), OffsetBox{{-2}, {1}}, false},
      {"ape_grid", Positions::grid({4, 5}), OffsetBox{{-1, -1}, {1, 2}}, false},
  };
  for (const auto& s : setups) {
    Generator gen(30);
    const int64_t H = 2, Dh = 4, D = H * Dh, N = s.pos.tokens();
    std::vector<std::shared_ptr<AttentionHook>> hooks{build(s.name, {{"init", "normal"}}, D, H, s.pos.structure(), gen)};
    if (s.box) hooks.push_back(std::make_shared<BoxHook>(*s.box));
    MultiHeadAttention mha(D, H, gen, hooks);
    mha.to(kFloat64);
    randomise_generators(mha, gen);
    const Tensor x = normal({2, N, D}, 0, 1, gen, kFloat64), w = normal({2, N, D}, 0, 1, gen, kFloat64);
    AttentionMasks masks;
    masks.causal = s.causal;
    auto forward = [&](const Variable& xv) { return mha.forward(xv, masks, &s.pos); };
    const PathRun ref = run_path(mha, AttentionPath::Reference, x, w, forward);
    const PathRun fast = run_path(mha, AttentionPath::Fused, x, w, forward);
    BOOST_TEST(mha.last_forward_fused());
    check_runs_agree(mha, ref, fast, 1e-12, s.name);
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------- PyTorch golden files

namespace {

struct GoldenCase {
  std::string file;
  DType dtype;
  AttentionPath path;
  double atol, rtol;  // outputs and gradients
};
std::ostream& operator<<(std::ostream& os, const GoldenCase& c) {
  return os << c.file << " " << dtype_name(c.dtype) << (c.path == AttentionPath::Fused ? " fused" : " reference");
}

const GoldenCase kGolden[] = {
    {"ape_sequence", kFloat64, AttentionPath::Reference, 1e-11, 1e-9},
    {"ape_sequence", kFloat64, AttentionPath::Fused, 1e-11, 1e-9},
    {"ape_grid", kFloat64, AttentionPath::Fused, 1e-11, 1e-9},
    {"ape_sequence", kFloat32, AttentionPath::Reference, 2e-5, 1e-3},
    {"ape_grid", kFloat64, AttentionPath::Reference, 1e-11, 1e-9},
    {"ape_grid", kFloat32, AttentionPath::Reference, 2e-5, 1e-3},
    {"ape_tree", kFloat64, AttentionPath::Reference, 1e-11, 1e-9},
    {"ape_tree", kFloat32, AttentionPath::Reference, 2e-5, 1e-3},
    {"ape_tree_released", kFloat64, AttentionPath::Reference, 1e-11, 1e-9},
    {"ape_tree_released", kFloat32, AttentionPath::Reference, 2e-5, 1e-3},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(golden_ape)

BOOST_DATA_TEST_CASE(ape_layer_matches_pytorch, bdata::make(kGolden), c) {
  const auto golden = load_safetensors(std::string(POSGRAD_SOURCE_DIR) + "/tests/golden/" + c.file + ".safetensors");
  const auto cfg = nlohmann::json::parse(golden.metadata.at("config"));
  const int64_t D = cfg["width"], H = cfg["heads"], N = cfg["tokens"];
  std::map<std::string, std::string> options = cfg["options"].template get<std::map<std::string, std::string>>();
  std::vector<int64_t> structure;
  if (cfg.contains("structure")) structure = cfg["structure"].template get<std::vector<int64_t>>();
  const std::string kind = cfg["kind"];
  const Positions pos = kind == "tree"       ? Positions::tree(golden.at("heap"))
                        : kind == "grid"     ? Positions::grid(structure)
                                             : Positions::sequence(N);

  Generator gen(5);
  auto hook = make_hook(HookSpec{cfg["hook"], HookOptions(options)}, HookContext{.width = D, .heads = H, .structure = structure}, gen);
  MultiHeadAttention mha(D, H, gen, {hook});
  mha.to(c.dtype);
  mha.set_path(c.path);
  StateDict weights;
  for (const auto& [name, t] : golden.tensors)
    if (name.rfind("param.", 0) == 0) weights.emplace_back(name.substr(6), t);
  mha.load_state_dict(weights, /*strict=*/true);
  BOOST_TEST(mha.named_parameters().size() == weights.size());

  AttentionMasks masks;
  masks.causal = cfg["causal"];
  const Tensor target = golden.at("target").to(c.dtype);
  Variable x(golden.at("input").to(c.dtype), true);
  Variable out = mha.forward(x, masks, &pos);
  Variable loss = mean(square(out - Variable(target)));
  loss.backward();

  double worst_abs = 0.0, worst_ratio = 0.0;
  std::string worst_name;
  auto check = [&](const std::string& what, const Tensor& ours, const Tensor& theirs, double atol, double rtol) {
    BOOST_REQUIRE_MESSAGE(ours.defined() && ours.shape() == theirs.shape(), what << ": shape mismatch");
    const double diff = max_abs_diff(ours.to(kFloat64), theirs.to(kFloat64)), ratio = posgrad::test::compare_close(ours, theirs, atol, rtol).ratio;
    BOOST_TEST_MESSAGE(fmt::format("  {:38s} max|diff| {:.3g}", what, diff));
    BOOST_TEST(ratio <= 1.0, what << ": max |diff| " << diff << " exceeds " << atol << " + " << rtol << " |ref|");
    if (diff > worst_abs) worst_abs = diff, worst_name = what;
    worst_ratio = std::max(worst_ratio, ratio);
  };
  check("output", out.value(), golden.at("output"), c.atol, c.rtol);
  check("loss", loss.value(), golden.at("loss"), c.atol, c.rtol);
  check("grad.input", x.grad(), golden.at("grad.input"), c.atol, c.rtol);
  for (const auto& [name, p] : mha.named_parameters()) check("grad." + name, p.grad(), golden.at("grad." + name), c.atol, c.rtol);

  AdamWOptions adam;
  adam.lr = cfg["lr"];
  adam.weight_decay = cfg["weight_decay"];
  AdamW opt(mha.parameters(), adam);
  std::vector<double> losses;
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    Variable l = mean(square(mha.forward(Variable(golden.at("input").to(c.dtype)), masks, &pos) - Variable(target)));
    l.backward();
    opt.step();
    losses.push_back(l.item());
  }
  check("adamw_losses (3 steps)", Tensor::from_vector(losses, {3}), golden.at("adamw_losses"), c.atol, c.rtol);
  BOOST_TEST_MESSAGE(fmt::format("{}: worst |diff| {:.3g} ({}), worst diff/tolerance {:.3g}", c.file + " " +
                                 dtype_name(c.dtype), worst_abs, worst_name, worst_ratio));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ape_tests
