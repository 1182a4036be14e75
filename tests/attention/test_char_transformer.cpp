// The char LM with adaptive span and cache (attention/lm/char_transformer.h):
//   * golden PyTorch files (tools/golden_charlm.py): logits with and without cache, the loss and
//     every gradient (span parameters included), 3 Adagrad steps with the per-tensor clip;
//   * segments with the cache give the logits of one long forward with the same window;
//   * trimming (every trimmed key has mask 0) changes the numbers only through the renormaliser's
//     1e-8: by less than 1e-9 for a random model, every positional scheme; and each kept weight
//     by exactly the factor (1 + 1e-8 / q_full) / (1 + 1e-8 / q_trimmed), q the head's in-span
//     softmax mass, which is visible (1e-3) when the span holds 4e-6 of the mass;
//   * one token at a time (incremental decoding) gives the logits of a full forward;
//   * the spans move in a short run: they grow on data that rewards looking back, and the span
//     loss with the clamp pushes them to 0 on data that does not (spec pitfall #12);
//   * the distance-space reshape (unskew) against the spec's index facts;
//   * the fused path (each query visits only its W slots) equals the reference path's dense
//     M x (W + M) product, logits and every gradient (span parameters included), for every
//     positional scheme, with a cache shorter than the window (zero slots) and longer than it;
//     the same with the dynamic span (per-token spans, v and b's gradients);
//   * a bad span (an unknown name, the dynamic span with attend_self, span_options that the
//     config sets or the span does not know) is an Error naming it;
//   * computed_pairs counts the path that runs: M W for the fused path on the CPU, M (W - s + M)
//     for the reference path, which a model on the GPU takes;
//   * on the GPU (char_transformer_cuda, skipped without one): a model on cuda:0 gives the CPU
//     copy's logits and every gradient over two cached segments for every scheme (fused CPU
//     against reference GPU), and K/V-cached decoding there gives a full forward's logits.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <tuple>
#include <nlohmann/json.hpp>

#include "attention/lm/char_transformer.h"
#include "attention/schemes/key_pe.h"
#include "nn/adagrad.h"
#include "nn/losses.h"
#include "nn/safetensors.h"
#include "posgrad.h"
#include "tests/device_support.h"
#include "tests/golden_compare.h"
#include "tests/test_support.h"

using namespace posgrad;
namespace bdata = boost::unit_test::data;
using posgrad::test::expect_close;

namespace {

CharTransformerConfig small_config(const std::string& position, bool pre_norm, int64_t max_span = 40) {
  CharTransformerConfig c;
  c.vocab = 11;
  c.layers = 2;
  c.ff_width = 32;
  c.pre_norm = pre_norm;
  c.cache_margin = 8;
  c.attention.width = 16;
  c.attention.heads = 2;
  c.attention.max_span = max_span;
  c.attention.positional = position;
  c.attention.span_ramp = 8;
  c.attention.trim_granularity = 8;
  c.attention.span_loss = 2e-3;
  return c;
}

void set_spans(CharTransformer& model, const std::vector<std::vector<double>>& c) {
  for (int64_t l = 0; l < model.num_layers(); ++l) {
    Tensor value = model.layer(l).span()->c().value();
    const auto& row = c.at(static_cast<size_t>(l));
    value.copy_(Tensor::from_vector(row, {static_cast<int64_t>(row.size())}).to(value.device()));
  }
}

// Random dynamic-span parameters (v ~ N(0, 0.3^2), b = -1), so that z_t = S sigmoid(v . x_t + b)
// differs from token to token and head to head (at v = 0 every token gets the same span).
void set_dynamic_spans(CharTransformer& model, Generator& gen) {
  for (int64_t l = 0; l < model.num_layers(); ++l) {
    DynamicSpan* span = model.layer(l).dynamic_span();
    BOOST_REQUIRE(span);
    Tensor v = span->v().value(), b = span->b().value();
    v.copy_(normal(v.shape(), 0.0, 0.3, gen, v.dtype()).to(v.device()));
    b.copy_(Tensor::full(b.shape(), -1.0, b.dtype()).to(b.device()));
  }
}

Tensor random_tokens(int64_t B, int64_t N, int64_t V, uint64_t seed) {
  Generator gen(seed);
  std::vector<int64_t> t(static_cast<size_t>(B * N));
  for (auto& v : t) v = static_cast<int64_t>(gen.next_uniform() * static_cast<double>(V)) % V;
  return Tensor::from_vector(t, {B, N});
}

Variable lm_loss(CharTransformer& model, const Variable& logits, const Tensor& targets) {
  Variable loss = cross_entropy(logits, targets);
  Variable span = model.span_loss();
  return span.defined() ? loss + span : loss;
}

// Runs model `a` and model `b` (on b's device) over the same two segments of one text, each
// carrying its own cache: 20 tokens from an empty cache (the window reaches zero slots), then 40
// (a cache longer than the trimmed window). Checks logits to `atol`/`rtol` and every parameter
// gradient to 10x that (b's values brought to the CPU).
void expect_same_over_two_segments(CharTransformer& a, Generator& ga, CharTransformer& b, Generator& gb,
                                   const std::string& label, double atol, double rtol) {
  const Device device = b.named_parameters().front().second.value().device();
  const Tensor tokens = random_tokens(2, 61, a.config().vocab, 8);
  LayerCache ca, cb;
  for (int64_t seg = 0; seg < 2; ++seg) {
    const int64_t M = seg == 0 ? 20 : 40, start = seg == 0 ? 0 : 20;
    const Tensor x = tokens.narrow(1, start, M).contiguous(), y = tokens.narrow(1, start + 1, M).contiguous();
    a.zero_grad();
    b.zero_grad();
    Variable logits_a = a.forward(x, ca, ga), logits_b = b.forward(x.to(device), cb, gb);
    const std::string what = fmt::format("{} segment {}", label, seg);
    expect_close(what + " logits", logits_b.value(), logits_a.value(), atol, rtol);
    lm_loss(a, logits_a, y).backward();
    lm_loss(b, logits_b, y.to(device)).backward();
    const auto pa = a.named_parameters(), pb = b.named_parameters();
    BOOST_REQUIRE_EQUAL(pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i) {
      BOOST_REQUIRE(pa[i].second.grad().defined());
      BOOST_REQUIRE(pb[i].second.grad().defined());
      expect_close(what + " grad." + pa[i].first, pb[i].second.grad(), pa[i].second.grad(), 10 * atol, 10 * rtol);
    }
  }
}

const char* kGoldenFiles[] = {"charlm_key_pe_postnorm.safetensors", "charlm_rope_prenorm.safetensors"};

}  // namespace

BOOST_AUTO_TEST_SUITE(char_transformer)

BOOST_AUTO_TEST_CASE(unskew_follows_the_index_facts) {
  const int64_t M = 3, W = 4;
  std::vector<double> x(static_cast<size_t>(M * (W + M)));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i + 1);
  const Tensor X = Tensor::from_vector(x, {1, M, W + M});
  const auto u = unskew(Variable(X), W).value().to_vector<double>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < W; ++j) BOOST_TEST(u[static_cast<size_t>(i * W + j)] == x[static_cast<size_t>(i * (W + M) + i + j)]);
}

BOOST_DATA_TEST_CASE(matches_pytorch, bdata::make(kGoldenFiles), file) {
  const auto golden = load_safetensors(std::string(POSGRAD_SOURCE_DIR) + "/tests/golden/" + file);
  const auto cfg = nlohmann::json::parse(golden.metadata.at("config"));
  CharTransformerConfig c = small_config(cfg["position"], cfg["pre_norm"], cfg["max_span"]);
  c.attention.span_ramp = cfg["ramp"];
  c.attention.trim_granularity = cfg["granularity"];
  c.cache_margin = cfg["cache_margin"];
  c.attention.span_loss = cfg["span_loss"];
  Generator gen(1);
  CharTransformer model(c, gen);
  StateDict weights;
  for (const auto& [name, t] : golden.tensors)
    if (name.rfind("param.", 0) == 0) weights.emplace_back(name.substr(6), t);
  model.to(kFloat64);
  model.load_state_dict(weights, /*strict=*/true);  // the file's names are the older model's (upgrade_state)
  BOOST_TEST(model.named_parameters().size() == weights.size());
  std::map<std::string, std::string> golden_name;  // today's name -> the file's
  for (const auto& [old_name, name] : model.renamed_state()) golden_name[name] = old_name;
  auto in_file = [&](const std::string& name) { return golden_name.count(name) ? golden_name.at(name) : name; };

  const int64_t M = cfg["segment"];
  const Tensor tokens = golden.at("tokens");
  auto input = [&](int64_t i) { return tokens.narrow(1, i * M, M).contiguous(); };
  auto target = [&](int64_t i) { return tokens.narrow(1, i * M + 1, M).contiguous(); };

  BOOST_TEST_MESSAGE(file);
  LayerCache cache;
  Variable logits0 = model.forward(input(0), cache, gen);
  expect_close("logits0 (zero cache)", logits0.value(), golden.at("logits0"), 1e-12, 1e-10);
  Variable logits1 = model.forward(input(1), cache, gen);
  expect_close("logits1 (with cache)", logits1.value(), golden.at("logits1"), 1e-12, 1e-10);
  Variable loss1 = lm_loss(model, logits1, target(1));
  expect_close("loss1", loss1.value().reshape({1}), golden.at("loss1"), 1e-12, 1e-10);
  loss1.backward();
  for (const auto& [name, p] : model.named_parameters()) {
    BOOST_REQUIRE_MESSAGE(p.grad().defined(), "no gradient for " << name);
    expect_close("grad." + name, p.grad(), golden.at("grad." + in_file(name)), 1e-12, 1e-8);
  }

  AdagradOptions options;
  options.lr = cfg["lr"];
  options.clip_per_tensor = cfg["clip"];
  Adagrad opt(model.parameters(), options);
  LayerCache carried;
  std::vector<double> losses;
  for (int64_t i = 0; i < 3; ++i) {
    opt.zero_grad();
    Variable loss = lm_loss(model, model.forward(input(i), carried, gen), target(i));
    loss.backward();
    opt.step();
    model.clamp_spans();
    losses.push_back(loss.item());
  }
  expect_close("adagrad_losses (3 steps)", Tensor::from_vector(losses, {3}), golden.at("adagrad_losses"), 1e-12, 1e-10);
  for (const auto& [name, p] : model.named_parameters())
    expect_close("after." + name, p.value(), golden.at("after." + in_file(name)), 1e-10, 1e-8);
}

// The same text in segments with the cache, or in one forward with a zero cache, gives the same
// logits (the cache holds at least the window). Every scheme, both layer orders, each span (none,
// adaptive, dynamic), with and without the current token (not with the dynamic span, which masks it).
BOOST_DATA_TEST_CASE(segments_with_cache_equal_one_long_forward,
                     bdata::make({"key_pe", "transformer_xl", "rope", "alibi", "none"}) * bdata::make({false, true}) *
                         bdata::make({"none", "adaptive_span", "dynamic_span"}),
                     position, pre_norm, span) {
  const std::string adaptive_span = "adaptive_span";
  const bool adaptive = span == adaptive_span;
  CharTransformerConfig c = small_config(position, pre_norm, 24);
  c.attention.span = span;
  c.attention.attend_self = std::string(position) == "alibi" && std::string(span) != "dynamic_span";
  Generator gen(5);
  CharTransformer model(c, gen);
  model.to(kFloat64);
  if (adaptive) set_spans(model, {{0.2, 0.5}, {0.0, 0.1}});
  if (std::string(span) == "dynamic_span") set_dynamic_spans(model, gen);
  const int64_t B = 2, M = 7, segments = 5;
  const Tensor tokens = random_tokens(B, M * segments, c.vocab, 9);
  LayerCache long_cache, seg_cache;
  const Tensor full = model.forward(tokens, long_cache, gen).value();
  std::vector<Tensor> parts;
  for (int64_t s = 0; s < segments; ++s)
    parts.push_back(model.forward(tokens.narrow(1, s * M, M).contiguous(), seg_cache, gen).value());
  const Tensor joined = cat(parts, 1);
  expect_close(fmt::format("{} pre_norm {} span {}", position, pre_norm, span), joined, full, 1e-12, 1e-10);
}

// Trimming only removes keys whose mask is 0 for every head: for a random model (whose spans hold
// much of the softmax mass) the logits and gradients with the trimmed window are those with the
// full window S to 1e-9 (the renormaliser's 1e-8, see the next case).
BOOST_DATA_TEST_CASE(trimming_barely_changes_a_random_model, bdata::make({"key_pe", "rope", "transformer_xl"}),
                     position) {
  CharTransformerConfig trimmed = small_config(position, false, 64), full = trimmed;
  full.attention.trim = false;
  Generator g1(11), g2(11);
  CharTransformer a(trimmed, g1), b(full, g2);
  a.to(kFloat64);
  b.to(kFloat64);
  set_spans(a, {{0.1, 0.3}, {0.0, 0.05}});
  set_spans(b, {{0.1, 0.3}, {0.0, 0.05}});
  BOOST_TEST(a.layer(0).window() < 64);  // 0.3 * 64 + 8 = 27.2 -> trim 32, window 32
  BOOST_TEST(a.layer(1).window() == 16);
  BOOST_TEST(b.layer(0).window() == 64);
  const Tensor tokens = random_tokens(2, 70, trimmed.vocab, 4);
  LayerCache ca, cb;
  // Warm the caches so the window reaches into the cached rows, then compare a segment.
  a.forward(tokens.narrow(1, 0, 50).contiguous(), ca, g1);
  b.forward(tokens.narrow(1, 0, 50).contiguous(), cb, g2);
  // b keeps S rows, a only window + margin: both still hold every key the window reaches.
  const Tensor next = tokens.narrow(1, 50, 19).contiguous(), targets = tokens.narrow(1, 51, 19).contiguous();
  Variable la = lm_loss(a, a.forward(next, ca, g1), targets);
  Variable lb = lm_loss(b, b.forward(next, cb, g2), targets);
  expect_close("loss trimmed vs full", la.value(), lb.value(), 1e-10, 1e-9);
  la.backward();
  lb.backward();
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  for (size_t i = 0; i < pa.size(); ++i) expect_close("grad." + pa[i].first, pa[i].second.grad(), pb[i].second.grad(), 1e-8, 1e-6);
}

// What trimming does change. The span mask is applied after the softmax over the window and
// renormalised, w = p m / (sum p m + 1e-8), and the trimmed keys (mask 0) were part of that
// softmax's normaliser. With q = sum p m, the head's in-span mass under the full softmax (q_f) or
// the trimmed one (q_t), each kept weight changes by the factor (1 + 1e-8 / q_f) / (1 + 1e-8 / q_t),
// less than 1 + 1e-8 / q_f: nothing visible while the span holds much of the mass, but 2.7e-3 here,
// where the keys outside the span are e^10 times likelier than those in it (q_f = 3.6e-6; a
// trained charlm has heads like this). Built so that it can be read off the output: one head,
// every input row the same vector (so every value is the same and the output is (sum w) v), no
// content term (k_proj = 0), and a key_pe table that scores the 56 trimmed distances 10 and the 8
// kept ones 0, on the fused and the reference path.
BOOST_DATA_TEST_CASE(trimming_changes_the_kept_weights_through_the_renormaliser, bdata::make({false, true}), fused) {
  const int64_t D = 8, S = 64, M = 4;
  // z = 0: distances 1..8 have mask (9 - d) / 8, the rest 0. Granularity 8 trims the window to 8
  // keys, granularity S keeps all S.
  auto layer = [&](int64_t granularity, const std::shared_ptr<AttentionHook>& key_pe) {
    Generator gen(3);
    auto span = std::make_shared<AdaptiveSpan>(1, S, 8.0, 0.0, 2e-6, false, granularity);
    auto mha = std::make_shared<MultiHeadAttention>(D, 1, gen, std::vector<std::shared_ptr<AttentionHook>>{span},
                                                    std::vector<std::shared_ptr<AttentionHook>>{key_pe}, false);
    mha->set_path(fused ? AttentionPath::Fused : AttentionPath::Reference);
    return std::make_pair(mha, span);
  };
  // q = x = e_0; key_pe column S - d is distance d: score(d) = q . P[:, S - d] / sqrt(Dh).
  const double far_score = 10.0;
  std::vector<double> table(static_cast<size_t>(D * S), 0.0);
  for (int64_t d = 9; d <= S; ++d) table[static_cast<size_t>(S - d)] = far_score * std::sqrt(static_cast<double>(D));
  const auto key_pe = std::make_shared<KeyPositionEmbedding>(1, Variable(Tensor::from_vector(table, {D, S})));
  auto [a, span_a] = layer(8, key_pe);
  auto [b, span_b] = layer(S, key_pe);
  BOOST_REQUIRE_EQUAL(span_a->kept_distance(), 8);
  BOOST_REQUIRE_EQUAL(span_b->kept_distance(), 64);
  for (MultiHeadAttention* m : {a.get(), b.get()}) {
    m->to(kFloat64);
    for (auto& [name, p] : m->named_parameters()) {
      if (name == "q_proj.weight") {
        std::vector<double> eye(static_cast<size_t>(D * D), 0.0);
        for (int64_t i = 0; i < D; ++i) eye[static_cast<size_t>(i * D + i)] = 1.0;
        p.mutable_value().copy_(Tensor::from_vector(eye, {D, D}));
      }
      if (name == "k_proj.weight") p.mutable_value().copy_(Tensor::zeros({D, D}, kFloat64));
    }
  }
  auto rows = [&](int64_t n) {  // n rows of e_0
    std::vector<double> v(static_cast<size_t>(n * D), 0.0);
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i * D)] = 1.0;
    return Tensor::from_vector(v, {1, n, D});
  };
  // The segment's M queries over [S memory rows; segment] (the span's key range trims a's keys).
  const Variable h(rows(M)), keys_from(rows(S + M));
  const PositionPair positions = PositionPair::memory(S + M, M);
  AttentionContext context;
  context.positions = &positions;
  const Tensor ta = a->forward(h, keys_from, context).value(), tb = b->forward(h, keys_from, context).value();
  const std::vector<double> out_a = ta.to_vector<double>(), out_b = tb.to_vector<double>();

  const double eps = 1e-8, mask_sum = 4.5;  // (8 + 7 + ... + 1) / 8
  const double q_t = mask_sum / 8.0, q_f = mask_sum / (8.0 + 56.0 * std::exp(far_score));
  const double factor = (q_t / (q_t + eps)) / (q_f / (q_f + eps));  // sum w trimmed / sum w full
  BOOST_TEST_MESSAGE("trimming: in-span mass " << q_f << ", kept weights x" << factor << " (bound 1 + " << eps / q_f << ")");
  BOOST_TEST(factor - 1.0 > 1e-3);             // visible in float32 and in the loss
  BOOST_TEST(factor - 1.0 < eps / q_f);        // the bound the docs state
  for (size_t i = 0; i < out_a.size(); ++i)
    if (std::abs(out_b[i]) > 1e-6) BOOST_TEST(out_a[i] / out_b[i] == factor, boost::test_tools::tolerance(1e-10));
}

// Incremental decoding (one token per forward, cache carried) equals a full forward.
BOOST_DATA_TEST_CASE(incremental_logits_equal_a_full_forward, bdata::make({"key_pe", "rope", "alibi"}), position) {
  CharTransformerConfig c = small_config(position, false, 32);
  Generator gen(21);
  CharTransformer model(c, gen);
  model.to(kFloat64);
  model.eval();
  set_spans(model, {{0.3, 0.1}, {0.5, 0.0}});
  const Tensor tokens = random_tokens(1, 45, c.vocab, 2);
  LayerCache full_cache, step_cache;
  const Tensor full = model.forward(tokens, full_cache, gen).value();  // [1, 45, V]
  // A prompt of 5 tokens in one forward, then one token at a time.
  std::vector<Tensor> parts{model.forward(tokens.narrow(1, 0, 5).contiguous(), step_cache, gen).value()};
  for (int64_t t = 5; t < 45; ++t) parts.push_back(model.forward(tokens.narrow(1, t, 1).contiguous(), step_cache, gen).value());
  expect_close(std::string("incremental ") + position, cat(parts, 1), full, 1e-12, 1e-10);
}

// The fused path (CharAttentionConfig::path) against the reference path: the same model and
// the same segments, logits and every gradient (span parameters, key_pe, u, v, W_kR, the
// registered schemes' parameters included) in float64, for the schemes the paper's code knew
// (key_pe, transformer_xl, rope, alibi, none) and others (t5_bias, shaw, siren, ape). The first
// segment starts from an empty cache (the window reaches zero slots), the second from a cache
// longer than the trimmed window.
BOOST_DATA_TEST_CASE(fused_path_equals_the_reference,
                     bdata::make({"key_pe", "transformer_xl", "rope", "alibi", "none", "t5_bias", "shaw", "siren", "ape"}) *
                         bdata::make({false, true}) * bdata::make({false, true}),
                     position, attend_self, pre_norm) {
  if (attend_self && std::string(position) == "key_pe") return;  // key_pe starts at distance 1
  CharTransformerConfig fused = small_config(position, pre_norm, 64), reference = fused;
  fused.attention.attend_self = reference.attention.attend_self = attend_self;
  reference.attention.path = AttentionPath::Reference;
  Generator g1(5), g2(5);
  CharTransformer a(fused, g1), b(reference, g2);
  a.to(kFloat64);
  b.to(kFloat64);
  set_spans(a, {{0.1, 0.3}, {0.0, 0.05}});
  set_spans(b, {{0.1, 0.3}, {0.0, 0.05}});
  BOOST_TEST(a.layer(0).window() == 32);
  expect_same_over_two_segments(a, g1, b, g2, fmt::format("{} self {} pre_norm {}", position, attend_self, pre_norm),
                                1e-12, 1e-11);
  // The span parameters' gradients are not trivially zero (the mask's ramp is inside the window).
  const Tensor dc = a.layer(0).span()->c().grad();
  BOOST_TEST(std::abs(dc.to_vector<double>()[0]) + std::abs(dc.to_vector<double>()[1]) > 0.0);
}

// The same with the dynamic span (span dynamic_span: each token's own span z_t from its input, the
// window S, each fused row visiting its d <= ceil(z_t + R) only): logits and every gradient (v and
// b included, through the span loss on mean z_t too) in float64, spans that differ per token.
BOOST_DATA_TEST_CASE(fused_path_equals_the_reference_with_the_dynamic_span,
                     bdata::make({"key_pe", "rope", "t5_bias", "none"}) * bdata::make({false, true}), position, pre_norm) {
  CharTransformerConfig fused = small_config(position, pre_norm, 64), reference = fused;
  fused.attention.span = reference.attention.span = "dynamic_span";
  fused.attention.path = AttentionPath::Fused;
  reference.attention.path = AttentionPath::Reference;
  Generator g1(5), g2(5), init(6), init_again(6);
  CharTransformer a(fused, g1), b(reference, g2);
  a.to(kFloat64);
  b.to(kFloat64);
  set_dynamic_spans(a, init);
  set_dynamic_spans(b, init_again);
  BOOST_TEST(a.layer(0).window() == 64);  // the dynamic span keeps the window S
  expect_same_over_two_segments(a, g1, b, g2, fmt::format("dynamic_span {} pre_norm {}", position, pre_norm), 1e-12,
                                1e-11);
  BOOST_TEST(a.layer(0).attention().last_forward_fused());
  BOOST_TEST(!b.layer(0).attention().last_forward_fused());
  // The spans differ per token, and the span parameters' gradients are not zero.
  const Tensor z = a.layer(0).dynamic_spans();  // [B, H, M]
  BOOST_REQUIRE(z.defined());
  BOOST_TEST(amax(z).item() - amin(z).item() > 4.0);
  BOOST_TEST(amax(z).item() < 64.0 - 8.0);  // no row reaches S: the per-row supports differ from the window
  for (const Variable* p : {&a.layer(0).dynamic_span()->v(), &a.layer(0).dynamic_span()->b()})
    BOOST_TEST(amax(abs(p->grad())).item() > 0.0);
}

// The probabilities kept for figures (window_probs: [B, H, M, W] in distance space) are the same
// on the fused path (computed from the fused op's dense probabilities) as on the reference path,
// with and without the current token's slot.
BOOST_DATA_TEST_CASE(kept_probabilities_are_the_same_on_both_paths, bdata::make({false, true}), attend_self) {
  CharTransformerConfig c = small_config("alibi", false, 16), reference = c;
  c.attention.attend_self = reference.attention.attend_self = attend_self;
  c.attention.span_ramp = reference.attention.span_ramp = 4;
  c.attention.span_init = reference.attention.span_init = 0.3;
  c.attention.trim_granularity = reference.attention.trim_granularity = 4;
  c.attention.path = AttentionPath::Fused;
  reference.attention.path = AttentionPath::Reference;
  Generator g1(7), g2(7);
  CharTransformer a(c, g1), b(reference, g2);
  a.to(kFloat64);
  b.to(kFloat64);
  const Tensor tokens = random_tokens(2, 14, c.vocab, 8);
  LayerCache ca, cb;
  for (const Tensor& segment : {tokens.narrow(1, 0, 9).contiguous(), tokens.narrow(1, 9, 5).contiguous()}) {
    a.forward(segment, ca, g1);
    b.forward(segment, cb, g2);
  }
  BOOST_REQUIRE(a.layer(0).attention().last_forward_fused());
  const Tensor pa = a.layer(0).window_probs(), pb = b.layer(0).window_probs();
  BOOST_TEST(pa.shape() == (Shape{2, 2, 5, a.layer(0).window()}));
  BOOST_TEST(max_abs_diff(pa, pb) < 1e-14);
  BOOST_TEST(amax(abs(pb)).item() > 0.0);
}

// Decoding with the K/V cache (forward_incremental: a prompt of 5 tokens, then one token per
// call) gives the logits of one full forward, with adaptive span and a text longer than every
// window (the cache is trimmed to W_l - s keys per layer, so a token's cost does not grow): float64
// to 1e-10, float32 to 2e-5 (the float32 path sums in another order).
BOOST_DATA_TEST_CASE(kv_cached_decoding_equals_a_full_forward,
                     bdata::make({"key_pe", "rope", "alibi", "transformer_xl", "none", "ape"}) * bdata::make({false, true}) *
                         bdata::make({false, true}),
                     position, attend_self, single) {
  if (attend_self && std::string(position) == "key_pe") return;
  CharTransformerConfig c = small_config(position, attend_self, 32);  // pre-LN with attend_self, for variety
  c.attention.attend_self = attend_self;
  Generator gen(23);
  CharTransformer model(c, gen);
  model.to(single ? kFloat32 : kFloat64);
  model.eval();
  set_spans(model, {{0.3, 0.1}, {0.5, 0.0}});
  const int64_t T = 60;
  const Tensor tokens = random_tokens(2, T, c.vocab, 3);
  LayerCache full_cache;
  const Tensor full = model.forward(tokens, full_cache, gen).value();  // [2, T, V]
  DecodeCache decode;
  std::vector<Tensor> parts{model.forward_incremental(tokens.narrow(1, 0, 5).contiguous(), decode, gen).value()};
  for (int64_t t = 5; t < T; ++t) {
    parts.push_back(model.forward_incremental(tokens.narrow(1, t, 1).contiguous(), decode, gen).value());
    for (int64_t l = 0; l < model.num_layers(); ++l) {
      const int64_t window = model.layer(l).window() - (attend_self ? 1 : 0);
      BOOST_REQUIRE(window < T / 2);
      BOOST_REQUIRE_EQUAL(decode.layers[static_cast<size_t>(l)].tokens(), window);  // zero rows first
    }
  }
  const std::string what = fmt::format("kv decoding {} self {} float{}", position, attend_self, single ? 32 : 64);
  if (single) expect_close(what, cat(parts, 1), full, 2e-5, 2e-5);
  else expect_close(what, cat(parts, 1), full, 1e-12, 1e-10);
}

// Pitfall #12: the spans must move. Data with period 5 rewards the key at distance 5 (on the
// ramp at c = 0), so c grows under the paper's Adagrad with the per-tensor clip; i.i.d. data
// rewards nothing, and a large span loss (plain Adagrad: the clip would shrink its steps to a
// crawl) with the clamp brings c from 0.5 to exactly 0.
BOOST_AUTO_TEST_CASE(spans_move_in_a_short_run) {
  auto run = [](bool periodic, double init, double span_loss) {
    CharTransformerConfig c = small_config("key_pe", false, 64);
    c.attention.span_init = init;
    c.attention.span_loss = span_loss;
    Generator gen(3);
    CharTransformer model(c, gen);
    AdagradOptions o;
    o.lr = 0.05;
    o.clip_per_tensor = periodic ? 0.03 : 0.0;
    Adagrad opt(model.parameters(), o);
    Tensor pattern = random_tokens(1, 5, c.vocab, 17);
    LayerCache cache;
    for (int step = 0; step < 60; ++step) {
      Tensor tokens = random_tokens(4, 17, c.vocab, 100 + static_cast<uint64_t>(step));
      if (periodic) {
        std::vector<int64_t> t(4 * 17), p = pattern.to_vector<int64_t>();
        for (int64_t b = 0; b < 4; ++b)
          for (int64_t i = 0; i < 17; ++i) t[static_cast<size_t>(b * 17 + i)] = p[static_cast<size_t>((i + b + step * 16) % 5)];
        tokens = Tensor::from_vector(t, {4, 17});
      }
      opt.zero_grad();
      Variable loss = lm_loss(model, model.forward(tokens.narrow(1, 0, 16).contiguous(), cache, gen),
                              tokens.narrow(1, 1, 16).contiguous());
      loss.backward();
      opt.step();
      model.clamp_spans();
    }
    return model.head_spans();
  };
  double grown = 0;
  for (const auto& layer : run(true, 0.0, 0.0))
    for (double z : layer) grown = std::max(grown, z);
  BOOST_TEST_MESSAGE("periodic data: largest span " << grown);
  BOOST_TEST(grown > 0.5);
  for (const auto& layer : run(false, 0.5, 5e-2))
    for (double z : layer) BOOST_TEST(z == 0.0);
}

BOOST_AUTO_TEST_CASE(bad_configurations_are_errors) {
  Generator gen(1);
  CharTransformerConfig c = small_config("key_pe", false);
  c.attention.attend_self = true;
  BOOST_CHECK_THROW(CharTransformer(c, gen), Error);
  BOOST_CHECK_THROW(CharTransformer(small_config("no_such_scheme", false), gen), Error);
  // A registered absolute scheme has no place inside the LM's attention.
  BOOST_CHECK_THROW(CharTransformer(small_config("sinusoidal", false), gen), Error);
  CharTransformerConfig d = small_config("rope", false);
  d.attention.width = 18;
  d.attention.heads = 3;  // head width 6, fine for rope; 18 % 4 != 0 elsewhere
  BOOST_CHECK_NO_THROW(CharTransformer(d, gen));
  d.attention.heads = 4;
  BOOST_CHECK_THROW(CharTransformer(d, gen), Error);
  // The span: a registered span by name; S, the ramp and the loss come from the config, not span_options.
  for (const auto& [span, option, attend_self, expected] :
       std::vector<std::tuple<std::string, std::string, bool, std::vector<std::string>>>{
           {"dynamic", "", false, {"span must be none, adaptive_span or dynamic_span", "'dynamic'"}},
           {"gaussian_span", "", false, {"span must be none, adaptive_span or dynamic_span"}},
           {"dynamic_span", "", true, {"dynamic_span masks the current token", "attend_self"}},
           {"dynamic_span", "ramp", false, {"span option 'ramp'", "span_ramp"}},
           {"adaptive_span", "granularity", false, {"span option 'granularity'", "trim_granularity"}},
           {"dynamic_span", "sigma", false, {"dynamic_span", "unknown option sigma"}},
           {"none", "bias_init", false, {"span none takes no span_options"}}}) {
    CharTransformerConfig e = small_config("rope", false);
    e.attention.span = span;
    e.attention.attend_self = attend_self;
    if (!option.empty()) e.attention.span_options[option] = "2";
    posgrad::test::check_error([&] { (void)CharTransformer(e, gen); }, expected);
  }
  CharTransformerConfig ok = small_config("rope", false);
  ok.attention.span = "dynamic_span";
  ok.attention.span_options["bias_init"] = "-2";
  CharTransformer with_bias(ok, gen);
  for (double b : with_bias.layer(1).dynamic_span()->b().value().to_vector<double>()) BOOST_TEST(b == -2.0);
  BOOST_TEST(with_bias.layer(1).dynamic_span()->max_span() == 40);
  BOOST_TEST(with_bias.layer(1).dynamic_span()->ramp() == 8.0);
  BOOST_TEST(with_bias.layer(1).dynamic_span()->loss_coef() == 2e-3);
  CharTransformer model(small_config("none", false), gen);
  LayerCache cache;
  BOOST_CHECK_THROW(model.forward(Tensor::zeros({2, 3}, kFloat32), cache, gen), Error);
  BOOST_CHECK_THROW(model.forward(Tensor::zeros({2, 0}, DType::Int64), cache, gen), Error);
}


BOOST_AUTO_TEST_CASE(computed_pairs_counts_the_path_that_runs) {
  CharTransformerConfig fused = small_config("key_pe", false, 64), reference = fused;
  reference.attention.path = AttentionPath::Reference;
  Generator g1(5), g2(5);
  CharTransformer a(fused, g1), b(reference, g2);
  set_spans(a, {{0.1, 0.3}, {0.0, 0.05}});
  set_spans(b, {{0.1, 0.3}, {0.0, 0.05}});
  const int64_t M = 20, W = a.layer(0).window();
  BOOST_TEST(W == 32);
  BOOST_TEST(a.layer(0).computed_pairs(M) == M * W);  // key_pe: no self slot (s = 0)
  BOOST_TEST(b.layer(0).computed_pairs(M) == M * (W + M));
  BOOST_TEST(a.attention_flops_share(M) < b.attention_flops_share(M));
  if (cuda_available()) {  // on the GPU the fused model runs the reference path, and counts it
    a.to(posgrad::test::kGPU);
    BOOST_TEST(a.layer(0).computed_pairs(M) == M * (W + M));
  }
}

BOOST_AUTO_TEST_CASE(flops_per_token_is_the_papers_estimate) {
  // Without a span every layer attends over S: 2 layers x (4 D^2 + 2 D d_ff + 2 D S) with D = 16,
  // d_ff = 32, S = 40 (small_config) = 2 x (1024 + 1024 + 1280) = 6,656.
  CharTransformerConfig c = small_config("key_pe", false);
  c.attention.span = "none";
  Generator g(5);
  CharTransformer none(c, g);
  BOOST_REQUIRE(none.num_layers() == 2);
  BOOST_TEST(c.attention.width == 16);
  BOOST_TEST(c.ff_width == 32);
  BOOST_TEST(c.attention.max_span == 40);
  BOOST_TEST(none.flops_per_token() == 6656.0);
  // With the adaptive span the average span replaces S: per layer ceil(mean_h z) + R, z = c S:
  // layer 0 z = {5, 10}: ceil(7.5) + 8 = 16; layer 1 z = {0, 2.5}: ceil(1.25) + 8 = 10; average
  // 13 -> 2 x 2048 + 2 x (2 x 16 x 13) = 4,928 (c exact in binary, so z is too).
  c.attention.span = "adaptive_span";
  CharTransformer adaptive(c, g);
  set_spans(adaptive, {{0.125, 0.25}, {0.0, 0.0625}});
  BOOST_TEST(adaptive.average_span() == 13.0);
  BOOST_TEST(adaptive.flops_per_token() == 4928.0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(char_transformer_cuda, *boost::unit_test::precondition(posgrad::test::GpuPresent()))

BOOST_DATA_TEST_CASE(gpu_equals_cpu_with_cache, bdata::make({"key_pe", "transformer_xl", "rope", "alibi", "none"}),
                     position) {
  const CharTransformerConfig c = small_config(position, false, 64);
  Generator g_cpu(5), g_gpu(5);
  CharTransformer cpu(c, g_cpu), gpu(c, g_gpu);
  cpu.to(kFloat64);
  gpu.to(kFloat64);
  gpu.to(posgrad::test::kGPU);
  set_spans(cpu, {{0.1, 0.3}, {0.0, 0.05}});
  set_spans(gpu, {{0.1, 0.3}, {0.0, 0.05}});
  expect_same_over_two_segments(cpu, g_cpu, gpu, g_gpu, std::string(position) + " cpu vs gpu", 1e-10, 1e-10);
}

BOOST_DATA_TEST_CASE(kv_cached_decoding_on_the_gpu, bdata::make({"key_pe", "rope", "transformer_xl"}), position) {
  const Device gpu = posgrad::test::kGPU;
  Generator gen(23);
  CharTransformer model(small_config(position, false, 64), gen);
  model.to(kFloat64);
  model.to(gpu);
  model.eval();
  set_spans(model, {{0.3, 0.1}, {0.5, 0.0}});
  const Tensor tokens = random_tokens(2, 60, 11, 3).to(gpu);
  LayerCache full_cache;
  const Tensor full = model.forward(tokens, full_cache, gen).value();  // [2, T, V]
  DecodeCache decode;
  std::vector<Tensor> parts{model.forward_incremental(tokens.narrow(1, 0, 5).contiguous(), decode, gen).value()};
  for (int64_t t = 5; t < 60; ++t)
    parts.push_back(model.forward_incremental(tokens.narrow(1, t, 1).contiguous(), decode, gen).value());
  expect_close(std::string("kv decoding on the GPU ") + position, cat(parts, 1).to(kCPU), full.to(kCPU), 1e-12, 1e-10);
}

BOOST_AUTO_TEST_SUITE_END()
