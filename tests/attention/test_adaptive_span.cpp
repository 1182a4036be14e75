// The adaptive span (attention/spans/adaptive_span.h) against the index facts of spec
// adaptive_span.md section 8 (mask values per distance, the current token excluded, trimmed
// keys have mask exactly 0), the char LM's window (trim in steps, attend_self), the span loss, the
// clamp after an optimizer step, the reported spans, gradients of c and x, the reference path
// against the fused path, and option errors; the key_pe scheme (key_pe.h): its table entries per
// distance, key range and errors.
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "attention/multi_head_attention.h"
#include "attention/registry.h"
#include "attention/schemes/key_pe.h"
#include "attention/spans/adaptive_span.h"
#include "nn/adam.h"
#include "posgrad.h"
#include "tests/attention_pairs.h"
#include "tests/module_gradcheck.h"
#include "tests/attention_paths.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_runs_agree;
using posgrad::test::PathRun;
using posgrad::test::run_path;
using posgrad::test::check_error;
using posgrad::test::check_module_gradients;

using posgrad::test::on_pairs;

namespace {

// Writes c in place (the parameter keeps its identity).
void set_c(AdaptiveSpan& span, const std::vector<double>& c) {
  Tensor value = span.c().value();
  value.copy_(Tensor::from_vector(c, {static_cast<int64_t>(c.size())}));
}

std::shared_ptr<AdaptiveSpan> make_span(std::map<std::string, std::string> options, int64_t H, int64_t N,
                                        const std::vector<double>& c = {}) {
  Generator gen(3);
  auto hook = std::dynamic_pointer_cast<AdaptiveSpan>(
      make_hook(HookSpec{"adaptive_span", HookOptions(std::move(options))},
                HookContext{.width = 4 * H, .heads = H, .structure = {N}}, gen));
  BOOST_REQUIRE(hook);
  hook->to(kFloat64);
  if (!c.empty()) set_c(*hook, c);
  return hook;
}

// The spec's mask m(d) = clamp((R + c S - (d - 1)) / R, 0, 1) for 1 <= d <= S, else 0.
double spec_mask(double c, double S, double ramp, int64_t d) {
  if (d < 1 || d > S) return 0.0;
  return std::clamp((ramp + c * S - static_cast<double>(d - 1)) / ramp, 0.0, 1.0);
}

// The same modulator without trimming: its key range is the whole causal past (up to S).
class UntrimmedSpan : public AdaptiveSpan {
 public:
  using AdaptiveSpan::AdaptiveSpan;
  std::optional<OffsetBox> key_range(const PositionPair&) const override { return OffsetBox{{-max_span()}, {-1}}; }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(adaptive_span)

BOOST_AUTO_TEST_CASE(mask_values_follow_the_spec_per_distance) {
  const int64_t N = 12, S = 10;
  const double ramp = 4;
  auto span = make_span({{"max_span", "10"}, {"ramp", "4"}}, 2, N, {0.25, 0.6});  // z = 2.5, 6
  Tensor m = on_pairs(span->attention_terms(Positions::sequence(N), kFloat64).prob_mask, Positions::sequence(N))
                 .reshape({1, 2, N, N});
  BOOST_TEST(m.shape() == (Shape{1, 2, N, N}));
  const double c[2] = {0.25, 0.6};
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < N; ++j)
        BOOST_TEST(std::abs(m.at<double>({0, h, i, j}) - spec_mask(c[h], S, ramp, i - j)) < 1e-15);
  // Worked values for head 0 (z = 2.5, R = 4): d = 1..3 see 1, then (4 + 2.5 - 3)/4 = 0.875,
  // 0.625, 0.375, 0.125, and 0 from d = 8 on; the current token (d = 0) and the future get 0.
  const double want[] = {0.0, 1.0, 1.0, 1.0, 0.875, 0.625, 0.375, 0.125, 0.0, 0.0, 0.0};
  for (int64_t d = 0; d <= 10; ++d) BOOST_TEST(m.at<double>({0, 0, 11, 11 - d}) == want[d]);
  BOOST_TEST(m.at<double>({0, 1, 3, 4}) == 0.0);
  // At init (c = 0) a head sees d = 1..R with weights 1, (R-1)/R, ..., 1/R.
  auto fresh = make_span({{"max_span", "10"}, {"ramp", "4"}}, 1, N);
  Tensor m0 = on_pairs(fresh->attention_terms(Positions::sequence(N), kFloat64).prob_mask, Positions::sequence(N))
                  .reshape({1, 1, N, N});
  const double init_want[] = {0.0, 1.0, 0.75, 0.5, 0.25, 0.0};
  for (int64_t d = 0; d <= 5; ++d) BOOST_TEST(m0.at<double>({0, 0, 8, 8 - d}) == init_want[d]);
}

BOOST_AUTO_TEST_CASE(key_range_trims_exactly_the_keys_with_mask_zero) {
  const int64_t N = 16;
  auto span = make_span({{"max_span", "12"}, {"ramp", "3"}}, 2, N, {0.1, 0.2});  // z = 1.2, 2.4
  // lo = -min(S, ceil(max z) + R) = -(3 + 3); hi = -1 (the current token is excluded).
  auto box = span->key_range(Positions::sequence(N));
  BOOST_REQUIRE(box.has_value());
  BOOST_TEST(box->lo[0] == -6);
  BOOST_TEST(box->hi[0] == -1);
  BOOST_TEST(span->kept_distance() == 6);
  // Every key outside the box has mask exactly 0 for every head; inside, the farthest one is not 0.
  Tensor m = on_pairs(span->attention_terms(Positions::sequence(N), kFloat64).prob_mask, Positions::sequence(N))
                 .reshape({1, 2, N, N});
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < N; ++j)
        if (!box->contains({j - i})) BOOST_TEST(m.at<double>({0, h, i, j}) == 0.0);
  BOOST_TEST(m.at<double>({0, 1, 10, 4}) > 0.0);  // d = 6 for z = 2.4: (3 + 2.4 - 5)/3
  // The box shrinks as the spans shrink, and never passes S.
  set_c(*span, {0.0, 0.0});
  BOOST_TEST(span->key_range(Positions::sequence(N))->lo[0] == -3);
  set_c(*span, {1.0, 0.5});
  BOOST_TEST(span->key_range(Positions::sequence(N))->lo[0] == -12);
}

// The char LM's window (options attend_self and granularity): the spec's trim in steps of g,
// W = S - floor(min(S - 1, S - (ceil(max z) + R)) / g) g; with attend_self the current token is
// in the box and in the mask (1), and the box holds W keys, distances 0 .. W - 1.
BOOST_AUTO_TEST_CASE(granularity_and_attend_self_give_the_char_lm_window) {
  const int64_t N = 40;
  // S = 32, R = 4, z = 0.3 * 32 = 9.6: max_size = 10 + 4 = 14, trim = floor(18 / 8) 8 = 16, W = 16.
  auto span = make_span({{"max_span", "32"}, {"ramp", "4"}, {"granularity", "8"}}, 2, N, {0.3, 0.1});
  BOOST_TEST(span->kept_distance() == 16);
  BOOST_TEST(span->key_range(Positions::sequence(N))->lo[0] == -16);
  BOOST_TEST(span->key_range(Positions::sequence(N))->hi[0] == -1);
  auto exact = make_span({{"max_span", "32"}, {"ramp", "4"}}, 2, N, {0.3, 0.1});
  BOOST_TEST(exact->kept_distance() == 14);
  auto never = make_span({{"max_span", "32"}, {"ramp", "4"}, {"granularity", "32"}}, 2, N, {0.3, 0.1});
  BOOST_TEST(never->kept_distance() == 32);
  auto self = make_span({{"max_span", "32"}, {"ramp", "4"}, {"granularity", "8"}, {"attend_self", "true"}}, 2, N,
                        {0.3, 0.1});
  BOOST_TEST(self->attend_self());
  BOOST_TEST(self->key_range(Positions::sequence(N))->lo[0] == -15);
  BOOST_TEST(self->key_range(Positions::sequence(N))->hi[0] == 0);
  Tensor m = on_pairs(self->attention_terms(Positions::sequence(N), kFloat64).prob_mask, Positions::sequence(N))
                 .reshape({1, 2, N, N});
  for (int64_t h = 0; h < 2; ++h) BOOST_TEST(m.at<double>({0, h, 20, 20}) == 1.0);  // d = 0
  BOOST_TEST(m.at<double>({0, 0, 20, 21}) == 0.0);                                    // the future
  BOOST_TEST(m.at<double>({0, 0, 20, 9}) == spec_mask(0.3, 32, 4, 11));               // d = 11 on the ramp
  check_error([] { make_span({{"max_span", "8"}, {"granularity", "0"}}, 1, 10); }, {"adaptive_span", "granularity"});
}

BOOST_AUTO_TEST_CASE(exact_trimming_changes_only_the_epsilon_term) {
  // Against the same mask with every key of the past in the softmax (no trimming): the numbers
  // differ only through the 1e-8 of the renormaliser.
  Generator gen(8);
  const int64_t D = 8, H = 2, N = 20;
  auto trimmed = make_span({{"max_span", "19"}, {"ramp", "3"}}, H, N, {0.05, 0.15});
  auto full = std::make_shared<UntrimmedSpan>(H, 19, 3.0, 0.0, 2e-6);
  full->to(kFloat64);
  set_c(*full, trimmed->c().value().to_vector<double>());
  MultiHeadAttention a(D, H, gen, {trimmed});
  Generator gen2(8);
  MultiHeadAttention b(D, H, gen2, {full});
  a.to(kFloat64);
  b.to(kFloat64);
  a.set_path(AttentionPath::Reference);
  b.set_path(AttentionPath::Reference);
  Tensor x = normal({2, N, D}, 0, 1, gen, kFloat64);
  const double diff = max_abs_diff(a.forward(Variable(x)).value(), b.forward(Variable(x)).value());
  BOOST_TEST_MESSAGE("exact trim vs no trim: max |diff| " << diff);
  BOOST_TEST(diff < 1e-7);
  BOOST_TEST(a.key_box(Positions::sequence(N), false)->lo[0] == -6);
}

BOOST_AUTO_TEST_CASE(span_loss_clamp_and_reported_spans) {
  auto span = make_span({{"max_span", "100"}, {"ramp", "32"}, {"loss_coef", "2e-6"}}, 4, 101, {0.1, 0.25, 0.0, 0.5});
  // Loss per layer: lambda S mean_h(c) = 2e-6 * 100 * 0.2125.
  BOOST_TEST(std::abs(span->regulariser().item() - 2e-6 * 100 * 0.2125) < 1e-18);
  const auto z = span->current_spans();
  BOOST_TEST(z == (std::vector<double>{10, 25, 0, 50}), boost::test_tools::tolerance(1e-12) << boost::test_tools::per_element());
  BOOST_TEST(span->average_span() == std::ceil(21.25) + 32);  // 54
  BOOST_TEST(span->largest_span() == 50 + 32);
  set_c(*span, {1.0, 0.9, 1.0, 1.0});
  BOOST_TEST(span->largest_span() == 100);  // clamped to S
  BOOST_TEST(span->summary().find("max span 100") != std::string::npos);

  // Clamp after a step: c outside [0, 1] comes back to the interval, in place.
  Variable c = span->c();
  set_c(*span, {-0.3, 0.4, 1.7, 1.0});
  span->after_optimizer_step();
  BOOST_TEST(c.value().to_vector<double>() == (std::vector<double>{0.0, 0.4, 1.0, 1.0}), boost::test_tools::per_element());

  // A real step: the span loss alone pushes c = 0 below zero, the clamp returns it to 0.
  auto zero = make_span({{"max_span", "10"}, {"loss_coef", "1"}}, 2, 11);
  AdamOptions options;
  options.lr = 0.1;
  Adam opt(zero->parameters(), options);
  zero->regulariser().backward();
  opt.step();
  BOOST_TEST(zero->c().value().to_vector<double>()[0] < 0.0);
  zero->after_optimizer_step();
  BOOST_TEST(zero->c().value().to_vector<double>() == (std::vector<double>{0.0, 0.0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(gradcheck_reference_and_fused) {
  for (AttentionPath path : {AttentionPath::Reference, AttentionPath::Fused}) {
    Generator gen(17);
    const int64_t D = 8, H = 2, N = 7;
    // S = 6, R = 2, z = 0.9, 2.1: the ramps cover distances 1..4 and 1..5; key range d <= 5.
    auto span = make_span({{"max_span", "6"}, {"ramp", "2"}, {"loss_coef", "0.1"}}, H, N, {0.15, 0.35});
    MultiHeadAttention mha(D, H, gen, {span});
    mha.set_path(path);
    Tensor x = normal({2, N, D}, 0, 1, gen, kFloat64);
    check_module_gradients(mha, x, [&](const Variable& xv) { return mha.forward(xv) + span->regulariser(); });
    BOOST_TEST(span->c().value().to_vector<double>()[1] == 0.35);  // gradcheck restored it
  }
}

BOOST_AUTO_TEST_CASE(reference_and_fused_paths_agree) {
  Generator gen(23);
  const int64_t D = 8, H = 2, N = 24;
  auto span = make_span({{"max_span", "20"}, {"ramp", "4"}}, H, N, {0.1, 0.3});  // z = 2, 6: keep d <= 10
  MultiHeadAttention mha(D, H, gen, {span});
  mha.to(kFloat64);
  Tensor x = normal({2, N, D}, 0, 1, gen, kFloat64), w = normal({2, N, D}, 0, 1, gen, kFloat64);
  auto forward = [&](const Variable& xv) { return mha.forward(xv); };
  PathRun ref = run_path(mha, AttentionPath::Reference, x, w, forward);
  PathRun fast = run_path(mha, AttentionPath::Fused, x, w, forward);
  // The fused path computes only the box: O(N (max span + R)), not O(N^2).
  BOOST_TEST(mha.key_box(Positions::sequence(N), false)->volume() == 10);
  BOOST_TEST(mha.last_computed_share(Positions::sequence(N)) < 0.5);
  check_runs_agree(mha, ref, fast, 1e-12);
  // The first token has no key at distance >= 1: its attention output is zero (out = out_proj bias).
  Tensor bias = mha.parameter("out_proj.bias").value();
  BOOST_TEST(max_abs_diff(fast.out.select(0, 0).select(0, 0), bias) < 1e-15);
  BOOST_TEST(std::abs(sum(mha.last_probs().select(2, 0)).item()) == 0.0);
}

BOOST_AUTO_TEST_CASE(bad_options_and_positions_are_errors) {
  Generator gen(4);
  auto make = [&](std::map<std::string, std::string> options, std::vector<int64_t> structure) {
    return make_hook(HookSpec{"adaptive_span", HookOptions(std::move(options))},
                     HookContext{.width = 8, .heads = 2, .structure = std::move(structure)}, gen);
  };
  check_error([&] { make({}, {4, 4}); }, {"adaptive_span", "1-D sequences", "2-D grid"});
  check_error([&] { make({}, {}); }, {"adaptive_span", "set option max_span"});
  check_error([&] { make({{"init", "1.5"}}, {8}); }, {"adaptive_span", "init", "[0, 1]"});
  check_error([&] { make({{"ramp", "0"}}, {8}); }, {"adaptive_span", "ramp"});
  check_error([&] { make({{"max_span", "0"}}, {8}); }, {"adaptive_span", "max_span"});
  check_error([&] { make({{"loss_coef", "-1"}}, {8}); }, {"adaptive_span", "loss_coef"});
  check_error([&] { make({{"span", "3"}}, {8}); }, {"adaptive_span", "unknown option span"});
  auto span = make({}, {8});
  BOOST_TEST(std::dynamic_pointer_cast<AdaptiveSpan>(span)->max_span() == 7);   // N - 1
  BOOST_TEST(std::dynamic_pointer_cast<AdaptiveSpan>(span)->ramp() == 32.0);
  BOOST_TEST(std::dynamic_pointer_cast<AdaptiveSpan>(span)->loss_coef() == 2e-6);
  check_error([&] { span->key_range(Positions::grid({2, 4})); }, {"adaptive_span", "1-D sequence"});
  MultiHeadAttention mha(8, 2, gen, {span});
  const Positions grid = Positions::grid({2, 2});
  check_error([&] { mha.forward(Variable(Tensor::zeros({1, 4, 8})), {}, &grid); }, {"adaptive_span", "1-D sequence"});
}

BOOST_AUTO_TEST_SUITE_END()

// key_pe: the key at distance d, 1 <= d <= S, adds q . P[:, S - d] / sqrt(Dh); the current
// token, later keys and keys beyond S are outside its key range. Checked on the relative grid of
// a segment over a memory (queries the last 3 of 9 tokens) and of self-attention.
BOOST_AUTO_TEST_SUITE(key_pe_scheme)

BOOST_AUTO_TEST_CASE(entries_per_distance_key_range_and_errors) {
  Generator gen(4);
  const int64_t H = 2, Dh = 3, S = 5;
  auto hook = std::dynamic_pointer_cast<KeyPositionEmbedding>(
      make_hook(HookSpec{"key_pe", HookOptions{{"max_span", "5"}}}, HookContext{.width = H * Dh, .heads = H, .structure = {9}}, gen));
  BOOST_REQUIRE(hook);
  hook->to(kFloat64);
  const std::vector<double> P = hook->table().value().to_vector<double>();  // [Dh, S]
  for (const PositionPair& pair : {PositionPair::memory(9, 3), PositionPair(Positions::sequence(4))}) {
    const Tensor table = hook->attention_terms(pair, kFloat64).query_table.value().contiguous();  // [H, R, Dh]
    const int64_t lo = pair.relative_lo()[0], R = pair.relative_size();
    BOOST_TEST(table.shape() == (Shape{H, R, Dh}));
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = 0; r < R; ++r) {
        const int64_t d = -(lo + r);
        for (int64_t e = 0; e < Dh; ++e) {
          const double want = d >= 1 && d <= S ? P[static_cast<size_t>(e * S + S - d)] / std::sqrt(3.0) : 0.0;
          BOOST_TEST(table.at<double>({h, r, e}) == want, boost::test_tools::tolerance(1e-15));
        }
      }
    BOOST_TEST(hook->key_range(pair)->lo[0] == -S);
    BOOST_TEST(hook->key_range(pair)->hi[0] == -1);
  }
  check_error([&] { hook->attention_terms(Positions::grid({2, 3}), kFloat64); }, {"key_pe", "1-D"});
  check_error([&] { make_hook(HookSpec{"key_pe", {}}, HookContext{.width = 6, .heads = 2, .structure = {}}, gen); },
              {"key_pe", "max_span"});
}

BOOST_AUTO_TEST_SUITE_END()
