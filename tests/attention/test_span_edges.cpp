// Numerical edges of the attention stack: a Gaussian span (attention/spans/gaussian_span.h) with
// sigma 1e-12, 0 and -1e-12 (finite outputs and gradients; sigma's gradient is 0 while sigma is
// clamped at min_sigma, as documented), an adaptive span (attention/spans/adaptive_span.h) at both
// ends of its clamp, c = 0 and c = 1 (finite; the gradient of c is S / ramp per key on the closed
// ramp and exactly 0 when the whole span is saturated), and empty batches (B = 0) and single
// tokens (N = 1) through MultiHeadAttention, a transformer block and a TransformerClassifier
// with its loss, on the reference and the fused path. Never a crash, never a NaN.
//
// Deliberately not here: the spans' ordinary values and the path agreement of ordinary inputs
// (test_posattn.cpp, test_adaptive_span.cpp, test_attention_pipeline.cpp).
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "attention/multi_head_attention.h"
#include "attention/registry.h"
#include "attention/spans/adaptive_span.h"
#include "attention/spans/gaussian_span.h"
#include "attention/transformer_block.h"
#include "attention/transformer_classifier.h"
#include "nn/losses.h"
#include "posgrad.h"

using namespace posgrad;

namespace {

bool all_finite(const Tensor& t) {
  for (double v : t.to_vector<double>())
    if (!std::isfinite(v)) return false;
  return true;
}

std::shared_ptr<AttentionHook> hook(const std::string& name, HookOptions options, int64_t D, int64_t H, int64_t N) {
  Generator gen(5);
  return make_hook(HookSpec{name, std::move(options)}, HookContext{.width = D, .heads = H, .structure = {N}}, gen);
}

// Runs module(x) for x [B, N, D], backpropagates sum(out * w) and checks that the output and
// every parameter's gradient are finite and shaped like their values. Returns the output.
template <typename Forward>
Tensor forward_backward(Module& module, Forward forward, const Shape& x_shape, uint64_t seed) {
  Generator gen(seed);
  Variable x(normal(x_shape, 0, 1, gen), true);
  Variable out = forward(x);
  BOOST_TEST(all_finite(out.value()), "output " << out.value().describe() << " is not finite");
  const Tensor w = normal(out.shape(), 0, 1, gen);
  module.zero_grad();
  sum(out * Variable(w)).backward();
  BOOST_TEST(x.grad().shape() == x.shape());
  BOOST_TEST(all_finite(x.grad()), "gradient of the input is not finite");
  for (const auto& [name, p] : module.named_parameters()) {
    if (!p.requires_grad()) continue;
    // A parameter no output depends on (B = 0) may have no gradient at all; one it does must be finite.
    if (!p.grad().defined()) continue;
    BOOST_TEST(p.grad().shape() == p.shape(), name);
    BOOST_TEST(all_finite(p.grad()), "gradient of " << name << " is not finite");
  }
  return out.value();
}

const std::vector<AttentionPath> kPaths = {AttentionPath::Reference, AttentionPath::Fused};
std::string path_name(AttentionPath p) { return attention_path_name(p); }

}  // namespace

BOOST_AUTO_TEST_SUITE(span_edges)

BOOST_AUTO_TEST_CASE(gaussian_span_at_sigma_1e_12) {
  // sigma in {1e-12, 0, -1e-12}, clamped at the default min_sigma 1e-3 (sigma's gradient is
  // then exactly 0) and with min_sigma 1e-12 (the floor 1e-24 is still a normal float32).
  const int64_t D = 8, H = 2, N = 7;
  for (const char* sigma : {"1e-12", "0", "-1e-12"}) {
    for (const char* min_sigma : {"0.001", "1e-12"}) {
      for (AttentionPath path : kPaths) {
        BOOST_TEST_CONTEXT("sigma " << sigma << ", min_sigma " << min_sigma << ", " << path_name(path)) {
          Generator gen(1);
          auto span = std::dynamic_pointer_cast<GaussianSpan>(
              hook("gaussian_span", {{"sigma", sigma}, {"min_sigma", min_sigma}}, D, H, N));
          BOOST_REQUIRE(span);
          // G is 1 at offset 0 and exactly 0 elsewhere: (1/6)^2 / 1e-6 = 2.8e4 already underflows.
          const std::vector<double> g = span->gaussian(Positions::sequence(N), kFloat32).value().to_vector<double>();
          for (size_t e = 0; e < g.size(); ++e) BOOST_TEST(g[e] == (e == static_cast<size_t>(N - 1) ? 1.0 : 0.0));
          MultiHeadAttention mha(D, H, gen, {span});
          mha.set_path(path);
          forward_backward(mha, [&](const Variable& x) { return mha.forward(x); }, {2, N, D}, 11);
          BOOST_REQUIRE(span->sigma().grad().defined());
          BOOST_TEST(all_finite(span->sigma().grad()));
          // dG/dsigma = G x^2 / sigma^3 vanishes wherever G does and at x = 0.
          BOOST_TEST(span->sigma().grad().item() == 0.0);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(gaussian_span_refuses_a_floor_that_underflows) {
  // min_sigma 1e-30: min_sigma^2 = 1e-60 is 0 in float32, and G at the centre became 0/0 = NaN
  // (the whole attention output and every gradient NaN). Such a floor is now a clear error.
  for (const char* tiny : {"1e-30", "1e-13"}) {
    try {
      hook("gaussian_span", {{"sigma", "0"}, {"min_sigma", tiny}}, 8, 2, 5);
      BOOST_ERROR("no error for min_sigma " << tiny);
    } catch (const Error& e) {
      BOOST_TEST(std::string(e.what()).find("min_sigma") != std::string::npos, e.what());
    }
  }
}

BOOST_AUTO_TEST_CASE(adaptive_span_mask_gradient_at_both_clamp_ends) {
  // m = clamp(c S / Rr + (Rr - (d - 1)) / Rr, 0, 1) for 1 <= d <= S. The clamp passes the
  // gradient on its closed interval (autograd clamp), so dm/dc = S / Rr exactly where the ramp
  // lies in [0, 1]: at c = 0 that is 1 <= d <= Rr + 1 (d = 1 gives ramp 1, d = Rr + 1 ramp 0); at
  // c = 1 the ramp is (S + Rr - d + 1) / Rr > 1 for every d <= S, so dm/dc = 0.
  const int64_t N = 12, S = 8, H = 2;
  const double ramp = 4;
  const Positions positions = Positions::sequence(N);
  for (double c : {0.0, 1.0}) {
    BOOST_TEST_CONTEXT("c = " << c) {
      AdaptiveSpan span(H, S, ramp, c, 0.0);
      span.to(kFloat64);
      Variable m = span.relative_mask(positions, kFloat64);  // [H, R], R = 2N - 1, offset = e - (N - 1)
      BOOST_TEST(all_finite(m.value()));
      sum(m).backward();
      // By hand: the number of relative offsets d = 1..min(S, Rr + 1) when c = 0, none when c = 1.
      const double keys_on_the_ramp = c == 0.0 ? static_cast<double>(std::min<int64_t>(S, static_cast<int64_t>(ramp) + 1)) : 0.0;
      for (double g : span.c().grad().to_vector<double>()) BOOST_TEST(g == keys_on_the_ramp * S / ramp);
      // The mask values at the ends, by hand.
      for (int64_t e = 0; e < 2 * N - 1; ++e) {
        const int64_t d = (N - 1) - e;
        const double want = (d < 1 || d > S) ? 0.0 : std::clamp((ramp + c * S - (d - 1)) / ramp, 0.0, 1.0);
        BOOST_TEST(m.value().at<double>({0, e}) == want);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(adaptive_span_through_attention_at_both_clamp_ends) {
  // End to end: finite outputs and gradients at c = 0 and c = 1; at c = 1 the gradient of c from
  // the attention is exactly 0 and only the span loss (loss_coef S mean_h c_h) moves c.
  const int64_t D = 8, H = 2, N = 10;
  for (const char* c : {"0", "1"}) {
    for (AttentionPath path : kPaths) {
      BOOST_TEST_CONTEXT("c = " << c << ", " << path_name(path)) {
        Generator gen(2);
        auto span = std::dynamic_pointer_cast<AdaptiveSpan>(
            hook("adaptive_span", {{"max_span", "8"}, {"ramp", "4"}, {"init", c}, {"loss_coef", "0.5"}}, D, H, N));
        BOOST_REQUIRE(span);
        MultiHeadAttention mha(D, H, gen, {span});
        mha.set_path(path);
        const Tensor out = forward_backward(mha, [&](const Variable& x) { return mha.forward(x); }, {2, N, D}, 13);
        const std::vector<double> g = span->c().grad().to_vector<double>();
        if (std::string(c) == "1") {
          for (double v : g) BOOST_TEST(v == 0.0);
        } else {
          for (double v : g) BOOST_TEST(std::isfinite(v));
        }
        // The first token has no key in the causal past: its attention output is the bias of
        // out_proj alone (zero attention), identical for both batch elements.
        BOOST_TEST(max_abs_diff(out.select(0, 0).select(0, 0), out.select(0, 1).select(0, 0)) == 0.0);
        // The span loss alone: its gradient is loss_coef S / H per head, at either end.
        span->zero_grad();
        span->regulariser().backward();
        for (double v : span->c().grad().to_vector<double>()) BOOST_TEST(std::abs(v - 0.5 * 8 / 2) < 1e-6);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(empty_batch_and_single_token_through_attention) {
  // B = 0 gives an empty [0, N, D] output (no error, no NaN), N = 1 a finite one; with a
  // causal mask, and with the span hooks (gaussian: a 1x1 box; adaptive: the single token has no
  // key at all, and every path gives it zero attention).
  const int64_t D = 8, H = 2;
  struct Case {
    const char* name;
    int64_t B, N;
  };
  for (const Case& shape : {Case{"B = 0", 0, 6}, Case{"N = 1", 3, 1}, Case{"B = 0, N = 1", 0, 1}}) {
    for (const char* scheme : {"none", "gaussian_span", "adaptive_span"}) {
      for (AttentionPath path : kPaths) {
        for (bool causal : {false, true}) {
          BOOST_TEST_CONTEXT(shape.name << ", " << scheme << ", " << path_name(path) << (causal ? ", causal" : "")) {
            Generator gen(3);
            std::vector<std::shared_ptr<AttentionHook>> hooks;
            if (std::string(scheme) == "gaussian_span") hooks.push_back(hook(scheme, {}, D, H, shape.N));
            if (std::string(scheme) == "adaptive_span") hooks.push_back(hook(scheme, {{"max_span", "4"}}, D, H, shape.N));
            MultiHeadAttention mha(D, H, gen, hooks);
            mha.set_path(path);
            AttentionMasks masks;
            masks.causal = causal;
            auto run = [&] {
              return forward_backward(mha, [&](const Variable& x) { return mha.forward(x, masks); }, {shape.B, shape.N, D}, 14);
            };
            const Tensor out = run();
            BOOST_TEST(out.shape() == (Shape{shape.B, shape.N, D}));
            if (std::string(scheme) == "adaptive_span" && shape.N == 1) {  // zero attention: out_proj's bias
              Tensor bias;
              for (const auto& [name, p] : mha.named_parameters())
                if (name == "out_proj.bias") bias = p.value();
              for (int64_t b = 0; b < shape.B; ++b) BOOST_TEST(max_abs_diff(out.select(0, b).reshape({D}), bias) == 0.0);
            }
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(empty_batch_and_single_token_through_a_transformer_block) {
  const int64_t D = 8;
  for (bool pre_norm : {true, false}) {
    for (const Shape& shape : {Shape{0, 5, D}, Shape{2, 1, D}, Shape{0, 1, D}}) {
      BOOST_TEST_CONTEXT((pre_norm ? "pre-LN " : "post-LN ") << shape_str(shape)) {
        Generator gen(4);
        TransformerBlockConfig config;
        config.width = D;
        config.heads = 2;
        config.ff_width = 16;
        config.pre_norm = pre_norm;
        TransformerEncoderBlock block(config, gen);
        const Tensor out = forward_backward(block, [&](const Variable& x) { return block.forward(x); }, shape, 15);
        BOOST_TEST(out.shape() == shape);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(empty_batch_and_single_token_through_a_classifier_and_its_loss) {
  TransformerClassifierConfig config;
  config.vocab = 11;
  config.max_tokens = 6;
  config.classes = 3;
  config.layers = 2;
  config.block.width = 8;
  config.block.heads = 2;
  config.block.ff_width = 16;
  for (const Shape& tokens_shape : {Shape{0, 6}, Shape{4, 1}, Shape{0, 1}}) {
    BOOST_TEST_CONTEXT("tokens " << shape_str(tokens_shape)) {
      Generator gen(6);
      TransformerClassifier model(config, gen);
      const int64_t B = tokens_shape[0];
      Tensor tokens = Tensor::zeros(tokens_shape, kInt64);
      Variable logits = model.forward(tokens);
      BOOST_TEST(logits.shape() == (Shape{B, 3}));
      BOOST_TEST(all_finite(logits.value()));
      Variable loss = cross_entropy(logits, Tensor::zeros({B}, kInt64));
      BOOST_TEST(std::isfinite(loss.item()));
      if (B == 0) BOOST_TEST(loss.item() == 0.0);  // documented: a mean over nothing is 0
      model.zero_grad();
      loss.backward();
      for (const auto& [name, p] : model.named_parameters())
        if (p.grad().defined()) BOOST_TEST(all_finite(p.grad()), name);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

// A sequence whose every token is padding: the masked mean was 0 / 0 and the logits NaN; the
// pooling now clamps the count, and the logits must be finite.
BOOST_AUTO_TEST_SUITE(span_edges_padding)

BOOST_AUTO_TEST_CASE(classifier_with_an_all_padding_sequence) {
  TransformerClassifierConfig config;
  config.vocab = 11;
  config.max_tokens = 4;
  config.classes = 3;
  config.layers = 1;
  config.block.width = 8;
  config.block.heads = 2;
  config.block.ff_width = 16;
  Generator gen(6);
  TransformerClassifier model(config, gen);
  Tensor pad = Tensor::zeros({2, 3});
  pad.select(0, 1).fill_(1.0);  // sequence 1: all padding
  Variable logits = model.forward(Tensor::zeros({2, 3}, kInt64), pad);
  BOOST_TEST(all_finite(logits.value()), "logits " << logits.value().to_string());
}

BOOST_AUTO_TEST_SUITE_END()
