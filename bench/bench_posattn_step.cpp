// bench_posattn_step: one training step (forward, cross-entropy, backward, Adam) of the posattn
// thesis classifier (attention/posattn_classifier.h: D 64, H 8, L 6, FFN 128, siren positions
// with a gaussian_span per layer) on random 32 x 32 x 3 "images" read as N = 1024 tokens.
// Prints the median step time and, over the timed steps, the process's user and system CPU time
// and minor page faults (getrusage), and its peak RSS, so allocator effects are visible: the
// system time of a step is mostly page faults on freshly mapped memory; and the caching host
// allocator's counters (tensor/cpu/caching_allocator.h) over the timed steps.
//
// Also prints the share of the N^2 score entries the attention path computes (mean over layers),
// and on the CPU the step's floor (bench_floor.h): its matmul FLOPs, this machine's SGEMM rate
// measured in the same run, the step's ratio to the time those FLOPs take at that rate, and the
// CPU's vector extensions, so that figures from different machines compare.
//
// PyTorch twins (bench/posattn_torch.py, run on the same thread count; --twins none skips them):
// `v1`, the thesis's own layout (P [H, Dh, N, N] materialised per query/key pair), and
// `efficient` (q times the relative table, then an index gather; the box as a -inf mask). Both
// compute all N^2 scores whatever the span. Each prints its time per step and peak RSS, and this
// program the ratio posgrad / twin.
//
// --checkpoint RUN_OR_STEP_FOLDER loads the learned sigmas of a trained 2-D + span posattn run
// (its `checkpoints/best`, or the given step folder) into the benchmarked model, so the step is
// timed at the spans a trained model learned (where posgrad's fused path pays); the twins get the
// same sigmas. A checkpoint with fewer layers than the model is stretched over its layers (layer l
// takes the checkpoint's layer l * Lc / L).
//
// --device cuda runs the step on the GPU (a CUDA build; timed with CUDA events) and the twins on
// the same GPU (TF32 off on both sides); the CPU counters above then describe only the host side.
//
// Usage: bench_posattn_step [--batch 4] [--side 32] [--dims 1] [--span 1] [--reps 5] [--warmup 1]
//                           [--path auto|reference|fused] [--scheme siren|txl_baseline|...]
//                           [--twins both|v1|efficient|none] [--twin-reps 2] [--twin-warmup 1]
//                           [--checkpoint FOLDER] [--device cpu|cuda]
// Deliberately not here: posgrad's other paths against each other in one call (run it per --path).
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include "apps/common/device_setting.h"
#include "bench/bench_cli.h"
#include "bench/bench_floor.h"
#include "bench/torch_twin.h"
#include "nn/checkpoint.h"
#include "posgrad.h"
#include "tensor/cpu/caching_allocator.h"
#include "tensor/device.h"

#ifdef POSGRAD_OPENMP
#include <omp.h>
#endif

using namespace posgrad;

namespace {

struct Usage {
  double user_s, system_s;
  long minor_faults, max_rss_kib;
};

Usage usage_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  return {seconds(u.ru_utime), seconds(u.ru_stime), u.ru_minflt, u.ru_maxrss};
}

// The step folder of `folder`: itself when it holds model.safetensors, else the one its
// checkpoints/best (or checkpoints/latest) pointer names.
std::filesystem::path checkpoint_step_folder(const std::filesystem::path& folder) {
  namespace fs = std::filesystem;
  if (fs::exists(folder / "model.safetensors")) return folder;
  for (const char* pointer : {"best", "latest"}) {
    const fs::path file = folder / "checkpoints" / pointer;
    if (!fs::exists(file)) continue;
    std::string name;
    if (FILE* f = std::fopen(file.c_str(), "r")) {
      char buf[256];
      while (std::fgets(buf, sizeof buf, f)) name += buf;
      std::fclose(f);
    }
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
    return folder / "checkpoints" / name;
  }
  fail("bench_posattn_step: '{}' is neither a checkpoint step folder (no model.safetensors) nor a run folder "
       "(no checkpoints/best or checkpoints/latest)", folder.string());
}

// Per layer of a `layers`-layer model, the sigma tensor [n] of the checkpoint's layer l * Lc / L,
// keyed by the model's parameter name ("blocks.<l>.attn.hooks.<k>.sigma"); `values` gets them flat.
std::map<std::string, Tensor> learned_sigmas(const std::filesystem::path& folder, int64_t layers, int64_t dims,
                                             std::vector<double>& values) {
  const Checkpoint ck = load_checkpoint(checkpoint_step_folder(folder));
  const std::regex name(R"(blocks\.(\d+)\.attn\.hooks\.(\d+)\.sigma)");
  std::map<int64_t, std::pair<std::string, Tensor>> by_layer;  // checkpoint layer -> (hook suffix, sigma)
  for (const auto& [key, tensor] : ck.model) {
    std::smatch m;
    if (std::regex_match(key, m, name)) by_layer[std::stoll(m[1])] = {m[2], tensor};
  }
  if (by_layer.empty()) fail("bench_posattn_step: checkpoint '{}' holds no span sigma (train a run with model.span: true)",
                             folder.string());
  const int64_t checkpoint_layers = static_cast<int64_t>(by_layer.size());
  std::map<std::string, Tensor> out;
  for (int64_t l = 0; l < layers; ++l) {
    const auto& [hook, sigma] = by_layer.at(l * checkpoint_layers / layers);
    if (sigma.numel() != dims)
      fail("bench_posattn_step: checkpoint '{}' has {} sigma(s) per layer, the benchmark's model {} (--dims)",
           folder.string(), sigma.numel(), dims);
    for (double v : sigma.to_vector<double>()) values.push_back(std::abs(v));
    out[fmt::format("blocks.{}.attn.hooks.{}.sigma", l, hook)] = sigma;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  std::map<std::string, int64_t> a{{"batch", 4}, {"side", 32}, {"dims", 1}, {"span", 1},
                                   {"reps", 5},  {"warmup", 1}, {"classes", 10}};
  std::map<std::string, int64_t> twin_reps{{"twin-reps", 2}, {"twin-warmup", 1}};
  std::string path = "auto", scheme = "siren", twins = "both", checkpoint, device_name = "cpu";
  bench::CommandLine cli("bench_posattn_step", "Times one training step of the posattn classifier against its PyTorch twins",
                         bench::CommandLine::kLaterOptionsWin);
  bench::add_integer_options(cli.options(), a);
  bench::add_integer_options(cli.options(), twin_reps);
  cli.options()
      .choice("--path", path, attention_path_names(), "attention path: auto, reference or fused")
      .text("--scheme", scheme, "positional scheme (siren, txl_baseline, ...)")
      .choice("--twins", twins, {"both", "v1", "efficient", "none"}, "PyTorch twins to run")
      .path("--checkpoint", checkpoint, "a trained 2-D + span run (or step folder) whose learned sigmas to load")
      .text("--device", device_name, "cpu, cuda or cuda:N");
  if (const auto exit_code = cli.parse(argc, argv)) return *exit_code;
  const Device device = apps::usable_device(device_name);  // a clear error without a GPU
  int threads = 1;
#ifdef POSGRAD_OPENMP
  threads = omp_get_max_threads();
#endif
  const int64_t side = a["side"];
  PosattnClassifierConfig cfg;  // the thesis sizes are the defaults
  cfg.classes = a["classes"];
  cfg.dims = a["dims"];
  cfg.structure = {side, side};
  cfg.span = a["span"] != 0;
  cfg.path = attention_path_from_name(path);
  cfg.positional = scheme;
  Generator gen(0);
  PosattnClassifier model(cfg, gen);
  std::vector<double> sigmas;
  if (!checkpoint.empty()) {
    if (!cfg.span) fail("bench_posattn_step: --checkpoint loads span sigmas; it needs --span 1");
    model.load_state_dict(learned_sigmas(checkpoint, cfg.layers, cfg.dims, sigmas), /*strict=*/false);
  }
  model.to(device);
  Adam opt(model.parameters(), AdamOptions{});

  Generator data_gen(1);
  // x [B, S0, S1, C], labels [B]
  Tensor images = uniform({a["batch"], side, side, cfg.input_dim}, -1, 1, data_gen);
  Tensor labels = clamp(mul_scalar(uniform({a["batch"]}, 0, 1, data_gen), double(cfg.classes)), 0,
                        double(cfg.classes - 1)).to(kInt64);
  images = images.to(device);
  labels = labels.to(device);

  auto step = [&] {
    opt.zero_grad();
    Variable loss = cross_entropy(model.forward(Variable(images)), labels);
    loss.backward();
    opt.step();
  };
  for (int64_t i = 0; i < a["warmup"]; ++i) step();
  synchronize(device);
  std::vector<double> runs;
  const CpuMemoryStats memory_before = cpu_memory_stats();
  const Usage before = usage_now();
  DeviceTimer timer(device);  // CUDA events on a GPU, like the twins'; the wall clock on the CPU
  for (int64_t i = 0; i < a["reps"]; ++i) {
    timer.start();
    step();
    timer.stop();
    runs.push_back(timer.elapsed_ms());
  }
  const Usage after = usage_now();
  const CpuMemoryStats memory = cpu_memory_stats();
  std::sort(runs.begin(), runs.end());
  const double reps = double(a["reps"]);
  fmt::print("posattn training step  B={} N={} dims={} span={} scheme={} path={}  device={} threads={}\n",
             a["batch"], side * side, a["dims"], a["span"], scheme, path, device.str(), threads);
  const double median = runs[runs.size() / 2];
  const Positions positions = model.positions_for({side, side});
  double share = 0;
  for (const auto& block : model.blocks())
    share += block->attention().last_computed_share(positions);
  share /= double(model.blocks().size());
  if (!sigmas.empty()) fmt::print("  learned sigmas from {}: {:.3f}\n", checkpoint, fmt::join(sigmas, ", "));
  fmt::print("  median {:.1f} ms  (runs: {:.1f})  computed share of the N^2 scores {:.3f}\n", median,
             fmt::join(runs, ", "), share);
  fmt::print("  per step: user {:.2f} s  sys {:.2f} s  minor faults {:.0f}\n",
             (after.user_s - before.user_s) / reps, (after.system_s - before.system_s) / reps,
             double(after.minor_faults - before.minor_faults) / reps);
  fmt::print("  peak RSS {:.0f} MiB\n", double(after.max_rss_kib) / 1024.0);
  if (device.is_cpu()) {
    // The step's FLOPs (bench_floor.h): the input layer; per block the q, k, v and o projections,
    // the attention over the keys it computes (the mean share) and the FFN; the output layers.
    const int64_t B = a["batch"], N = side * side, D = cfg.width, rows = B * N;
    const double block = 4 * bench::linear_flops(rows, D, D) +
                         bench::attention_flops(B, cfg.heads, N, share * double(N), D / cfg.heads) +
                         bench::linear_flops(rows, D, cfg.ff_width) + bench::linear_flops(rows, cfg.ff_width, D);
    const double forward = bench::linear_flops(rows, cfg.input_dim, D) + double(cfg.layers) * block +
                           bench::linear_flops(B, D, cfg.output_hidden) +
                           bench::linear_flops(B, cfg.output_hidden, cfg.classes);
    bench::print_floor(bench::measure_sgemm_floor(threads), bench::kForwardAndBackward * forward, median);
  }
  fmt::print("  host allocator over the timed steps: {} system allocations, {} frees, {} cache hits; "
             "peak in use {:.0f} MiB, cached now {:.0f} MiB\n",
             memory.system_allocs - memory_before.system_allocs,
             memory.system_frees - memory_before.system_frees,
             memory.cache_hits - memory_before.cache_hits, double(memory.peak_bytes_in_use) / (1 << 20),
             double(memory.bytes_cached) / (1 << 20));
  for (const std::string layout : {"v1", "efficient"}) {
    if (twins != "both" && twins != layout) continue;
    std::string args = fmt::format("--layout {} --batch {} --side {} --dims {} --span {} --scheme {} --threshold {} "
                                   "--reps {} --warmup {} --classes {} --device {}",
                                   layout, a["batch"], side, a["dims"], a["span"], scheme, cfg.threshold,
                                   twin_reps["twin-reps"], twin_reps["twin-warmup"], a["classes"],
                                   device.is_cpu() ? "cpu" : "cuda");
    if (!sigmas.empty()) args += fmt::format(" --sigmas {}", fmt::join(sigmas, ","));
    const bench::TwinRun run = bench::run_torch_twin("posattn_torch.py", args, threads);
    const auto at = run.output.find("\"median_ms\": "), rss = run.output.find("\"peak_rss_mib\": ");
    if (!run.ok || at == std::string::npos || rss == std::string::npos) {
      fmt::print("  pytorch {:9}  (twin failed: {})\n", layout, run.tail());
      continue;
    }
    const double torch_ms = std::stod(run.output.substr(at + 13));
    fmt::print("  pytorch {:9}  median {:.1f} ms  peak RSS {:.0f} MiB   posgrad / pytorch time {:.2f}\n", layout, torch_ms,
               std::stod(run.output.substr(rss + 16)), median / torch_ms);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_posattn_step: %s\n", e.what());
  return 1;
}
