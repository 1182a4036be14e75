// bench_transformer: one training step (forward, cross-entropy, backward, AdamW) of the
// transformer classifier at a realistic size, against its PyTorch twin (bench/transformer_torch.py)
// on the same number of threads. Prints both medians and the ratio.
//
// Usage: bench_transformer [--batch 32] [--tokens 256] [--width 128] [--heads 4] [--ff 512]
//                          [--layers 4] [--reps 5] [--warmup 2] [--device cpu|cuda] [--no-torch]
//                          [--autocast none|bf16]
// --autocast bf16 runs the step inside an AutocastBf16 scope (tensor/autocast.h: bf16 tensor cores
// on a GPU; on the CPU the operands' rounding costs time and saves none) and the twin inside
// torch.autocast(dtype=torch.bfloat16).
// Steps are timed with DeviceTimer (CUDA events on a GPU, as the twin does; the host clock on the CPU);
// a GPU-sized run is e.g. --device cuda --batch 64 --tokens 512 --width 256 --heads 8 --ff 1024
// --layers 6.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "apps/common/device_setting.h"
#include "attention/transformer_classifier.h"
#include "bench/bench_cli.h"
#include "bench/torch_twin.h"
#include "nn/adam.h"
#include "nn/losses.h"
#include "posgrad.h"
#include "tensor/cpu/caching_allocator.h"
#include "tensor/device.h"

#ifdef POSGRAD_OPENMP
#include <omp.h>
#endif

using namespace posgrad;

namespace {
// The twin's median in ms, or a negative number when it could not run (its output says why).
double run_torch(const std::map<std::string, int64_t>& a, int threads, const Device& device, const std::string& autocast,
                 bench::TwinRun& run) {
  std::string args = fmt::format("--device {} --autocast {}", device.is_cpu() ? "cpu" : "cuda", autocast);
  for (const auto& [k, v] : a) args += fmt::format(" --{} {}", k, v);
  run = bench::run_torch_twin("transformer_torch.py", args, threads);
  const auto at = run.output.find("\"median_ms\": ");
  return !run.ok || at == std::string::npos ? -1 : std::stod(run.output.substr(at + 13));
}
}  // namespace

int main(int argc, char** argv) try {
  std::map<std::string, int64_t> a{{"batch", 32}, {"tokens", 256}, {"width", 128}, {"heads", 4},
                                   {"ff", 512},   {"layers", 4},   {"reps", 5},    {"warmup", 2},
                                   {"classes", 10}, {"vocab", 256}};
  bool no_torch = false;
  std::string device_name = "cpu", autocast = "none";
  bench::CommandLine cli("bench_transformer", "Times one training step of the transformer classifier against its PyTorch twin",
                         bench::CommandLine::kLaterOptionsWin);
  bench::add_integer_options(cli.options(), a);
  cli.options()
      .text("--device", device_name, "cpu, cuda or cuda:N")
      .flag("--no-torch", no_torch, "skip the PyTorch twin")
      .choice("--autocast", autocast, {"none", "bf16"}, "none, or bf16: matmuls multiply bf16 operands (tensor/autocast.h)");
  if (const auto exit_code = cli.parse(argc, argv)) return *exit_code;
  const bool torch = !no_torch;
  const Device device = apps::usable_device(device_name);  // a clear error without a GPU
  int threads = 1;
#ifdef POSGRAD_OPENMP
  threads = omp_get_max_threads();
#endif
  Generator gen(0);
  TransformerClassifierConfig cfg;
  cfg.vocab = a["vocab"];
  cfg.max_tokens = a["tokens"];
  cfg.classes = a["classes"];
  cfg.layers = a["layers"];
  cfg.block.width = a["width"];
  cfg.block.heads = a["heads"];
  cfg.block.ff_width = a["ff"];
  TransformerClassifier model(cfg, gen);
  model.to(device);
  AdamWOptions adamw;
  adamw.lr = 1e-3;
  AdamW opt(model.parameters(), adamw);
  Generator data_gen(1);
  Tensor tokens = clamp(mul_scalar(uniform({a["batch"], a["tokens"]}, 0, 1, data_gen), double(a["vocab"])), 0, double(a["vocab"] - 1)).to(kInt64).to(device);
  Tensor labels = clamp(mul_scalar(uniform({a["batch"]}, 0, 1, data_gen), double(a["classes"])), 0, double(a["classes"] - 1)).to(kInt64).to(device);

  auto step = [&] {
    AutocastBf16 scope(autocast == "bf16");
    opt.zero_grad();
    Variable loss = cross_entropy(model.forward(tokens), labels);
    loss.backward();
    opt.step();
  };
  for (int64_t i = 0; i < a["warmup"]; ++i) step();
  synchronize(device);
  std::vector<double> runs;
  const CpuMemoryStats memory_before = cpu_memory_stats();
  DeviceTimer timer(device);  // CUDA events on a GPU, like the twin's
  for (int64_t i = 0; i < a["reps"]; ++i) {
    timer.start();
    step();
    timer.stop();
    runs.push_back(timer.elapsed_ms());
  }
  const CpuMemoryStats memory = cpu_memory_stats();
  std::sort(runs.begin(), runs.end());
  const double ours = runs[runs.size() / 2];
  fmt::print("transformer training step  B={} N={} D={} H={} ff={} L={}  device={} threads={} autocast={}\n",
             a["batch"], a["tokens"], a["width"], a["heads"], a["ff"], a["layers"], device.str(), threads, autocast);
  fmt::print("  posgrad median {:.1f} ms  (runs: {:.1f})\n", ours, fmt::join(runs, ", "));
  fmt::print("  host allocator over the timed steps: {} system allocations, {} cache hits; peak in use "
             "{:.0f} MiB\n", memory.system_allocs - memory_before.system_allocs,
             memory.cache_hits - memory_before.cache_hits, double(memory.peak_bytes_in_use) / (1 << 20));
  if (torch) {
    std::map<std::string, int64_t> ta = a;
    bench::TwinRun run;
    const double theirs = run_torch(ta, threads, device, autocast, run);
    if (theirs < 0) {
      fmt::print("  PyTorch twin unavailable (needs python3 with torch: scripts/install_deps.sh --bench, or "
                 "POSGRAD_PYTHON): {}\n{}\n", run.command, run.tail());
    } else {
      fmt::print("  PyTorch median {:.1f} ms\n", theirs);
      fmt::print("  ratio posgrad/PyTorch = {:.2f}x  (< 1 means posgrad is faster)\n", ours / theirs);
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_transformer: %s\n", e.what());
  return 1;
}
