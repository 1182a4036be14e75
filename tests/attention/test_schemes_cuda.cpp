// Every registered positional scheme and span on the GPU against the CPU: one attention layer
// (float64, a padded batch) built twice from the same seed, one copy moved to cuda:0, run forward
// and backward on both; output, input gradient and every parameter gradient must agree (on the
// reference path the GPU takes by default, and on the GPU fused kernels). The
// cases cover 1-D sequences, 2-D grids and trees, so every place where a scheme builds a table
// or an index on the host and sends it to the data's device is exercised.
//
// Also: the share of scores computed, which the apps report, follows the device.
//
// Without a usable GPU the whole suite is reported as skipped with the reason; the CPU half of
// each case (construction, forward, backward) runs in every build through run_on(kCPU) in the
// `schemes_cuda_cpu_half` cases, so a case list that no longer builds fails here too.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "attention/multi_head_attention.h"
#include "attention/registry.h"
#include "posgrad.h"
#include "tests/device_support.h"

using namespace posgrad;
namespace bdata = boost::unit_test::data;

namespace {

enum class Layout { Sequence, Grid, Tree };

struct DeviceCase {
  std::string label;
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> hooks;  // name, options
  Layout layout = Layout::Sequence;
};
std::ostream& operator<<(std::ostream& os, const DeviceCase& c) { return os << c.label; }

constexpr int64_t kDeviceWidth = 16, kDeviceHeads = 2, kDeviceBatch = 2;

const DeviceCase kDeviceCases[] = {
    {"none", {{"none", {}}}},
    {"sinusoidal", {{"sinusoidal", {}}}},
    {"learned_absolute", {{"learned_absolute", {}}}},
    {"rope_tuned", {{"rope", {{"trainable", "true"}}}}},
    {"shaw", {{"shaw", {{"window", "2"}}}}},
    {"alibi", {{"alibi", {}}}},
    {"t5_bias", {{"t5_bias", {}}}},
    {"transformer_xl", {{"transformer_xl", {}}}},
    {"txl_baseline", {{"txl_baseline", {}}}},
    {"siren_1d", {{"siren", {}}}},
    {"siren_gaussian_span_1d", {{"siren", {}}, {"gaussian_span", {{"threshold", "0.1"}}}}},
    {"ape", {{"ape", {}}}},
    {"adaptive_span", {{"adaptive_span", {}}}},
    {"local_window", {{"local_window", {{"radius", "2"}}}}},
    {"siren_gaussian_span_2d", {{"siren", {}}, {"gaussian_span", {{"threshold", "0.1"}}}}, Layout::Grid},
    {"ape_grid", {{"ape_grid", {}}}, Layout::Grid},
    {"alibi_2d", {{"alibi", {}}}, Layout::Grid},
    {"ape_tree", {{"ape_tree", {}}}, Layout::Tree},
};

Positions positions_of(Layout layout) {
  switch (layout) {
    case Layout::Sequence: return Positions::sequence(6);
    case Layout::Grid: return Positions::grid({2, 3});
    case Layout::Tree: return Positions::tree(Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3, 5, 6}, {6}));
  }
  return Positions::sequence(6);
}

struct LayerRun {
  Tensor out, dx;
  std::vector<std::pair<std::string, Tensor>> grads;  // on the CPU
  bool fused = false;                                 // the fused path ran
};

// Builds the layer from seed 5 (so both devices get the same parameters), moves it to `device`,
// runs forward and backward of sum(out * weights) with the last key of batch 1 padded, on `path`.
LayerRun run_on(const DeviceCase& c, Device device, AttentionPath path = AttentionPath::Auto) {
  Generator gen(5);
  const Positions pos = positions_of(c.layout);
  std::vector<int64_t> structure;
  if (c.layout == Layout::Sequence) structure = {6};
  if (c.layout == Layout::Grid) structure = {2, 3};
  // Absolute schemes are added to the input (as models add them to their token embeddings); the
  // others are the attention's hooks. Both sit in one module so they move and report together.
  Module layer;
  std::vector<std::shared_ptr<AttentionHook>> hooks;
  std::vector<std::shared_ptr<AbsoluteEncoding>> absolute;
  for (const auto& [name, options] : c.hooks) {
    auto hook = make_hook(HookSpec{name, HookOptions(options)},
                          HookContext{.width = kDeviceWidth, .heads = kDeviceHeads, .structure = structure}, gen);
    if (auto a = std::dynamic_pointer_cast<AbsoluteEncoding>(hook))
      absolute.push_back(layer.register_module(fmt::format("absolute.{}", absolute.size()), a));
    else
      hooks.push_back(hook);
  }
  MultiHeadAttention& mha = *layer.register_module("attn", std::make_shared<MultiHeadAttention>(kDeviceWidth, kDeviceHeads, gen, hooks));
  layer.to(kFloat64);
  layer.to(device);
  mha.set_path(path);
  Generator data(9);
  const int64_t N = pos.tokens();
  Variable x(normal({kDeviceBatch, N, kDeviceWidth}, 0, 1, data, kFloat64).to(device), true);
  const Tensor weights = normal({kDeviceBatch, N, kDeviceWidth}, 0, 1, data, kFloat64).to(device);
  Tensor pad = Tensor::zeros({kDeviceBatch, N}, kFloat64);
  pad.narrow(0, 1, 1).narrow(1, N - 1, 1).fill_(1.0);
  AttentionMasks masks;
  masks.key_padding = pad.to(device);
  Variable input = x;
  for (const auto& a : absolute) input = a->embed(input, pos);
  Variable out = mha.forward(input, masks, &pos);
  sum(out * Variable(weights)).backward();
  LayerRun r{out.value().to(kCPU), x.grad().to(kCPU), {}, mha.last_forward_fused()};
  for (const auto& [name, p] : layer.named_parameters())
    r.grads.emplace_back(name, p.grad().defined() ? p.grad().to(kCPU) : Tensor::zeros(p.value().shape(), kFloat64));
  return r;
}

void check_agree(const LayerRun& cpu, const LayerRun& gpu, const std::string& label) {
  const double tol = 1e-9;
  BOOST_TEST_CONTEXT(label) {
    BOOST_TEST(allclose(gpu.out, cpu.out, tol, tol), "output differs by " << max_abs_diff(gpu.out, cpu.out));
    BOOST_TEST(allclose(gpu.dx, cpu.dx, tol, tol), "dx differs by " << max_abs_diff(gpu.dx, cpu.dx));
    BOOST_REQUIRE(gpu.grads.size() == cpu.grads.size());
    for (size_t i = 0; i < cpu.grads.size(); ++i)
      BOOST_TEST(allclose(gpu.grads[i].second, cpu.grads[i].second, tol, tol),
                 cpu.grads[i].first << " gradient differs by " << max_abs_diff(gpu.grads[i].second, cpu.grads[i].second));
  }
}

}  // namespace

BOOST_DATA_TEST_CASE(schemes_cuda_cpu_half, bdata::make(kDeviceCases), c) {
  // Every case builds and runs on the CPU, with finite results (the GPU suite compares to these).
  const LayerRun r = run_on(c, kCPU);
  BOOST_TEST(std::isfinite(sum(abs(r.out)).item()));
  BOOST_TEST(sum(abs(r.dx)).item() > 0.0);
}

BOOST_AUTO_TEST_SUITE(schemes_cuda, *boost::unit_test::precondition(posgrad::test::GpuPresent()))

BOOST_DATA_TEST_CASE(scheme_on_the_gpu_matches_the_cpu, bdata::make(kDeviceCases), c) {
  check_agree(run_on(c, kCPU), run_on(c, posgrad::test::kGPU), c.label);
}

// The fused path on the GPU (the GPU kernels, attention/fused/gpu/) against the CPU's fused path,
// for every case whose layer the CPU runs fused (not the escape hatch of ape_tree's decay).
BOOST_DATA_TEST_CASE(scheme_on_the_gpu_kernels_matches_the_cpu, bdata::make(kDeviceCases), c) {
  const LayerRun cpu = run_on(c, kCPU);
  if (!cpu.fused) {  // the reference path on every device
    BOOST_TEST_MESSAGE(c.label << ": the reference path on the CPU too; nothing to compare");
    return;
  }
  const LayerRun gpu = run_on(c, posgrad::test::kGPU, AttentionPath::Fused);
  BOOST_TEST(gpu.fused);
  check_agree(cpu, gpu, c.label + " (GPU fused kernels)");
}

// The share of the N^2 scores a forward computed follows the device it ran on: the span's key box
// on the CPU (the fused path), all of them on the GPU (the dense layout; the apps report it).
BOOST_AUTO_TEST_CASE(computed_share_follows_the_device) {
  Generator gen(3);
  const Positions grid = Positions::grid({8, 8});
  auto span = make_hook(HookSpec{"gaussian_span", HookOptions{{"sigma", "0.1"}, {"threshold", "0.1"}}},
                        HookContext{.width = kDeviceWidth, .heads = kDeviceHeads, .structure = {8, 8}}, gen);
  MultiHeadAttention mha(kDeviceWidth, kDeviceHeads, gen, {span});
  Generator data(4);
  const Tensor x = normal({1, 64, kDeviceWidth}, 0, 1, data);
  mha.forward(Variable(x), {}, &grid);
  BOOST_TEST(mha.last_computed_share(grid) < 0.5);  // a 5 x 5 box of the 8 x 8 grid at most
  mha.to(posgrad::test::kGPU);
  mha.forward(Variable(x.to(posgrad::test::kGPU)), {}, &grid);
  BOOST_TEST(mha.last_computed_share(grid) == 1.0);
}

BOOST_AUTO_TEST_SUITE_END()
