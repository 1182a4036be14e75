// posattn's schemes against its spec (posattn.md sections 3-6, 8.1, 12) and the Transformer-XL
// formula (adaptive_span.md section 5): the reference numbers (initial spans, the 5-token mask,
// the index map, G*, init bounds, parameter counts), each scheme's score formula written out by
// hand, shift invariance of the relative schemes, gradchecks through MultiHeadAttention on the
// reference and the fused path, reference-vs-fused agreement, sigma -> 0, and the errors.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "attention/multi_head_attention.h"
#include "attention/posattn_classifier.h"
#include "attention/registry.h"
#include "attention/schemes/siren_relative.h"
#include "attention/schemes/transformer_xl.h"
#include "attention/spans/gaussian_span.h"
#include "nn/siren.h"
#include "posgrad.h"
#include "tests/attention_pairs.h"
#include "tests/module_gradcheck.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_error;
using posgrad::test::on_pairs;
using posgrad::test::positional_on_pairs;
using posgrad::test::content_bias_on_pairs;
using posgrad::test::logits_on_pairs;
using posgrad::test::check_module_gradients;

namespace {

HookContext context(int64_t width, int64_t heads, std::vector<int64_t> structure) {
  HookContext c;
  c.width = width;
  c.heads = heads;
  c.structure = std::move(structure);
  return c;
}

std::shared_ptr<AttentionHook> hook(const std::string& name, const HookContext& c,
                                    std::map<std::string, std::string> options = {}, uint64_t seed = 1) {
  Generator gen(seed);
  return make_hook(HookSpec{name, HookOptions(std::move(options))}, c, gen);
}

double max_abs(const Tensor& t) { return amax(abs(t)).item(); }

// Every element inside [-bound, bound], and (for tensors large enough) the largest one close to it.
void check_uniform_bound(const std::string& what, const Tensor& t, double bound) {
  const double m = max_abs(t);
  BOOST_TEST(m <= bound * (1 + 1e-6), what << ": max |w| " << m << " exceeds " << bound);
  if (t.numel() >= 64) BOOST_TEST(m >= 0.85 * bound, what << ": max |w| " << m << " far below " << bound);
}

// The posattn model at the thesis sizes (C 3, D 64, H 8, L 6, FFN 128).
PosattnClassifierConfig thesis_config(const std::string& positional, int64_t dims, bool span) {
  PosattnClassifierConfig c;
  c.positional = positional;
  c.dims = dims;
  c.structure = {32, 32};
  c.span = span;
  return c;
}

}  // namespace

// ============================================================================ Gaussian span

BOOST_AUTO_TEST_SUITE(posattn_gaussian_span)

BOOST_AUTO_TEST_CASE(initial_spans_match_the_spec) {
  // sigma 0.3, t 0.1: x = 2.14597 * 0.3 = 0.6438; 1-D N 1024: half ceil(0.6438 * 1023) = 659,
  // span 1319 (of 2047); 2-D 32x32: half ceil(0.6438 * 31) = 20, span 41x41 (of 63x63).
  auto one = std::dynamic_pointer_cast<GaussianSpan>(hook("gaussian_span", context(64, 8, {1024})));
  BOOST_REQUIRE(one);
  BOOST_TEST(one->half_widths() == std::vector<int64_t>{659}, boost::test_tools::per_element());
  BOOST_TEST(one->span_sizes() == std::vector<int64_t>{1319}, boost::test_tools::per_element());
  auto two = std::dynamic_pointer_cast<GaussianSpan>(hook("gaussian_span", context(64, 8, {32, 32})));
  BOOST_TEST(two->half_widths() == (std::vector<int64_t>{20, 20}), boost::test_tools::per_element());
  BOOST_TEST(two->span_sizes() == (std::vector<int64_t>{41, 41}), boost::test_tools::per_element());
  auto box = two->key_range(Positions::grid({32, 32}));
  BOOST_REQUIRE(box.has_value());
  BOOST_TEST((box->lo == std::vector<int64_t>{-20, -20}));
  BOOST_TEST((box->hi == std::vector<int64_t>{20, 20}));
  // The classification token (index 1023) sees keys 364..1023 in 1-D.
  const OffsetBox one_box = *one->key_range(Positions::sequence(1024));
  BOOST_TEST(!one_box.contains({363 - 1023}));
  BOOST_TEST(one_box.contains({364 - 1023}));
  // Full coverage needs sigma >= 1 / 2.146 = 0.466; no threshold means the full grid.
  auto wide = std::dynamic_pointer_cast<GaussianSpan>(hook("gaussian_span", context(64, 8, {1024}), {{"sigma", "0.47"}}));
  BOOST_TEST(wide->span_sizes()[0] == 2047);
  auto none = std::dynamic_pointer_cast<GaussianSpan>(hook("gaussian_span", context(64, 8, {1024}), {{"threshold", "-1"}}));
  BOOST_TEST(!none->key_range(Positions::sequence(1024)).has_value());
  BOOST_TEST(none->span_sizes()[0] == 2047);
}

BOOST_AUTO_TEST_CASE(five_token_mask_example) {
  // N 5, span size 3: half ceil(2.146 * 0.1 * 4) = ceil(0.858) = 1.
  auto span = hook("gaussian_span", context(8, 2, {5}), {{"sigma", "0.1"}});
  const OffsetBox box = *span->key_range(Positions::sequence(5));
  std::vector<float> allowed;
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 5; ++j) allowed.push_back(box.contains({j - i}) ? 1.0f : 0.0f);
  const std::vector<float> rows{1, 1, 0, 0, 0,  //
                                1, 1, 1, 0, 0,  //
                                0, 1, 1, 1, 0,  //
                                0, 0, 1, 1, 1,  //
                                0, 0, 0, 1, 1};
  BOOST_TEST(allowed == rows, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(gaussian_values_on_the_dense_layout) {
  // G*[i, j] = exp(-1/2 ((j - i) / (N - 1))^2 / sigma^2); at |x| = 1, sigma 0.3: 0.0039.
  const int64_t N = 7;
  auto span = std::dynamic_pointer_cast<GaussianSpan>(hook("gaussian_span", context(8, 2, {N})));
  span->to(kFloat64);
  Positions pos = Positions::sequence(N);
  Tensor g = on_pairs(span->gaussian(pos, kFloat64), pos);  // [N, N]
  const double sigma = static_cast<double>(0.3f);
  double worst = 0;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const double x = double(j - i) / double(N - 1);
      worst = std::max(worst, std::abs(g.at<double>({i, j}) - std::exp(-0.5 * x * x / (sigma * sigma))));
    }
  BOOST_TEST(worst < 1e-12);
  BOOST_TEST(std::abs(g.at<double>({0, N - 1}) - 0.0038659) < 1e-6);
  // 2-D: the product of the two axes' Gaussians with their own sigmas.
  auto two = std::dynamic_pointer_cast<GaussianSpan>(hook("gaussian_span", context(8, 2, {3, 4})));
  Variable sigma2 = two->sigma();
  sigma2.mutable_value().copy_(Tensor::from_vector(std::vector<float>{0.5f, 0.25f}, {2}));
  Positions grid = Positions::grid({3, 4});
  Tensor g2 = on_pairs(two->gaussian(grid, kFloat32), grid);
  // query (0, 0) = token 0, key (2, 1) = token 9: x = (1, 1/3).
  const double expect = std::exp(-0.5 * (1.0 / 0.25 + (1.0 / 9.0) / 0.0625));
  BOOST_TEST(std::abs(g2.at<float>({0, 9}) - expect) < 1e-6);
}

BOOST_AUTO_TEST_CASE(the_gaussian_multiplies_all_logits_or_only_the_positional_ones) {
  // all_logits: a modulation table (content and positional terms); positional_logits: a
  // positional_modulation table (attention_terms.h applies both before the softmax).
  Positions pos = Positions::sequence(4);
  auto all = std::dynamic_pointer_cast<GaussianSpan>(hook("gaussian_span", context(4, 1, {4})));
  all->to(kFloat64);
  const Tensor g = all->gaussian(pos, kFloat64).value();
  const AttentionTerms a = all->attention_terms(pos, kFloat64);
  BOOST_REQUIRE(a.modulation.defined());
  BOOST_TEST(!a.positional_modulation.defined());
  BOOST_TEST(max_abs_diff(a.modulation.value(), g) == 0.0);
  auto pos_only = hook("gaussian_span", context(4, 1, {4}), {{"multiply", "positional_logits"}});
  pos_only->to(kFloat64);
  const AttentionTerms b = pos_only->attention_terms(pos, kFloat64);
  BOOST_TEST(!b.modulation.defined());
  BOOST_REQUIRE(b.positional_modulation.defined());
  BOOST_TEST(max_abs_diff(b.positional_modulation.value(), g) == 0.0);
}

BOOST_AUTO_TEST_CASE(sigma_towards_zero_never_gives_nan) {
  for (double s : {0.0, 1e-12, -1e-5}) {
    Generator gen(3);
    Positions pos = Positions::grid({3, 4});
    auto span = hook("gaussian_span", context(8, 2, {3, 4}), {{"sigma", fmt::format("{}", s)}});
    auto siren = hook("siren", context(8, 2, {3, 4}));
    MultiHeadAttention mha(8, 2, gen, {siren, span});
    for (AttentionPath path : {AttentionPath::Reference, AttentionPath::Fused}) {
      mha.set_path(path);
      mha.zero_grad();
      Variable x(normal({2, 12, 8}, 0, 1, gen), true);
      Variable out = mha.forward(x, {}, &pos);
      sum(out).backward();
      BOOST_TEST(std::isfinite(sum(abs(out.value())).item()));
      BOOST_TEST(std::isfinite(sum(abs(x.grad())).item()));
      const Tensor& sg = std::dynamic_pointer_cast<GaussianSpan>(span)->sigma().grad();
      BOOST_TEST((!sg.defined() || std::isfinite(sum(abs(sg)).item())));
    }
    // The clamped sigma (min_sigma 1e-3) keeps the centre: half ceil(2.146e-3 * 3) = 1.
    BOOST_TEST(std::dynamic_pointer_cast<GaussianSpan>(span)->half_widths() == (std::vector<int64_t>{1, 1}),
               boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(learn_sigma_false_freezes_sigma) {
  auto span = std::dynamic_pointer_cast<GaussianSpan>(hook("gaussian_span", context(8, 2, {5}), {{"learn_sigma", "false"}}));
  BOOST_TEST(!span->sigma().requires_grad());
  BOOST_TEST(span->num_parameters() == 1);
  BOOST_TEST(span->summary().find("sigma=[0.3]") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

// ============================================================================ schemes

BOOST_AUTO_TEST_SUITE(posattn_schemes)

BOOST_AUTO_TEST_CASE(siren_module_layers_and_init) {
  Generator gen(5);
  SirenOptions o;
  o.in_features = 2;
  o.hidden = 64;
  o.out_features = 64;
  o.layers = 3;
  o.omega = 10;
  Siren siren(o, gen);
  auto names = siren.named_parameters();
  BOOST_REQUIRE(names.size() == 6u);
  BOOST_TEST(names[0].first == "layers.0.weight");
  BOOST_TEST(names[5].first == "layers.2.bias");
  check_uniform_bound("first (2-D)", siren.layers()[0]->weight().value(), 0.5);
  check_uniform_bound("hidden", siren.layers()[1]->weight().value(), std::sqrt(6.0 / 64) / 10);
  check_uniform_bound("last", siren.layers()[2]->weight().value(), std::sqrt(3.0 / 64));
  for (int i = 0; i < 3; ++i) BOOST_TEST(max_abs(siren.layers()[i]->bias().value()) == 0.0);
  // forward = W3 sin(10 (W2 sin(10 (W1 x + b1)) + b2)) + b3, written out.
  Tensor x = uniform({5, 2}, -1, 1, gen);
  auto lin = [&](int i, const Tensor& h) {
    return add(matmul(h, siren.layers()[i]->weight().value().transpose(0, 1)), siren.layers()[i]->bias().value());
  };
  Tensor expect = lin(2, sin(mul_scalar(lin(1, sin(mul_scalar(lin(0, x), 10))), 10)));
  BOOST_TEST(max_abs_diff(siren.forward(Variable(x)).value(), expect) < 1e-5);
  // omega_initial applies to the first activation only.
  o.omega_initial = 30;
  Generator gen2(5);
  Siren s30(o, gen2);
  Tensor expect30 = lin(2, sin(mul_scalar(lin(1, sin(mul_scalar(lin(0, x), 30))), 10)));
  BOOST_TEST(max_abs_diff(s30.forward(Variable(x)).value(), expect30) < 1e-5);
  check_error([&] { o.layers = 0; Siren bad(o, gen); }, {"at least one layer"});
}

BOOST_AUTO_TEST_CASE(siren_scores_follow_formula_1_and_the_index_map) {
  // positional[b, h, i, j] = (q_i + v_h) . E_h[j - i + N - 1] / sqrt(Dh) and
  // content[h, j] = u_h . k_j / sqrt(Dh), for 1-D (P[i,j] = E[j-i+N-1]) and a 2-D grid.
  for (const Positions& pos : {Positions::sequence(6), Positions::grid({3, 4})}) {
    const int64_t H = 2, Dh = 3, D = H * Dh, N = pos.tokens();
    auto h = std::dynamic_pointer_cast<SirenRelative>(hook("siren", context(D, H, pos.structure())));
    BOOST_REQUIRE(h);
    h->to(kFloat64);
    Generator gen(9);
    Tensor q = normal({2, H, N, Dh}, 0, 1, gen, kFloat64), k = normal({2, H, N, Dh}, 0, 1, gen, kFloat64);
    const AttentionTerms terms = h->attention_terms(pos, kFloat64);
    const Tensor positional = positional_on_pairs(terms, q, pos), content = content_bias_on_pairs(terms, k);
    Tensor E = h->encode(pos, kFloat64).value();  // [R, D]
    BOOST_TEST(E.size(0) == PositionPair(pos).relative_size());
    const Tensor u = h->u().value(), v = h->v().value();
    const std::vector<int64_t> S = pos.structure();
    Tensor coords = pos.coordinates();
    double worst_pos = 0, worst_content = 0;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t hh = 0; hh < H; ++hh)
        for (int64_t i = 0; i < N; ++i)
          for (int64_t j = 0; j < N; ++j) {
            int64_t r = 0;  // E index of key - query, row-major over (2S_d - 1)
            for (size_t d = 0; d < S.size(); ++d)
              r = r * (2 * S[d] - 1) + coords.at<int64_t>({j, int64_t(d)}) - coords.at<int64_t>({i, int64_t(d)}) + S[d] - 1;
            if (S.size() == 1) BOOST_REQUIRE(r == j - i + N - 1);
            double p = 0, c = 0;
            for (int64_t d = 0; d < Dh; ++d) {
              const double e = E.at<double>({r, hh * Dh + d});
              p += (q.at<double>({b, hh, i, d}) + v.at<double>({hh, d})) * e;
              c += u.at<double>({hh, d}) * k.at<double>({b, hh, j, d});
            }
            p /= std::sqrt(double(Dh));
            c /= std::sqrt(double(Dh));
            const int64_t cb = content.size(0) == 1 ? 0 : b, ci = content.size(2) == 1 ? 0 : i;
            worst_pos = std::max(worst_pos, std::abs(positional.at<double>({b, hh, i, j}) - p));
            worst_content = std::max(worst_content, std::abs(content.at<double>({cb, hh, ci, j}) - c));
          }
    BOOST_TEST(worst_pos < 1e-12);
    BOOST_TEST(worst_content < 1e-12);
  }
}

BOOST_AUTO_TEST_CASE(siren_input_is_the_normalised_relative_grid) {
  // E[r] = Siren(offset / (S - 1)); with normalized: false, the integer offset.
  Positions pos = Positions::grid({3, 5});
  for (bool normalized : {true, false}) {
    auto h = std::dynamic_pointer_cast<SirenRelative>(
        hook("siren", context(4, 2, {3, 5}), {{"normalized", normalized ? "true" : "false"}, {"hidden", "8"}}));
    Tensor x = normalized ? PositionPair(pos).normalised_relative_grid(kFloat32) : PositionPair(pos).relative_offsets().to(kFloat32);
    BOOST_TEST(max_abs_diff(h->encode(pos, kFloat32).value(), h->siren().forward(Variable(x)).value()) == 0.0);
  }
}

BOOST_AUTO_TEST_CASE(baseline_sinusoids_and_projection) {
  // S[r, 2m] = sin(r 10000^(-2m/d_s)), S[r, 2m+1] = cos(...), r = 0..2N-2 (indices, not offsets).
  Tensor s = baseline_sinusoids(9, 4, kFloat64);
  BOOST_TEST(s.at<double>({0, 0}) == 0.0);
  BOOST_TEST(s.at<double>({0, 1}) == 1.0);
  BOOST_TEST(std::abs(s.at<double>({2, 0}) - std::sin(2.0)) < 1e-15);
  BOOST_TEST(std::abs(s.at<double>({2, 2}) - std::sin(0.02)) < 1e-15);
  BOOST_TEST(std::abs(s.at<double>({8, 3}) - std::cos(0.08)) < 1e-15);
  auto h = std::dynamic_pointer_cast<SinusoidBaseline>(hook("txl_baseline", context(8, 2, {5}), {{"hidden", "4"}}));
  BOOST_REQUIRE(h);
  h->to(kFloat64);
  Tensor E = h->encode(Positions::sequence(5), kFloat64).value();
  Tensor expect = add(matmul(s, h->proj().weight().value().transpose(0, 1)), h->proj().bias().value());
  BOOST_TEST(max_abs_diff(E, expect) < 1e-14);
  // Parameters: u, v, proj (with bias): 2*2*4 + 4*8 + 8.
  BOOST_TEST(h->num_parameters() == 16 + 32 + 8);
}

BOOST_AUTO_TEST_CASE(transformer_xl_standard_score) {
  // score_ij = [(q_i + u).k_j + (q_i + v).W_kR R_{i-j}] / sqrt(Dh), R of width D with
  // concatenated sin | cos halves at the distance i - j.
  Tensor r = txl_sinusoids(-2, 2, 4, kFloat64);  // entries r = 0..4, offsets -2..2, distances 2..-2
  BOOST_TEST(std::abs(r.at<double>({0, 0}) - std::sin(2.0)) < 1e-15);
  BOOST_TEST(std::abs(r.at<double>({0, 1}) - std::sin(0.02)) < 1e-15);
  BOOST_TEST(std::abs(r.at<double>({0, 2}) - std::cos(2.0)) < 1e-15);
  BOOST_TEST(std::abs(r.at<double>({4, 1}) - std::sin(-0.02)) < 1e-15);
  const int64_t H = 2, Dh = 2, D = 4, N = 5;
  for (const char* init : {"xavier", "txl"}) {
    auto h = std::dynamic_pointer_cast<TransformerXLRelative>(hook("transformer_xl", context(D, H, {N}), {{"init", init}}));
    BOOST_REQUIRE(h);
    BOOST_TEST(!h->w_kr().bias().defined());
    if (std::string(init) == "txl") BOOST_TEST(max_abs(h->u().value()) < 0.1);  // N(0, 0.02)
    h->to(kFloat64);
    Generator gen(2);
    Tensor q = normal({1, H, N, Dh}, 0, 1, gen, kFloat64), k = normal({1, H, N, Dh}, 0, 1, gen, kFloat64);
    Positions pos = Positions::sequence(N);
    Tensor total = logits_on_pairs(h->attention_terms(pos, kFloat64), q, k, pos, 1.0 / std::sqrt(2.0));
    Tensor R = txl_sinusoids(-(N - 1), N - 1, D, kFloat64), W = h->w_kr().weight().value();
    Tensor u = h->u().value(), v = h->v().value();
    double worst = 0;
    for (int64_t hh = 0; hh < H; ++hh)
      for (int64_t i = 0; i < N; ++i)
        for (int64_t j = 0; j < N; ++j) {
          const int64_t entry = (N - 1) - (i - j);  // the R row of distance i - j
          double s = 0;
          for (int64_t d = 0; d < Dh; ++d) {
            double wr = 0;  // (W_kR R_{i-j})[hh * Dh + d]
            for (int64_t e = 0; e < D; ++e) wr += W.at<double>({hh * Dh + d, e}) * R.at<double>({entry, e});
            s += (q.at<double>({0, hh, i, d}) + u.at<double>({hh, d})) * k.at<double>({0, hh, j, d}) +
                 (q.at<double>({0, hh, i, d}) + v.at<double>({hh, d})) * wr;
          }
          worst = std::max(worst, std::abs(total.at<double>({0, hh, i, j}) - s / std::sqrt(double(Dh))));
        }
    BOOST_TEST(worst < 1e-12);
  }
}

BOOST_AUTO_TEST_CASE(relative_scores_are_shift_invariant) {
  // Shift the tokens by s (a query/key pair keeps its offset): every relative scheme (and the
  // Gaussian span) gives the pair the same logit. Compared on rows of the dense score matrix.
  struct Case {
    std::string name;
    Positions pos;
    std::vector<int64_t> shift;
  };
  for (const Case& c : {Case{"siren", Positions::sequence(9), {3}}, Case{"txl_baseline", Positions::sequence(9), {3}},
                        Case{"transformer_xl", Positions::sequence(9), {3}}, Case{"siren", Positions::grid({4, 5}), {1, 2}}}) {
    const int64_t H = 2, Dh = 3, N = c.pos.tokens(), n = c.pos.dims();
    auto scheme = hook(c.name, context(H * Dh, H, c.pos.structure()));
    auto span = hook("gaussian_span", context(H * Dh, H, c.pos.structure()), {{"threshold", "-1"}});
    scheme->to(kFloat64);
    span->to(kFloat64);
    Generator gen(4);
    Tensor q = normal({1, H, N, Dh}, 0, 1, gen, kFloat64), k = normal({1, H, N, Dh}, 0, 1, gen, kFloat64);
    // q2/k2: token t moved to t + shift (coordinates), other tokens random.
    Tensor q2 = normal({1, H, N, Dh}, 0, 1, gen, kFloat64), k2 = normal({1, H, N, Dh}, 0, 1, gen, kFloat64);
    Tensor coords = c.pos.coordinates();
    const auto& S = c.pos.structure();
    std::vector<int64_t> moved(static_cast<size_t>(N), -1);
    for (int64_t t = 0; t < N; ++t) {
      int64_t flat = 0;
      bool inside = true;
      for (int64_t d = 0; d < n; ++d) {
        const int64_t x = coords.at<int64_t>({t, d}) + c.shift[size_t(d)];
        inside = inside && x < S[size_t(d)];
        flat = flat * S[size_t(d)] + x;
      }
      if (!inside) continue;
      moved[size_t(t)] = flat;
      q2.narrow(2, flat, 1).copy_(q.narrow(2, t, 1));
      k2.narrow(2, flat, 1).copy_(k.narrow(2, t, 1));
    }
    const AttentionTerms terms = combine_attention_terms({scheme, span}, c.pos, kFloat64);
    auto scores = [&](const Tensor& qq, const Tensor& kk) {
      return logits_on_pairs(terms, qq, kk, c.pos, 1.0 / std::sqrt(double(Dh)));
    };
    Tensor a = scores(q, k), b = scores(q2, k2);
    double worst = 0;
    int compared = 0;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < N; ++j) {
        if (moved[size_t(i)] < 0 || moved[size_t(j)] < 0) continue;
        for (int64_t hh = 0; hh < H; ++hh)
          worst = std::max(worst, std::abs(a.at<double>({0, hh, i, j}) - b.at<double>({0, hh, moved[size_t(i)], moved[size_t(j)]})));
        ++compared;
      }
    BOOST_TEST(compared > 10);
    BOOST_TEST(worst < 1e-12, c.name << " on " << c.pos.describe() << ": shifted scores differ by " << worst);
  }
}

BOOST_AUTO_TEST_CASE(errors_name_the_problem) {
  check_error([] { hook("txl_baseline", context(8, 2, {4, 4})); }, {"txl_baseline", "1-D only", "4x4", "siren"});
  check_error([] { hook("transformer_xl", context(8, 2, {4, 4})); }, {"transformer_xl", "1-D only"});
  // Built for 1-D, run on a grid.
  auto base = std::dynamic_pointer_cast<SinusoidBaseline>(hook("txl_baseline", context(8, 2, {16})));
  check_error([&] { base->encode(Positions::grid({4, 4}), kFloat32); }, {"1-D only", "grid 4x4"});
  auto siren = std::dynamic_pointer_cast<SirenRelative>(hook("siren", context(8, 2, {4, 4})));
  check_error([&] { siren->encode(Positions::sequence(16), kFloat32); }, {"siren", "2-D"});
  check_error([] { hook("siren", context(8, 2, {5}), {{"hidden", "0"}}); }, {"siren", "'hidden' must be >= 1"});
  check_error([] { hook("siren", context(8, 2, {5}), {{"omega", "ten"}}); }, {"'omega' must be a number"});
  check_error([] { hook("siren", context(8, 2, {5}), {{"omgea", "10"}}); }, {"siren", "unknown option omgea", "omega"});
  check_error([] { hook("siren", context(8, 2, {})); }, {"siren", "structure"});
  check_error([] { hook("txl_baseline", context(8, 2, {5}), {{"hidden", "5"}}); }, {"'hidden' must be even"});
  check_error([] { hook("transformer_xl", context(8, 2, {5}), {{"init", "gauss"}}); }, {"'init' must be one of xavier, txl"});
  check_error([] { hook("gaussian_span", context(8, 2, {5}), {{"multiply", "probs"}}); },
              {"'multiply' must be one of all_logits, positional_logits"});
  check_error([] { hook("gaussian_span", context(8, 2, {5}), {{"threshold", "1.5"}}); }, {"'threshold' must be < 1"});
  check_error([] { hook("gaussian_span", context(8, 2, {5}), {{"min_sigma", "0"}}); }, {"'min_sigma' must be a positive"});
  auto span = hook("gaussian_span", context(8, 2, {5}));
  check_error([&] { span->key_range(Positions::grid({2, 3})); }, {"gaussian_span", "1-D positions"});
  // Unknown names in the classifier config list the registered ones.
  PosattnClassifierConfig c;
  c.width = 8;
  c.heads = 2;
  c.layers = 1;
  c.ff_width = 8;
  c.structure = {4, 4};
  c.positional = "sirens";
  Generator gen(1);
  check_error([&] { PosattnClassifier m(c, gen); }, {"unknown attention hook 'sirens'", "siren", "txl_baseline", "gaussian_span"});
  c.positional = "txl_baseline";
  c.dims = 2;
  check_error([&] { PosattnClassifier m(c, gen); }, {"txl_baseline", "1-D only"});
  c.positional = "siren";
  c.pooling = "first";
  check_error([&] { PosattnClassifier m(c, gen); }, {"unknown pooling 'first'"});
  c.pooling = "last";
  PosattnClassifier ok(c, gen);
  check_error([&] { ok.forward(Variable(Tensor::zeros({1, 16, 2}))); }, {"PosattnClassifier", "[B, N, 3]"});
  check_error([&] { ok.forward(Variable(Tensor::zeros({1, 15, 3}))); }, {"2-D positions"});
}

BOOST_AUTO_TEST_SUITE_END()

// ============================================================================ gradients and paths

BOOST_AUTO_TEST_SUITE(posattn_gradients)

BOOST_AUTO_TEST_CASE(gradcheck_every_scheme_through_attention) {
  // float64, H 2, Dh 3: every parameter (q/k/v/out, SIREN weights, u, v, W_kR, proj, sigma) and
  // the input, on the reference and the fused path.
  struct Case {
    std::string scheme;
    Positions pos;
    bool span;
    std::string multiply;
  };
  const std::vector<Case> cases{
      {"siren", Positions::sequence(5), true, "all_logits"},
      {"siren", Positions::grid({4, 3}), true, "all_logits"},
      {"siren", Positions::grid({4, 3}), true, "positional_logits"},
      {"txl_baseline", Positions::sequence(5), true, "all_logits"},
      {"transformer_xl", Positions::sequence(5), false, "all_logits"},
      {"transformer_xl", Positions::sequence(5), true, "all_logits"},
  };
  for (const Case& c : cases)
    for (AttentionPath path : {AttentionPath::Reference, AttentionPath::Fused}) {
      BOOST_TEST_MESSAGE(c.scheme << " on " << c.pos.describe() << (c.span ? " + span " + c.multiply : "") << " ("
                                  << attention_path_name(path) << ")");
      Generator gen(11);
      const HookContext ctx = context(6, 2, c.pos.structure());
      // A narrow SIREN / sinusoid (hidden 8) keeps the number of perturbed parameters small.
      HookOptions scheme_options;
      if (c.scheme != "transformer_xl") scheme_options = HookOptions({{"hidden", "8"}});
      std::vector<std::shared_ptr<AttentionHook>> hooks{make_hook(HookSpec{c.scheme, scheme_options}, ctx, gen)};
      // sigma 0.3: half = ceil(2.146 * 0.3 * (S - 1)) = 3 (S 5), 2 (S 4), 2 (S 3): boxes away from
      // their rounding edges, so the finite differences do not cross a box change.
      if (c.span)
        hooks.push_back(make_hook(HookSpec{"gaussian_span", HookOptions({{"multiply", c.multiply}})}, ctx, gen));
      MultiHeadAttention mha(6, 2, gen, hooks);
      mha.set_path(path);
      check_module_gradients(mha, normal({2, c.pos.tokens(), 6}, 0, 1, gen),
                             [&](const Variable& x) { return mha.forward(x, {}, &c.pos); });
    }
}

BOOST_AUTO_TEST_CASE(reference_and_fused_paths_agree_float32) {
  // SIREN + Gaussian span with a threshold box: 1-D and 2-D, forward and every gradient.
  for (const Positions& pos : {Positions::sequence(40), Positions::grid({9, 7})}) {
    Generator gen(12);
    const HookContext ctx = context(16, 2, pos.structure());
    auto siren = make_hook(HookSpec{"siren", {}}, ctx, gen);
    // sigma 0.15: half ceil(2.146 * 0.15 * 39) = 13 in 1-D (W 27 of N 40); 3 x 2 on 9x7 (W 35 of 63).
    auto span = make_hook(HookSpec{"gaussian_span", HookOptions({{"sigma", "0.15"}})}, ctx, gen);
    MultiHeadAttention mha(16, 2, gen, {siren, span});
    const int64_t N = pos.tokens();
    Tensor x = normal({3, N, 16}, 0, 1, gen), w = normal({3, N, 16}, 0, 1, gen);
    auto run = [&](AttentionPath path) {
      mha.set_path(path);
      mha.zero_grad();
      Variable xv(x, true);
      Variable out = mha.forward(xv, {}, &pos);
      sum(out * Variable(w)).backward();
      std::vector<Tensor> r{out.value(), xv.grad()};
      for (auto& p : mha.parameters()) r.push_back(p.grad());
      return r;
    };
    auto ref = run(AttentionPath::Reference);
    BOOST_TEST(!mha.last_forward_fused());
    auto fast = run(AttentionPath::Fused);
    BOOST_TEST(mha.last_forward_fused());
    BOOST_TEST(mha.last_computed_share(pos) < 1.0);
    auto names = mha.named_parameters();
    for (size_t i = 0; i < ref.size(); ++i) {
      const std::string what = i == 0 ? "output" : i == 1 ? "dx" : "grad " + names[i - 2].first;
      const double scale = std::max(1.0, max_abs(ref[i]));
      BOOST_TEST_MESSAGE(pos.describe() << " " << what << ": reference vs fused max |diff| " << max_abs_diff(ref[i], fast[i]));
      BOOST_TEST(max_abs_diff(ref[i], fast[i]) < 2e-5 * scale, pos.describe() << " " << what << " differs by "
                                                                             << max_abs_diff(ref[i], fast[i]));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ============================================================================ classifier

BOOST_AUTO_TEST_SUITE(posattn_classifier)

BOOST_AUTO_TEST_CASE(parameter_counts_match_the_spec) {
  struct Case {
    std::string positional;
    int64_t dims;
    bool span;
    int64_t expect;
  };
  for (const Case& c : {Case{"txl_baseline", 1, false, 231754}, Case{"siren", 1, false, 257482},
                        Case{"siren", 2, false, 257866}, Case{"siren", 1, true, 257488}, Case{"siren", 2, true, 257878}}) {
    Generator gen(1);
    PosattnClassifier model(thesis_config(c.positional, c.dims, c.span), gen);
    BOOST_TEST_MESSAGE(c.positional << " " << c.dims << "-D" << (c.span ? " + span" : "") << ": "
                                    << model.num_parameters() << " parameters");
    BOOST_TEST(model.num_parameters() == c.expect, c.positional << " " << c.dims << "-D span=" << c.span);
  }
}

BOOST_AUTO_TEST_CASE(initialisation_bounds_match_the_spec) {
  for (int64_t dims : {1, 2}) {
    Generator gen(2);
    PosattnClassifier model(thesis_config("siren", dims, true), gen);
    for (int layer : {0, 5}) {
      const std::string p = fmt::format("blocks.{}.attn.", layer);
      check_uniform_bound(p + "siren first", model.parameter(p + "hooks.0.siren.layers.0.weight").value(), dims == 1 ? 1.0 : 0.5);
      check_uniform_bound(p + "siren hidden", model.parameter(p + "hooks.0.siren.layers.1.weight").value(), 0.030619);
      check_uniform_bound(p + "siren last", model.parameter(p + "hooks.0.siren.layers.2.weight").value(), 0.216506);
      for (int i = 0; i < 3; ++i) BOOST_TEST(max_abs(model.parameter(p + fmt::format("hooks.0.siren.layers.{}.bias", i)).value()) == 0.0);
      check_uniform_bound(p + "u", model.parameter(p + "hooks.0.u").value(), 0.612372);
      check_uniform_bound(p + "v", model.parameter(p + "hooks.0.v").value(), 0.612372);
      for (const char* proj : {"q_proj", "k_proj", "v_proj"}) {
        check_uniform_bound(p + proj, model.parameter(p + proj + ".weight").value(), 0.153093);
        BOOST_TEST(max_abs(model.parameter(p + proj + ".bias").value()) == 0.0);
      }
      check_uniform_bound(p + "out_proj", model.parameter(p + "out_proj.weight").value(), 0.216506);
      BOOST_TEST(max_abs(model.parameter(p + "out_proj.bias").value()) == 0.0);
      Tensor sigma = model.parameter(p + "hooks.1.sigma").value();
      BOOST_TEST(sigma.numel() == dims);
      BOOST_TEST(std::abs(sigma.to_vector<float>()[0] - 0.3f) == 0.0f);
    }
    // Other Linears keep PyTorch's default U(+-1/sqrt(fan_in)).
    check_uniform_bound("ff.fc1", model.parameter("blocks.0.ff.fc1.weight").value(), 0.125);
    check_uniform_bound("input_proj", model.parameter("input_proj.weight").value(), 1 / std::sqrt(3.0));
  }
  Generator gen(3);
  PosattnClassifier base(thesis_config("txl_baseline", 1, false), gen);
  check_uniform_bound("baseline proj", base.parameter("blocks.0.attn.hooks.0.proj.weight").value(), 0.125);
  BOOST_TEST(max_abs(base.parameter("blocks.0.attn.hooks.0.proj.bias").value()) > 0.0);
}

BOOST_AUTO_TEST_CASE(forward_shapes_pooling_and_structure) {
  for (const std::string pooling : {"last", "mean", "max"})
    for (int64_t dims : {1, 2}) {
      PosattnClassifierConfig c;
      c.width = 16;
      c.heads = 2;
      c.layers = 2;
      c.ff_width = 32;
      c.output_hidden = 16;
      c.structure = {6, 5};
      c.dims = dims;
      c.span = true;
      c.pooling = pooling;
      c.dropout = 0.1;
      Generator gen(4);
      PosattnClassifier model(c, gen);
      model.eval();
      Tensor images = uniform({2, 6, 5, 3}, -1, 1, gen);
      Tensor logits = model.forward(Variable(images)).value();
      BOOST_TEST((logits.shape() == Shape{2, 10}));
      // [B, N, C] gives the same tokens and (dims 1, or dims 2 with the configured structure) the same positions.
      BOOST_TEST(max_abs_diff(model.forward(Variable(images.reshape({2, 30, 3}))).value(), logits) < 1e-6);
      // Same logits on the reference path (Auto ran the fused one; the span box: half
      // ceil(2.146 * 0.3 * 29) = 19 of 29 in 1-D).
      model.set_path(AttentionPath::Reference);
      BOOST_TEST(max_abs_diff(model.forward(Variable(images)).value(), logits) < 1e-5);
      BOOST_TEST(model.positions_for({6, 5}).dims() == dims);
      const auto lines = model.hook_summaries();
      BOOST_TEST(lines.size() == 2u);
      BOOST_TEST(lines[0].find("gaussian_span") != std::string::npos);
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(posattn_classifier_schemes)

BOOST_AUTO_TEST_CASE(any_registered_scheme_plugs_in) {
  // none, transformer_xl (with its options), the baseline and the absolute schemes (added to the
  // tokens, reported on a line of their own) in a 1-D model; no span.
  for (const std::string positional : {"none", "transformer_xl", "txl_baseline", "sinusoidal", "learned_absolute"}) {
    PosattnClassifierConfig c;
    c.width = 8;
    c.heads = 2;
    c.layers = 1;
    c.ff_width = 8;
    c.output_hidden = 8;
    c.structure = {3, 4};
    c.positional = positional;
    if (positional == "transformer_xl") c.positional_options = {{"init", "txl"}};
    Generator gen(6);
    PosattnClassifier model(c, gen);
    Variable logits = model.forward(Variable(uniform({2, 3, 4, 3}, -1, 1, gen)));
    BOOST_TEST((logits.shape() == Shape{2, 10}));
    sum(logits).backward();
    for (const auto& [name, p] : model.named_parameters())
      BOOST_TEST(p.grad().defined(), positional << ": " << name << " got no gradient");
    BOOST_TEST(model.hook_summaries()[0].find(positional) != std::string::npos);
    const bool absolute = positional == "sinusoidal" || positional == "learned_absolute";
    BOOST_TEST((model.absolute() != nullptr) == absolute);
    if (absolute) {
      BOOST_TEST(model.hook_summaries()[0].rfind("token embeddings: " + positional, 0) == 0);
      BOOST_TEST(model.blocks()[0]->attention().hooks().empty());
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
