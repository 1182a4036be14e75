// The char LM with adaptive span and cache (attention/lm/char_transformer.h) on the GPU:
//   * a model moved to cuda:0 gives the CPU copy's logits and every gradient (span parameters
//     included) over two segments that carry the cache, for every positional scheme, in float64:
//     the CPU runs the fused path, the GPU the reference path (the fused op is CPU code), so this
//     is also fused CPU against reference GPU;
//   * K/V-cached decoding on the GPU gives the logits of one full forward on the GPU;
//   * computed_pairs counts the path that runs: M W for the fused path on the CPU, M (W - s + M)
//     for the reference path, which a model on the GPU takes (this case runs without a GPU too).
// Without a usable GPU the char_transformer_cuda suite is reported as skipped with the reason.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include "attention/lm/char_transformer.h"
#include "nn/losses.h"
#include "posgrad.h"
#include "tests/device_support.h"
#include "tests/golden_compare.h"

using namespace posgrad;
namespace bdata = boost::unit_test::data;
using posgrad::test::expect_close;

namespace {

CharTransformerConfig small_config(const std::string& position) {
  CharTransformerConfig c;
  c.vocab = 11;
  c.layers = 2;
  c.ff_width = 32;
  c.cache_margin = 8;
  c.attention.width = 16;
  c.attention.heads = 2;
  c.attention.max_span = 64;
  c.attention.position = segment_position_from_name(position);
  c.attention.span_ramp = 8;
  c.attention.trim_granularity = 8;
  c.attention.span_loss = 2e-3;
  return c;
}

void set_spans(CharTransformer& model, const std::vector<std::vector<double>>& c) {
  for (int64_t l = 0; l < model.num_layers(); ++l) {
    Tensor value = model.layer(l).attention().span()->c().value();
    const auto& row = c.at(static_cast<size_t>(l));
    value.copy_(Tensor::from_vector(row, {static_cast<int64_t>(row.size())}).to(value.device()));
  }
}

Tensor random_tokens(int64_t B, int64_t N, int64_t V, uint64_t seed) {
  Generator gen(seed);
  std::vector<int64_t> t(static_cast<size_t>(B * N));
  for (auto& v : t) v = static_cast<int64_t>(gen.next_uniform() * static_cast<double>(V)) % V;
  return Tensor::from_vector(t, {B, N});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(char_transformer_device)

BOOST_AUTO_TEST_CASE(computed_pairs_counts_the_path_that_runs) {
  CharTransformerConfig fused = small_config("key_pe"), reference = fused;
  reference.attention.fused = false;
  Generator g1(5), g2(5);
  CharTransformer a(fused, g1), b(reference, g2);
  set_spans(a, {{0.1, 0.3}, {0.0, 0.05}});
  set_spans(b, {{0.1, 0.3}, {0.0, 0.05}});
  const int64_t M = 20, W = a.layer(0).attention().window();
  BOOST_TEST(W == 32);
  BOOST_TEST(a.layer(0).attention().computed_pairs(M) == M * W);  // key_pe: no self slot (s = 0)
  BOOST_TEST(b.layer(0).attention().computed_pairs(M) == M * (W + M));
  BOOST_TEST(a.attention_flops_share(M) < b.attention_flops_share(M));
  if (cuda_available()) {  // on the GPU the fused model runs the reference path, and counts it
    a.to(posgrad::test::kGPU);
    BOOST_TEST(a.layer(0).attention().computed_pairs(M) == M * (W + M));
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(char_transformer_cuda, *boost::unit_test::precondition(posgrad::test::GpuPresent()))

BOOST_DATA_TEST_CASE(gpu_equals_cpu_with_cache, bdata::make({"key_pe", "transformer_xl", "rope", "alibi", "none"}),
                     position) {
  const CharTransformerConfig c = small_config(position);
  Generator g_cpu(5), g_gpu(5);
  CharTransformer cpu(c, g_cpu), gpu(c, g_gpu);
  cpu.to(kFloat64);
  gpu.to(kFloat64);
  gpu.to(posgrad::test::kGPU);
  set_spans(cpu, {{0.1, 0.3}, {0.0, 0.05}});
  set_spans(gpu, {{0.1, 0.3}, {0.0, 0.05}});
  const Tensor tokens = random_tokens(2, 61, c.vocab, 8);
  LayerCache cache_cpu, cache_gpu;
  for (int64_t seg = 0; seg < 2; ++seg) {
    const int64_t M = seg == 0 ? 20 : 40, start = seg == 0 ? 0 : 20;
    const Tensor x = tokens.narrow(1, start, M).contiguous(), y = tokens.narrow(1, start + 1, M).contiguous();
    cpu.zero_grad();
    gpu.zero_grad();
    Variable logits_cpu = cpu.forward(x, cache_cpu, g_cpu);
    Variable logits_gpu = gpu.forward(x.to(posgrad::test::kGPU), cache_gpu, g_gpu);
    const std::string what = fmt::format("{} segment {}", position, seg);
    expect_close(what + " logits", logits_gpu.value().to(kCPU), logits_cpu.value(), 1e-10, 1e-10);
    (cross_entropy(logits_cpu, y) + cpu.span_loss()).backward();
    (cross_entropy(logits_gpu, y.to(posgrad::test::kGPU)) + gpu.span_loss()).backward();
    const auto pc = cpu.named_parameters(), pg = gpu.named_parameters();
    BOOST_REQUIRE_EQUAL(pc.size(), pg.size());
    for (size_t i = 0; i < pc.size(); ++i) {
      BOOST_REQUIRE(pg[i].second.grad().defined());
      expect_close(what + " grad." + pc[i].first, pg[i].second.grad().to(kCPU), pc[i].second.grad(), 1e-9, 1e-9);
    }
  }
}

BOOST_DATA_TEST_CASE(kv_cached_decoding_on_the_gpu, bdata::make({"key_pe", "rope", "transformer_xl"}), position) {
  const Device gpu = posgrad::test::kGPU;
  Generator gen(23);
  CharTransformer model(small_config(position), gen);
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
