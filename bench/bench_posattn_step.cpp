// bench_posattn_step: one training step (forward, cross-entropy, backward, Adam) of the posattn
// thesis classifier (attention/posattn_classifier.h: D 64, H 8, L 6, FFN 128, siren positions
// with a gaussian_span per layer) on random 32 x 32 x 3 "images" read as N = 1024 tokens.
// Prints the median step time and, over the timed steps, the process's user and system CPU time
// and minor page faults (getrusage), and its peak RSS, so allocator effects are visible: the
// system time of a step is mostly page faults on freshly mapped memory; and the caching host
// allocator's counters (tensor/cpu/caching_allocator.h) over the timed steps.
//
// Usage: bench_posattn_step [--batch 4] [--side 32] [--dims 1] [--span 1] [--reps 5] [--warmup 1]
//                           [--path auto|reference|fast|fused] [--scheme siren|txl_baseline|...]
// Deliberately no PyTorch twin: it measures posgrad against itself (allocator on/off, etc.).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "posgrad.h"
#include "tensor/cpu/caching_allocator.h"

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

}  // namespace

int main(int argc, char** argv) try {
  std::map<std::string, int64_t> a{{"batch", 4}, {"side", 32}, {"dims", 1}, {"span", 1},
                                   {"reps", 5},  {"warmup", 1}, {"classes", 10}};
  std::string path = "auto", scheme = "siren";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--path" && i + 1 < argc) {
      path = argv[++i];
      continue;
    }
    if (arg == "--scheme" && i + 1 < argc) {
      scheme = argv[++i];
      continue;
    }
    if (arg.rfind("--", 0) != 0 || i + 1 >= argc || !a.count(arg.substr(2)))
      fail("bench_posattn_step: unknown or incomplete argument '{}'", arg);
    a[arg.substr(2)] = std::stoll(argv[++i]);
  }
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
  Adam opt(model.parameters(), AdamOptions{});

  Generator data_gen(1);
  // x [B, S0, S1, C], labels [B]
  Tensor images = uniform({a["batch"], side, side, cfg.input_dim}, -1, 1, data_gen);
  Tensor labels = clamp(mul_scalar(uniform({a["batch"]}, 0, 1, data_gen), double(cfg.classes)), 0,
                        double(cfg.classes - 1)).to(kInt64);

  auto step = [&] {
    opt.zero_grad();
    Variable loss = cross_entropy(model.forward(Variable(images)), labels);
    loss.backward();
    opt.step();
  };
  for (int64_t i = 0; i < a["warmup"]; ++i) step();
  std::vector<double> runs;
  const CpuMemoryStats memory_before = cpu_memory_stats();
  const Usage before = usage_now();
  for (int64_t i = 0; i < a["reps"]; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    runs.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const Usage after = usage_now();
  const CpuMemoryStats memory = cpu_memory_stats();
  std::sort(runs.begin(), runs.end());
  const double reps = double(a["reps"]);
  fmt::print("posattn training step  B={} N={} dims={} span={} scheme={} path={}  threads={}\n", a["batch"],
             side * side, a["dims"], a["span"], scheme, path, threads);
  fmt::print("  median {:.1f} ms  (runs: {:.1f})\n", runs[runs.size() / 2], fmt::join(runs, ", "));
  fmt::print("  per step: user {:.2f} s  sys {:.2f} s  minor faults {:.0f}\n",
             (after.user_s - before.user_s) / reps, (after.system_s - before.system_s) / reps,
             double(after.minor_faults - before.minor_faults) / reps);
  fmt::print("  peak RSS {:.0f} MiB\n", double(after.max_rss_kib) / 1024.0);
  fmt::print("  host allocator over the timed steps: {} system allocations, {} frees, {} cache hits; "
             "peak in use {:.0f} MiB, cached now {:.0f} MiB\n",
             memory.system_allocs - memory_before.system_allocs,
             memory.system_frees - memory_before.system_frees,
             memory.cache_hits - memory_before.cache_hits, double(memory.peak_bytes_in_use) / (1 << 20),
             double(memory.bytes_cached) / (1 << 20));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_posattn_step: %s\n", e.what());
  return 1;
}
