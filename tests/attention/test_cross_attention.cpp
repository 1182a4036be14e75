// Queries and keys with their own positions in MultiHeadAttention (multi_head_attention.h):
// cross-attention (Nq != Nk, key padding) against a hand-written loop over the query-key pairs in
// float64 for every kind of scheme (none, rotations, query tables, biases, modulations), the
// hooks' tables on a pair as functions of the offset alone, gradcheck through a cross-attention
// forward, and incremental decoding with a KeyValueCache against one causal forward. The fused
// path on the same pairs is checked against the reference in test_fused_attention.cpp.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>

#include "attention/multi_head_attention.h"
#include "attention/registry.h"
#include "autograd/gradcheck.h"
#include "posgrad.h"
#include "tests/golden_compare.h"
#include "tests/test_support.h"

using namespace posgrad;
namespace bdata = boost::unit_test::data;

namespace {

struct SchemeCase {
  std::string name;
  std::map<std::string, std::string> options;
};
std::ostream& operator<<(std::ostream& os, const SchemeCase& c) { return os << c.name; }

const std::vector<SchemeCase> kSchemes = {
    {"none", {}},
    {"rope", {{"trainable", "true"}}},
    {"ape", {{"decay", "0.9"}}},
    {"shaw", {{"window", "3"}}},
    {"t5_bias", {{"buckets", "8"}, {"max_distance", "16"}}},
    {"siren", {{"hidden", "16"}, {"layers", "2"}}},
    {"alibi", {}},
    {"transformer_xl", {}},
};

std::unique_ptr<MultiHeadAttention> make_layer(const SchemeCase& c, int64_t D, int64_t H, int64_t context, Generator& gen) {
  auto hook = make_hook(HookSpec{c.name, HookOptions(c.options)}, HookContext{.width = D, .heads = H, .structure = {context}}, gen);
  auto mha = std::make_unique<MultiHeadAttention>(D, H, gen, std::vector<std::shared_ptr<AttentionHook>>{hook});
  mha->to(kFloat64);
  return mha;
}

// x [B, N, D] through the layer's projection `name` -> [B, H, N, Dh].
Tensor project(MultiHeadAttention& mha, const std::string& name, const Tensor& x) {
  Tensor w, b;
  for (const auto& [n, p] : mha.named_parameters()) {
    if (n == name + ".weight") w = p.value();
    if (n == name + ".bias") b = p.value();
  }
  const int64_t B = x.size(0), N = x.size(1), H = mha.heads(), Dh = mha.width() / H;
  return add(matmul(x, w.transpose(0, 1)), b).reshape({B, N, H, Dh}).permute({0, 2, 1, 3}).contiguous();
}

// Table entry (h, r) of an [H, R] or [R] table.
double entry(const Variable& t, int64_t h, int64_t r) {
  return t.dim() == 2 ? t.value().at<double>({h, r}) : t.value().at<double>({r});
}

// The cross-attention output by hand: each side rotated at its own positions (as a self-
// attention over that side alone), the hooks' tables of the pair read at relative_index(j - i)
// pair by pair, padded keys left out of the softmax.
Tensor cross_attention_by_hand(MultiHeadAttention& mha, const Tensor& xq, const Tensor& xk, const Tensor& padding) {
  const int64_t B = xq.size(0), Nq = xq.size(1), Nk = xk.size(1), H = mha.heads(), Dh = mha.width() / H;
  const PositionPair pair(Positions::sequence(Nq), Positions::sequence(Nk));
  Variable q(project(mha, "q_proj", xq)), k(project(mha, "k_proj", xk));
  for (const auto& hook : mha.hooks()) {
    Variable q_as_key = q, k_as_query = k;  // rotated too, then dropped
    hook->rotate(q, q_as_key, Positions::sequence(Nq));
    hook->rotate(k_as_query, k, Positions::sequence(Nk));
  }
  const Tensor v = project(mha, "v_proj", xk);
  const AttentionTerms t = combine_attention_terms(mha.hooks(), pair, kFloat64);
  std::vector<double> o(static_cast<size_t>(B * Nq * H * Dh), 0.0);  // [B, Nq, D]
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Nq; ++i) {
        std::vector<double> logit(static_cast<size_t>(Nk), -std::numeric_limits<double>::infinity());
        for (int64_t j = 0; j < Nk; ++j) {
          if (padding.at<double>({b, j}) != 0.0) continue;
          const int64_t r = pair.relative_index({j - i});
          double content = 0, positional = 0;
          for (int64_t d = 0; d < Dh; ++d) {
            const double kj = k.value().at<double>({b, h, j, d}), qi = q.value().at<double>({b, h, i, d});
            content += qi * kj / std::sqrt(static_cast<double>(Dh));
            if (t.key_bias.defined()) content += t.key_bias.value().at<double>({h, d}) * kj;
            if (t.query_table.defined()) positional += qi * t.query_table.value().at<double>({h, r, d});
          }
          if (t.bias.defined()) positional += entry(t.bias, h, r);
          if (t.positional_modulation.defined()) positional *= entry(t.positional_modulation, h, r);
          logit[static_cast<size_t>(j)] = (content + positional) * (t.modulation.defined() ? entry(t.modulation, h, r) : 1.0);
        }
        double top = -std::numeric_limits<double>::infinity(), z = 0;
        for (double l : logit) top = std::max(top, l);
        for (double l : logit) z += std::exp(l - top);
        for (int64_t j = 0; j < Nk; ++j)
          for (int64_t d = 0; d < Dh; ++d) {
            const double p = std::exp(logit[static_cast<size_t>(j)] - top) / z;
            o[static_cast<size_t>((b * Nq + i) * H * Dh + h * Dh + d)] += p * v.at<double>({b, h, j, d});
          }
      }
  const Tensor merged = Tensor::from_vector(o, {B, Nq, H * Dh});
  return project(mha, "out_proj", merged).permute({0, 2, 1, 3}).contiguous().reshape({B, Nq, H * Dh});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cross_attention)

// Decoder queries (Nq = 5) over encoder keys (Nk = 7) with padded keys: the layer's output on the
// reference and the fused path is the hand-written loop's, float64 tight.
BOOST_DATA_TEST_CASE(cross_attention_follows_the_pairwise_formula, bdata::make(kSchemes), c) {
  Generator gen(3);
  const int64_t B = 2, Nq = 5, Nk = 7, D = 8, H = 2;
  auto mha = make_layer(c, D, H, Nk, gen);
  const Tensor xq = normal({B, Nq, D}, 0, 1, gen, kFloat64), xk = normal({B, Nk, D}, 0, 1, gen, kFloat64);
  std::vector<double> pad(static_cast<size_t>(B * Nk), 0.0);
  pad[static_cast<size_t>(Nk + 5)] = pad[static_cast<size_t>(Nk + 6)] = 1.0;  // example 1: its last 2 keys padded
  const Tensor padding = Tensor::from_vector(pad, {B, Nk});
  const PositionPair pair(Positions::sequence(Nq), Positions::sequence(Nk));
  const Tensor expected = cross_attention_by_hand(*mha, xq, xk, padding);
  for (const AttentionPath path : {AttentionPath::Reference, AttentionPath::Fused}) {
    mha->set_path(path);
    const Tensor out = mha->forward(Variable(xq), Variable(xk), AttentionContext{&pair, padding, false, nullptr}).value();
    BOOST_REQUIRE(out.shape() == (Shape{B, Nq, D}));
    posgrad::test::expect_close(fmt::format("{} {}", c.name, attention_path_name(path)), out, expected, 1e-12, 1e-10);
    BOOST_TEST(mha->last_forward_fused() == (path == AttentionPath::Fused));
  }
  // Without positions the two inputs are sequences from 0: the same call.
  mha->set_path(AttentionPath::Reference);
  const Tensor plain = mha->forward(Variable(xq), Variable(xk), AttentionContext{nullptr, padding, false, nullptr}).value();
  posgrad::test::expect_close("default positions", plain, expected, 1e-12, 1e-10);
}

// A hook's tables on a pair are functions of the offset (key - query) alone: entry
// relative_index(o) of the cross pair (offsets -4..6) equals entry relative_index(o) of the self
// pair of 7 tokens (offsets -6..6), whose largest distance is the same (SIREN's normalisation).
BOOST_DATA_TEST_CASE(tables_on_a_pair_depend_on_the_offset_only, bdata::make(kSchemes), c) {
  Generator gen(5);
  auto mha = make_layer(c, 8, 2, 7, gen);
  const PositionPair cross(Positions::sequence(5), Positions::sequence(7)), self(Positions::sequence(7));
  BOOST_TEST(cross.relative_size() == 5 + 7 - 1);
  BOOST_TEST(cross.relative_lo()[0] == -4);
  BOOST_TEST(cross.relative_hi()[0] == 6);
  const AttentionTerms a = combine_attention_terms(mha->hooks(), cross, kFloat64);
  const AttentionTerms b = combine_attention_terms(mha->hooks(), self, kFloat64);
  for (int64_t o = -4; o <= 6; ++o) {
    const Tensor rc = Tensor::from_vector(std::vector<int64_t>{cross.relative_index({o})}, {1});
    const Tensor rs = Tensor::from_vector(std::vector<int64_t>{self.relative_index({o})}, {1});
    for (const auto& [x, y] : {std::pair{a.query_table, b.query_table}, std::pair{a.bias, b.bias}, std::pair{a.modulation, b.modulation}}) {
      BOOST_TEST(x.defined() == y.defined());
      if (!x.defined()) continue;
      const int64_t axis = x.dim() == 3 ? 1 : x.dim() - 1;
      BOOST_TEST(max_abs_diff(index_select(x.value(), axis, rc), index_select(y.value(), axis, rs)) < 1e-14,
                 c.name << " offset " << o);
    }
  }
}

// Central differences through a cross-attention forward (both inputs, reference and fused path).
BOOST_AUTO_TEST_CASE(gradcheck_through_cross_attention) {
  for (const std::string scheme : {"rope", "siren", "t5_bias"})
    for (const AttentionPath path : {AttentionPath::Reference, AttentionPath::Fused}) {
      Generator gen(9);
      auto mha = make_layer(SchemeCase{scheme, scheme == "siren" ? std::map<std::string, std::string>{{"hidden", "8"}}
                                                                  : std::map<std::string, std::string>{}},
                            4, 2, 4, gen);
      mha->set_path(path);
      const PositionPair pair(Positions::sequence(3), Positions::sequence(4));
      const Tensor padding = Tensor::from_vector(std::vector<double>{0, 0, 0, 1}, {1, 4});
      auto fn = [&](const std::vector<Variable>& v) {
        return mha->forward(v[0], v[1], AttentionContext{&pair, padding, false, nullptr});
      };
      const GradcheckResult r = gradcheck(fn, {normal({1, 3, 4}, 0, 1, gen, kFloat64), normal({1, 4, 4}, 0, 1, gen, kFloat64)});
      BOOST_TEST(r.ok, scheme << " " << attention_path_name(path) << ": " << r.message);
    }
}

// Decoding token by token (then two tokens at once) with a KeyValueCache computes what one causal
// forward over the whole sequence computes, on both paths, for schemes whose terms depend on the
// offsets alone (SIREN's default normalisation divides by the sequence's length, which grows).
BOOST_DATA_TEST_CASE(cached_decoding_equals_one_causal_forward, bdata::make(kSchemes), c) {
  if (c.name == "siren") return;
  Generator gen(4);
  const int64_t B = 2, N = 6, D = 8, H = 2;
  auto mha = make_layer(c, D, H, N, gen);
  const Tensor x = normal({B, N, D}, 0, 1, gen, kFloat64);
  for (const AttentionPath path : {AttentionPath::Reference, AttentionPath::Fused}) {
    mha->set_path(path);
    AttentionMasks causal;
    causal.causal = true;
    const Tensor full = mha->forward(Variable(x), causal).value();
    KeyValueCache cache;
    std::vector<Tensor> steps;
    for (const auto& [start, count] : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 2}}) {
      const Variable xs(x.narrow(1, start, count).contiguous());
      steps.push_back(mha->forward(xs, xs, AttentionContext{nullptr, Tensor(), true, &cache}).value());
      BOOST_TEST(cache.tokens() == start + count);
    }
    posgrad::test::expect_close(fmt::format("{} {} cached", c.name, attention_path_name(path)), cat(steps, 1), full,
                                1e-12, 1e-10);
  }
  // The cache fixes the positions: passing others is an error naming why.
  KeyValueCache cache;
  const PositionPair pair(Positions::sequence(1));
  const Variable x1(x.narrow(1, 0, 1).contiguous());
  posgrad::test::check_error([&] { mha->forward(x1, x1, AttentionContext{&pair, Tensor(), true, &cache}); },
                             {"key/value cache", "positions follow from it"});
}

// Positions that do not describe the inputs, and pairs of different kinds, are errors naming both.
BOOST_AUTO_TEST_CASE(mismatched_positions_are_named) {
  Generator gen(1);
  MultiHeadAttention mha(8, 2, gen);
  const PositionPair pair(Positions::sequence(3), Positions::sequence(4));
  posgrad::test::check_error(
      [&] { mha.forward(Variable(normal({1, 3, 8}, 0, 1, gen)), Variable(normal({1, 5, 8}, 0, 1, gen)), AttentionContext{&pair}); },
      {"3 queries and 5 keys", "queries at sequence of 3, keys at sequence of 4"});
  posgrad::test::check_error([] { PositionPair(Positions::sequence(3), Positions::grid({2, 2})); },
                             {"not of one kind and dimension"});
  posgrad::test::check_error([] { PositionPair::memory(4, 5); }, {"1 <= Nq <= N"});
}

BOOST_AUTO_TEST_SUITE_END()
