// bench_charlm_step: one training step (forward over [cache; segment], cross-entropy plus span
// loss, backward, AdamW, clamp) of the char LM with adaptive span (attention/lm/
// char_transformer.h) at the shakespeare_cpu size, against its PyTorch twin (bench/charlm_torch.py,
// masking only: dense attention over all S cached keys) on the same threads; then generation
// speed (one token per call, with the layer-input cache and with the K/V cache). Every head starts at c = --span-init (the spans a
// trained model would have), so trimming cuts the window to ceil(max z) + 32 rounded up to 64.
//
// Usage: bench_charlm_step [--batch 16] [--segment 128] [--max-span 256] [--layers 4] [--width 128]
//                          [--heads 4] [--ff 512] [--span-init-permille 100] [--reps 5] [--warmup 2]
//                          [--generate 200] [--context 512] [--no-torch] [--reference | --fused]
//                          [--device cpu|cuda]
// --device cuda runs the step and the generation on the GPU (a CUDA build), the twin on the same
// GPU; steps are timed from the host after a synchronize, like the twin's.
// --reference runs the attention on the reference path (the dense M x (W + M) product of the
// segment with [cache; segment]) instead of the fused path (each query only its W keys).
#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include "apps/common/device_setting.h"
#include "attention/lm/char_transformer.h"
#include "bench/bench_cli.h"
#include "bench/torch_twin.h"
#include "nn/adam.h"
#include "nn/losses.h"
#include "posgrad.h"
#include "tensor/device.h"

#ifdef POSGRAD_OPENMP
#include <omp.h>
#endif

using namespace posgrad;

namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

Tensor random_tokens(int64_t B, int64_t N, int64_t V, Generator& gen) {
  std::vector<int64_t> t(static_cast<size_t>(B * N));
  for (auto& v : t) v = std::min<int64_t>(V - 1, static_cast<int64_t>(gen.next_uniform() * static_cast<double>(V)));
  return Tensor::from_vector(t, {B, N});
}
}  // namespace

int main(int argc, char** argv) try {
  std::map<std::string, int64_t> a{{"batch", 16}, {"segment", 128}, {"max-span", 256}, {"layers", 4},
                                   {"width", 128}, {"heads", 4},    {"ff", 512},        {"span-init-permille", 100},
                                   {"reps", 5},    {"warmup", 2},   {"generate", 200},  {"context", 512}};
  bool no_torch = false, reference = false, fused = false;
  std::string device_name = "cpu";
  bench::CommandLine cli("bench_charlm_step",
                         "Times one training step and generation of the char LM with adaptive span against its PyTorch twin",
                         bench::CommandLine::kLaterOptionsWin);
  bench::add_integer_options(cli.options(), a);
  cli.options()
      .text("--device", device_name, "cpu, cuda or cuda:N")
      .flag("--reference", reference, "the attention on the reference path instead of the fused one")
      .flag("--fused", fused, "the fused path even on a GPU (where auto takes the reference path)")
      .flag("--no-torch", no_torch, "skip the PyTorch twin");
  if (const auto exit_code = cli.parse(argc, argv)) return *exit_code;
  const bool torch = !no_torch;
  const Device device = apps::usable_device(device_name);  // a clear error without a GPU
  int threads = 1;
#ifdef POSGRAD_OPENMP
  threads = omp_get_max_threads();
#endif
  const int64_t V = 65, B = a["batch"], M = a["segment"];
  const double init = static_cast<double>(a["span-init-permille"]) / 1000.0;
  CharTransformerConfig c;
  c.vocab = V;
  c.layers = a["layers"];
  c.ff_width = a["ff"];
  c.attention.width = a["width"];
  c.attention.heads = a["heads"];
  c.attention.max_span = a["max-span"];
  c.attention.span_init = init;
  if (reference && fused) fail("--reference and --fused: one path at a time");
  c.attention.path = reference ? AttentionPath::Reference : fused ? AttentionPath::Fused : AttentionPath::Auto;
  Generator gen(0);
  CharTransformer model(c, gen);
  model.to(device);
  AdamW opt(model.parameters(), AdamWOptions{.lr = 1e-3, .weight_decay = 0.0});
  LayerCache cache;
  std::vector<double> times;
  for (int64_t step = 0; step < a["warmup"] + a["reps"]; ++step) {
    const Tensor tokens = random_tokens(B, M + 1, V, gen).to(device);
    synchronize(device);
    const auto start = std::chrono::steady_clock::now();
    Variable logits = model.forward(tokens.narrow(1, 0, M).contiguous(), cache, gen);
    Variable loss = cross_entropy(logits, tokens.narrow(1, 1, M).contiguous()) + model.span_loss();
    opt.zero_grad();
    loss.backward();
    opt.step();
    model.clamp_spans();
    synchronize(device);
    if (step >= a["warmup"]) times.push_back(seconds_since(start));
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  fmt::print("charlm training step: batch {} x segment {}, max span {}, c = {} (window {}), {} layers, width {}, "
             "device {}, {} threads\n",
             B, M, c.attention.max_span, init, model.layer(0).window(), c.layers, c.attention.width,
             device.str(), threads);
  fmt::print("  posgrad  median {:8.1f} ms  {:8.0f} tokens/s  ({} path; attention work {:.0f}% of full [S; segment])\n",
             median * 1e3, static_cast<double>(B * M) / median,
             model.layer(0).attention().last_forward_fused() ? "fused" : "reference",  // the path that ran
             100.0 * model.attention_flops_share(M));
  if (torch) {
    const std::string args = fmt::format("--batch {} --segment {} --max-span {} --layers {} --width {} --heads {} --ff {} "
                                         "--span-init {} --reps {} --warmup {} --device {}",
                                         B, M, a["max-span"], a["layers"], a["width"], a["heads"], a["ff"], init,
                                         a["reps"], a["warmup"], device.is_cpu() ? "cpu" : "cuda");
    const bench::TwinRun run = bench::run_torch_twin("charlm_torch.py", args, threads);
    const auto at = run.output.find("\"median_ms\": ");
    if (!run.ok || at == std::string::npos) {
      fmt::print("  pytorch  (twin failed: {})\n", run.tail());
    } else {
      const double torch_ms = std::stod(run.output.substr(at + 13));
      fmt::print("  pytorch  median {:8.1f} ms  {:8.0f} tokens/s  (masking only)   posgrad / pytorch time {:.2f}\n",
                 torch_ms, static_cast<double>(B * M) / (torch_ms / 1e3), median * 1e3 / torch_ms);
    }
  }

  // Generation, greedy at batch 1: one token per call, (a) with the layer-input cache (each call
  // recomputes K/V over the window: O(W D^2) per layer and token), (b) with the K/V cache
  // (forward_incremental: the token projects only itself), after a context of --context tokens.
  NoGradGuard no_grad;
  model.eval();
  auto generate = [&](bool kv) {
    Generator g(7);
    LayerCache layer_cache;
    DecodeCache decode_cache;
    const Tensor context = random_tokens(1, a["context"], V, g).to(device);
    if (kv) model.forward_incremental(context, decode_cache, g);
    else model.forward(context, layer_cache, g);
    Tensor next = random_tokens(1, 1, V, g).to(device);
    const auto start = std::chrono::steady_clock::now();
    for (int64_t t = 0; t < a["generate"]; ++t) {
      const Tensor logits =
          (kv ? model.forward_incremental(next, decode_cache, g) : model.forward(next, layer_cache, g)).value();
      const auto row = logits.reshape({V}).to_vector<float>();
      next = Tensor::from_vector(std::vector<int64_t>{std::max_element(row.begin(), row.end()) - row.begin()}, {1, 1})
                 .to(device);
    }
    return static_cast<double>(a["generate"]) / seconds_since(start);
  };
  if (a["generate"] > 0) {
    const double recompute = generate(false), cached = generate(true);
    fmt::print("  generation (greedy, batch 1, after {} tokens): layer-input cache (K/V recomputed) {:.0f} tokens/s, "
               "K/V cache {:.0f} tokens/s ({:.2f}x)\n",
               a["context"], recompute, cached, cached / recompute);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_charlm_step: error: %s\n", e.what());
  return 1;
}
