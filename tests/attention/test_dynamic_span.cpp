// The dynamic span (attention/spans/dynamic_span.h): the per-token spans z_t = S sigmoid(v . x_t + b)
// and their mask rows against the formula, the per-query key ranges the fused path visits (the
// computed supports, and keys beyond them really left unread), gradcheck (the layer: x, v, b and
// the projections; the ops: q, k, v and the row table, on both paths), the fused path against
// the reference (every gradient, float64) in self-attention and over a memory as charlm's
// layers attend, cached token-by-token decoding against one causal forward, the span loss and its gradient, the PyTorch golden files of
// tools/golden_dynamic_span.py, and the errors.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "attention/fused/fused_attention.h"
#include "attention/fused/fused_kernels.h"
#include "attention/multi_head_attention.h"
#include "attention/reference_attention.h"
#include "attention/registry.h"
#include "attention/spans/dynamic_span.h"
#include "autograd/gradcheck.h"
#include "nn/adam.h"
#include "nn/safetensors.h"
#include "posgrad.h"
#include "tests/attention_paths.h"
#include "tests/golden_compare.h"
#include "tests/module_gradcheck.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_error;
using posgrad::test::check_module_gradients;
using posgrad::test::check_runs_agree;
using posgrad::test::PathRun;
using posgrad::test::run_path;
namespace bdata = boost::unit_test::data;

namespace {

std::shared_ptr<DynamicSpan> make_span(std::map<std::string, std::string> options, int64_t D, int64_t H, int64_t N) {
  Generator gen(3);
  auto hook = std::dynamic_pointer_cast<DynamicSpan>(make_hook(
      HookSpec{"dynamic_span", HookOptions(std::move(options))}, HookContext{.width = D, .heads = H, .structure = {N}}, gen));
  BOOST_REQUIRE(hook);
  hook->to(kFloat64);
  return hook;
}

// Random v (scale `scale`) and the given b, in place, so that the spans differ per token.
void set_parameters(DynamicSpan& span, double scale, const std::vector<double>& b, uint64_t seed) {
  Generator gen(seed);
  Tensor v = span.v().value();
  v.copy_(normal(v.shape(), 0, scale, gen, kFloat64));
  Tensor bias = span.b().value();
  bias.copy_(Tensor::from_vector(b, {static_cast<int64_t>(b.size())}));
}

// t[index] = value in a contiguous float64 tensor.
void put(Tensor& t, const std::vector<int64_t>& index, double value) {
  BOOST_REQUIRE(t.is_contiguous());
  int64_t flat = 0;
  for (size_t a = 0; a < index.size(); ++a) flat = flat * t.size(static_cast<int64_t>(a)) + index[a];
  t.data<double>()[flat] = value;
}

// The formula: z = S sigmoid(v_h . x_t + b_h).
double spec_span(const Tensor& x, const Tensor& v, const Tensor& b, int64_t S, int64_t batch, int64_t h, int64_t t) {
  double a = b.at<double>({h});
  for (int64_t d = 0; d < x.size(2); ++d) a += v.at<double>({h, d}) * x.at<double>({batch, t, d});
  return static_cast<double>(S) / (1.0 + std::exp(-a));
}

// m(d) = clamp((R + z - (d - 1)) / R, 0, 1) for 1 <= d <= S, else 0.
double dynamic_span_mask_by_formula(double z, double S, double ramp, int64_t d) {
  if (d < 1 || d > S) return 0.0;
  return std::clamp((ramp + z - static_cast<double>(d - 1)) / ramp, 0.0, 1.0);
}

// The farthest key query t keeps: min(S, ceil(z + R), t) (its position t in the keys' frame).
int64_t spec_kept(double z, int64_t S, double ramp, int64_t t) {
  return std::min<int64_t>({S, static_cast<int64_t>(std::ceil(z + ramp)), t});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dynamic_span)

BOOST_AUTO_TEST_CASE(spans_and_mask_rows_follow_the_formula_per_token) {
  const int64_t D = 6, H = 2, N = 14, S = 10;
  const double ramp = 3;
  auto span = make_span({{"max_span", "10"}, {"ramp", "3"}}, D, H, N);
  set_parameters(*span, 0.8, {-1.0, 0.5}, 5);
  Generator gen(6);
  const Tensor x = normal({2, N, D}, 0, 1, gen, kFloat64);
  span->set_query_inputs(Variable(x));
  const PositionPair pos(Positions::sequence(N));
  const Tensor z = span->spans().value();
  BOOST_TEST((z.shape() == Shape{2, H, N}));
  const Variable rows = span->attention_terms(pos, kFloat64).row_prob_mask;
  const int64_t W = rows.size(3);
  double zmax = 0.0, zmin = S;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < N; ++t) {
        const double want = spec_span(x, span->v().value(), span->b().value(), S, b, h, t);
        BOOST_TEST(std::abs(z.at<double>({b, h, t}) - want) < 1e-13);
        zmax = std::max(zmax, want), zmin = std::min(zmin, want);
        for (int64_t c = 0; c < W; ++c)  // column c is distance W - 1 - c
          BOOST_TEST(std::abs(rows.value().at<double>({b, h, t, c}) - dynamic_span_mask_by_formula(want, S, ramp, W - 1 - c)) < 1e-13);
      }
  BOOST_TEST_MESSAGE("spans from " << zmin << " to " << zmax);
  BOOST_TEST(zmax - zmin > 3.0);  // the spans really differ per token
  // The window reaches the call's longest kept distance, and the key range is that box.
  BOOST_TEST(W - 1 == std::min<int64_t>(S, static_cast<int64_t>(std::ceil(zmax + ramp))));
  BOOST_TEST(span->key_range(pos)->lo[0] == -(W - 1));
  BOOST_TEST(span->key_range(pos)->hi[0] == -1);
  // The paper's start: v = 0, b = -4 gives every token z = S sigmoid(-4).
  auto fresh = make_span({{"max_span", "10"}}, D, H, N);
  fresh->set_query_inputs(Variable(x));
  BOOST_TEST(std::abs(fresh->spans().value().at<double>({1, 1, 5}) - 10.0 / (1.0 + std::exp(4.0))) < 1e-14);
}

// The supports the kernels compute (row_support) and the runs they visit (clip_to_support), per
// query: keys t - min(S, ceil(z_t + R), t) .. t - 1, each query its own.
BOOST_AUTO_TEST_CASE(per_query_key_ranges_follow_each_span) {
  const int64_t D = 6, H = 2, N = 30, S = 24;
  const double ramp = 2;
  auto span = make_span({{"max_span", "24"}, {"ramp", "2"}}, D, H, N);
  set_parameters(*span, 1.0, {-2.0, 0.0}, 7);
  Generator gen(8);
  const Tensor x = normal({2, N, D}, 0, 1, gen, kFloat64);
  span->set_query_inputs(Variable(x));
  const PositionPair pos(Positions::sequence(N));
  const Tensor rows = span->attention_terms(pos, kFloat64).row_prob_mask.value().contiguous();
  const Tensor z = span->spans().value();
  const int64_t W = rows.size(3);
  const double* data = rows.data<double>();
  int64_t visited = 0, layer_box = 0, distinct = 0, previous = -1;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < N; ++t) {
        const int64_t kept = spec_kept(z.at<double>({b, h, t}), S, ramp, t);
        const auto support = fused_detail::row_support(data + ((b * H + h) * N + t) * W, W);
        // Every query's whole causal past as one run, cut as the kernels cut it.
        int64_t j0 = 0, r0 = N - 1 - t, len = t;
        fused_detail::clip_to_support(j0, r0, len, t, W, support);
        BOOST_TEST(len == kept, "query " << t << " keeps " << len << " keys, want " << kept);
        if (kept > 0) {
          BOOST_TEST(j0 == t - kept);
          BOOST_TEST(r0 == N - 1 - kept);  // entry of offset -kept
        }
        visited += len;
        layer_box += std::min(t, W - 1);
        if (kept != previous) ++distinct;
        previous = kept;
      }
  BOOST_TEST_MESSAGE("keys visited " << visited << " of the layer box's " << layer_box);
  BOOST_TEST(distinct > 10);               // the ranges change from token to token
  BOOST_TEST(visited < layer_box * 0.8);   // per-query ranges visit fewer keys than the layer's box
}

// A key made NaN (its k and v): the fused op's rows that skip it stay finite, the rows whose
// range holds it turn NaN. So each query reads exactly its own range of keys.
BOOST_AUTO_TEST_CASE(fused_rows_never_read_keys_beyond_their_span) {
  const int64_t D = 8, H = 2, N = 26, Dh = D / H, poisoned = 6;
  const double ramp = 2;
  auto span = make_span({{"max_span", "20"}, {"ramp", "2"}}, D, H, N);
  set_parameters(*span, 1.2, {-1.5, 0.0}, 9);
  Generator gen(10);
  span->set_query_inputs(Variable(normal({1, N, D}, 0, 1, gen, kFloat64)));
  const PositionPair pos(Positions::sequence(N));
  const AttentionTerms terms = span->attention_terms(pos, kFloat64);
  const AttentionSpec spec{pos, span->key_range(pos), Tensor(), 0.5};
  Tensor q = normal({1, H, N, Dh}, 0, 1, gen, kFloat64), k = normal({1, H, N, Dh}, 0, 1, gen, kFloat64),
         v = normal({1, H, N, Dh}, 0, 1, gen, kFloat64);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t d = 0; d < Dh; ++d) {
      put(k, {0, h, poisoned, d}, std::numeric_limits<double>::quiet_NaN());
      put(v, {0, h, poisoned, d}, std::numeric_limits<double>::quiet_NaN());
    }
  const Tensor out = fused_attention(Variable(q), Variable(k), Variable(v), terms, spec).value();
  const Tensor z = span->spans().value();
  const int64_t layer_kept = -spec.box->lo[0];  // the layer's box: the longest span of the call
  int64_t skipping = 0, reading = 0;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t t = 0; t < N; ++t) {
      const int64_t kept = spec_kept(z.at<double>({0, h, t}), 20, ramp, t);
      const bool reads = t > poisoned && t - kept <= poisoned;
      bool finite = true;
      for (int64_t d = 0; d < Dh; ++d) finite = finite && std::isfinite(out.at<double>({0, h, t, d}));
      BOOST_TEST(finite == !reads, "head " << h << " query " << t << " (kept " << kept << ")");
      if (reads) ++reading;
      else if (t > poisoned && t - layer_kept <= poisoned) ++skipping;  // in the layer's box, beyond its own span
    }
  BOOST_TEST_MESSAGE(skipping << " queries skip the key inside the layer's box (" << layer_kept << " keys back), "
                              << reading << " read it");
  BOOST_TEST(skipping > 3);
  BOOST_TEST(reading > 3);
}

BOOST_AUTO_TEST_CASE(gradcheck_layer_reference_and_fused) {
  for (AttentionPath path : {AttentionPath::Reference, AttentionPath::Fused}) {
    Generator gen(17);
    const int64_t D = 8, H = 2, N = 8;
    auto span = make_span({{"max_span", "6"}, {"ramp", "2"}, {"loss_coef", "0.1"}}, D, H, N);
    set_parameters(*span, 0.7, {-0.5, 0.3}, 12);
    MultiHeadAttention mha(D, H, gen, {span});
    mha.set_path(path);
    Tensor x = normal({2, N, D}, 0, 1, gen, kFloat64);
    // x, the span's v and b, and the q, k, v, out projections; the span loss included.
    check_module_gradients(mha, x, [&](const Variable& xv) {
      const Variable out = mha.forward(xv);  // first: the span loss reads this forward's spans
      return out + span->regulariser();
    });
    BOOST_TEST(mha.last_forward_fused() == (path == AttentionPath::Fused));
  }
}

// Central differences through both ops with q, k, v and the row table as inputs (rows with zeros
// at both ends, so the supports are cut; a key box). The zeros are a fixed pattern times the
// input: a zero at the edge of a support is where the support, and so the function, jumps.
BOOST_AUTO_TEST_CASE(gradcheck_ops_in_q_k_v_and_the_row_table) {
  Generator gen(19);
  const int64_t B = 2, H = 2, N = 9, Dh = 3, W = 6;
  const PositionPair pos(Positions::sequence(N));
  AttentionSpec spec;
  spec.positions = pos;
  spec.scale = 0.6;
  spec.box = OffsetBox{{-(W - 1)}, {0}};
  Tensor pattern = Tensor::ones({B, H, N, W}, kFloat64);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < N; ++i) {
        const int64_t far = (b + h + i) % 3, near = (i + h) % 2;  // zero columns at the ends
        for (int64_t c = 0; c < far; ++c) put(pattern, {b, h, i, c}, 0.0);
        for (int64_t c = W - near; c < W; ++c) put(pattern, {b, h, i, c}, 0.0);
      }
  const std::vector<Tensor> inputs = {normal({B, H, N, Dh}, 0, 1, gen, kFloat64), normal({B, H, N, Dh}, 0, 1, gen, kFloat64),
                                      normal({B, H, N, Dh}, 0, 1, gen, kFloat64), uniform({B, H, N, W}, 0.2, 1.0, gen, kFloat64)};
  for (bool fused : {false, true}) {
    auto fn = [&](const std::vector<Variable>& v) {
      AttentionTerms terms;
      terms.row_prob_mask = v[3] * Variable(pattern);
      return fused ? fused_attention(v[0], v[1], v[2], terms, spec) : reference_attention(v[0], v[1], v[2], terms, spec);
    };
    const GradcheckResult r = gradcheck(fn, inputs);
    BOOST_TEST(r.ok, (fused ? "fused" : "reference") << " gradcheck: " << r.message);
  }
}

BOOST_AUTO_TEST_CASE(fused_matches_reference_in_self_attention_and_over_a_memory) {
  Generator gen(23);
  const int64_t D = 8, H = 2, N = 24, M = 10, Nq = 14;
  auto span = make_span({{"max_span", "20"}, {"ramp", "3"}}, D, H, N);
  set_parameters(*span, 0.8, {-1.0, 0.5}, 13);
  MultiHeadAttention mha(D, H, gen, {span});
  mha.to(kFloat64);
  {  // self-attention, and causal
    Tensor x = normal({2, N, D}, 0, 1, gen, kFloat64), w = normal({2, N, D}, 0, 1, gen, kFloat64);
    for (bool causal : {false, true}) {
      auto forward = [&](const Variable& xv) { return mha.forward(xv, AttentionMasks{.causal = causal}); };
      PathRun ref = run_path(mha, AttentionPath::Reference, x, w, forward);
      PathRun fast = run_path(mha, AttentionPath::Fused, x, w, forward);
      BOOST_TEST(mha.last_forward_fused());
      check_runs_agree(mha, ref, fast, 1e-12, causal ? "causal self-attention" : "self-attention");
      // The first token has no key: its attention output is zero (out = out_proj's bias).
      BOOST_TEST(max_abs_diff(fast.out.select(0, 0).select(0, 0), mha.parameter("out_proj.bias").value()) < 1e-15);
    }
  }
  {  // a segment of Nq queries over [memory; segment], as charlm's layers attend (memory detached)
    const Tensor memory = normal({2, M, D}, 0, 1, gen, kFloat64);
    Tensor x = normal({2, Nq, D}, 0, 1, gen, kFloat64), w = normal({2, Nq, D}, 0, 1, gen, kFloat64);
    const PositionPair pair = PositionPair::memory(M + Nq, Nq);
    auto forward = [&](const Variable& xv) {
      return mha.forward(xv, cat({Variable(memory), xv}, 1), AttentionContext{.positions = &pair, .causal = true});
    };
    PathRun ref = run_path(mha, AttentionPath::Reference, x, w, forward);
    PathRun fast = run_path(mha, AttentionPath::Fused, x, w, forward);
    check_runs_agree(mha, ref, fast, 1e-12, "over a memory");
    // The memory is read: the first query of the segment sees keys of the memory.
    BOOST_TEST(max_abs_diff(mha.last_probs().narrow(3, 0, M), Tensor::zeros({2, H, Nq, M}, kFloat64)) > 1e-3);
  }
}

// Generation as charlm samples: token by token (then two at once) with a KeyValueCache, each new
// token's span from its own input, computes what one causal forward computes, on both paths.
BOOST_AUTO_TEST_CASE(cached_decoding_equals_one_causal_forward) {
  Generator gen(29);
  const int64_t B = 2, N = 9, D = 8, H = 2;
  auto span = make_span({{"max_span", "6"}, {"ramp", "1.5"}}, D, H, N);
  set_parameters(*span, 0.8, {-1.0, 0.5}, 30);
  MultiHeadAttention mha(D, H, gen, {span});
  mha.to(kFloat64);
  const Tensor x = normal({B, N, D}, 0, 1, gen, kFloat64);
  for (const AttentionPath path : {AttentionPath::Reference, AttentionPath::Fused}) {
    mha.set_path(path);
    const Tensor full = mha.forward(Variable(x), AttentionMasks{.causal = true}).value();
    KeyValueCache cache;
    std::vector<Tensor> steps;
    for (int64_t start = 0; start < N;) {
      const int64_t count = start < 6 ? 1 : std::min<int64_t>(2, N - start);
      const Variable xs(x.narrow(1, start, count).contiguous());
      steps.push_back(mha.forward(xs, xs, AttentionContext{.causal = true, .cache = &cache}).value());
      start += count;
    }
    posgrad::test::expect_close(fmt::format("cached decoding, {} path", attention_path_name(path)), cat(steps, 1), full,
                                1e-12, 1e-10);
  }
}

BOOST_AUTO_TEST_CASE(span_loss_value_and_gradient) {
  const int64_t D = 6, H = 3, N = 7, S = 40;
  const double coef = 0.01;
  auto span = make_span({{"max_span", "40"}, {"loss_coef", "0.01"}}, D, H, N);
  set_parameters(*span, 0.5, {-4.0, 0.0, 1.0}, 14);
  Generator gen(15);
  const Tensor x = normal({2, N, D}, 0, 1, gen, kFloat64);
  check_error([&] { span->regulariser(); }, {"dynamic_span", "no query inputs"});
  span->set_query_inputs(Variable(x));
  // coef * mean over (b, h, t) of z
  double total = 0.0;
  std::vector<double> db(H, 0.0);  // d loss / d b_h = coef / (2 H N) sum_{b, t} S s (1 - s)
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < N; ++t) {
        const double z = spec_span(x, span->v().value(), span->b().value(), S, b, h, t), s = z / S;
        total += z;
        db[static_cast<size_t>(h)] += coef / (2.0 * H * N) * S * s * (1 - s);
      }
  const Variable loss = span->regulariser();
  BOOST_TEST(std::abs(loss.item() - coef * total / (2.0 * H * N)) < 1e-15);
  span->zero_grad();
  loss.backward();
  const std::vector<double> got = span->b().grad().to_vector<double>();
  for (int64_t h = 0; h < H; ++h) BOOST_TEST(std::abs(got[static_cast<size_t>(h)] - db[static_cast<size_t>(h)]) < 1e-15);
  BOOST_TEST(got[0] < got[1]);  // b = -4: the sigmoid's flat end moves least
  BOOST_TEST(span->summary().find("mean") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bad_options_positions_and_layers_are_errors) {
  Generator gen(4);
  auto make = [&](std::map<std::string, std::string> options, std::vector<int64_t> structure) {
    return make_hook(HookSpec{"dynamic_span", HookOptions(std::move(options))},
                     HookContext{.width = 8, .heads = 2, .structure = std::move(structure)}, gen);
  };
  check_error([&] { make({}, {4, 4}); }, {"dynamic_span", "1-D sequences", "2-D grid"});
  check_error([&] { make({}, {}); }, {"dynamic_span", "set option max_span"});
  check_error([&] { make({{"ramp", "0"}}, {8}); }, {"dynamic_span", "ramp"});
  check_error([&] { make({{"max_span", "0"}}, {8}); }, {"dynamic_span", "max_span"});
  check_error([&] { make({{"loss_coef", "-1"}}, {8}); }, {"dynamic_span", "loss_coef"});
  check_error([&] { make({{"init", "0.5"}}, {8}); }, {"dynamic_span", "unknown option init"});
  auto span = std::dynamic_pointer_cast<DynamicSpan>(make({}, {8}));
  BOOST_TEST(span->max_span() == 7);  // N - 1
  BOOST_TEST(span->ramp() == 32.0);
  BOOST_TEST(span->loss_coef() == 2e-6);
  BOOST_TEST(span->b().value().to_vector<double>() == (std::vector<double>{-4.0, -4.0}), boost::test_tools::per_element());
  check_error([&] { span->key_range(Positions::sequence(8)); }, {"dynamic_span", "no query inputs"});
  check_error([&] { span->set_query_inputs(Variable(Tensor::zeros({1, 4, 6}))); }, {"dynamic_span", "[B, Nq, 8]"});
  MultiHeadAttention mha(8, 2, gen, {span});
  const Positions grid = Positions::grid({2, 2});
  check_error([&] { mha.forward(Variable(Tensor::zeros({1, 4, 8})), {}, &grid); }, {"dynamic_span", "1-D sequence"});
  // With the adaptive span in one layer: two probability masks are refused, naming both hooks.
  auto adaptive = make_hook(HookSpec{"adaptive_span", {}}, HookContext{.width = 8, .heads = 2, .structure = {8}}, gen);
  MultiHeadAttention both(8, 2, gen, {adaptive, make({}, {8})});
  check_error([&] { both.forward(Variable(Tensor::zeros({1, 8, 8}))); }, {"adaptive_span", "dynamic_span", "prob_mask"});
  // A row table on a grid is refused by both implementations.
  AttentionSpec on_grid;
  on_grid.positions = grid;
  AttentionTerms terms;
  terms.row_prob_mask = Variable(Tensor::ones({1, 1, 4, 3}));
  const Variable qkv(Tensor::zeros({1, 1, 4, 2}));
  check_error([&] { reference_attention(qkv, qkv, qkv, terms, on_grid); }, {"row_prob_mask", "1-D sequence"});
  check_error([&] { fused_attention(qkv, qkv, qkv, terms, on_grid); }, {"row_prob_mask", "1-D sequence"});
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------- PyTorch golden

namespace {
const char* kDynamicSpanGoldenFiles[] = {"dynamic_span", "dynamic_span_memory"};
}

BOOST_AUTO_TEST_SUITE(golden_dynamic_span)

// One attention layer with the dynamic span against tools/golden_dynamic_span.py: the spans, the
// output, the loss (with the span loss), the input gradient and every parameter gradient on both
// paths, then 3 Adam steps' losses.
BOOST_DATA_TEST_CASE(layer_matches_pytorch, bdata::make(kDynamicSpanGoldenFiles), file) {
  const auto golden = load_safetensors(std::string(POSGRAD_SOURCE_DIR) + "/tests/golden/" + file + ".safetensors");
  const auto cfg = nlohmann::json::parse(golden.metadata.at("config"));
  std::map<std::string, std::string> options;
  for (const auto& [key, value] : cfg["options"].items()) options[key] = value.template get<std::string>();
  const int64_t D = cfg["width"], H = cfg["heads"], Nq = cfg["queries"], M = cfg["memory"];
  const Tensor x = golden.at("x"), target = golden.at("target");
  const Tensor memory = M > 0 ? golden.at("memory") : Tensor();
  const PositionPair pair = PositionPair::memory(M + Nq, Nq);

  size_t golden_params = 0;
  for (const auto& [name, t] : golden.tensors)
    if (name.rfind("param.", 0) == 0) ++golden_params;
  struct Layer {
    std::shared_ptr<DynamicSpan> span;
    std::shared_ptr<MultiHeadAttention> mha;
  };
  auto make_layer = [&] {
    Generator gen(5);
    Layer l;
    l.span = std::dynamic_pointer_cast<DynamicSpan>(
        make_hook(HookSpec{"dynamic_span", HookOptions(options)}, HookContext{.width = D, .heads = H, .structure = {M + Nq}}, gen));
    l.mha = std::make_shared<MultiHeadAttention>(D, H, gen, std::vector<std::shared_ptr<AttentionHook>>{l.span});
    l.mha->to(kFloat64);
    StateDict state;
    for (const auto& [name, p] : l.mha->named_parameters()) state.emplace_back(name, golden.at("param." + name));
    BOOST_REQUIRE(state.size() == golden_params);
    l.mha->load_state_dict(state, /*strict=*/true);
    return l;
  };
  auto loss_of = [&](Layer& l, const Variable& xv, Variable* out) {
    Variable o = M > 0 ? l.mha->forward(xv, cat({Variable(memory), xv}, 1), AttentionContext{.positions = &pair})
                       : l.mha->forward(xv);
    if (out) *out = o;
    return mean(square(o - Variable(target))) + l.span->regulariser();
  };

  BOOST_TEST_MESSAGE(file << " (memory " << M << ", queries " << Nq << ")");
  double worst = 0.0;
  for (AttentionPath path : {AttentionPath::Reference, AttentionPath::Fused}) {
    Layer l = make_layer();
    l.mha->set_path(path);
    BOOST_TEST_MESSAGE(" path " << attention_path_name(path));
    Variable xv(x, true), out;
    Variable loss = loss_of(l, xv, &out);
    loss.backward();
    BOOST_TEST(l.mha->last_forward_fused() == (path == AttentionPath::Fused));
    worst = std::max(worst, posgrad::test::expect_close("spans", l.span->spans().value(), golden.at("spans"), 1e-12, 1e-10));
    worst = std::max(worst, posgrad::test::expect_close("out", out.value(), golden.at("out"), 1e-11, 1e-9));
    worst = std::max(worst, posgrad::test::expect_close("loss", loss.value(), golden.at("loss"), 1e-11, 1e-9));
    worst = std::max(worst, posgrad::test::expect_close("grad.input", xv.grad(), golden.at("grad.input"), 1e-11, 1e-8));
    for (const auto& [name, p] : l.mha->named_parameters())
      worst = std::max(worst, posgrad::test::expect_close("grad." + name, p.grad(), golden.at("grad." + name), 1e-11, 1e-8));
  }
  Layer l = make_layer();
  AdamOptions adam;
  adam.lr = cfg["lr"];
  Adam opt(l.mha->parameters(), adam);
  std::vector<double> losses;
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    Variable loss = loss_of(l, Variable(x), nullptr);
    loss.backward();
    opt.step();
    after_optimizer_step(*l.mha);
    losses.push_back(loss.item());
  }
  worst = std::max(worst, posgrad::test::expect_close("adam_losses (3 steps)", Tensor::from_vector(losses, {3}),
                                                      golden.at("adam_losses"), 1e-11, 1e-8));
  BOOST_TEST_MESSAGE(fmt::format(" worst |ours - pytorch| over every tensor of {}: {:.3g}", file, worst));
}

BOOST_AUTO_TEST_SUITE_END()
