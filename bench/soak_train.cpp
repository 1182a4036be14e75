// soak_train: a memory soak test (not a CTest; it runs for minutes). Trains a small
// TransformerClassifier (2 layers, width 32) with AdamW and gradient clipping on a fixed random
// data set for many steps, and watches two things:
//   * the tensor storage counters (tensor/storage.h): after every step the number of live
//     storages and their bytes must be exactly what they were after the first step (parameters,
//     gradients and optimizer state; everything else a step makes must be freed);
//   * the resident set size (/proc/self/statm), sampled every --sample-every steps: it must stop
//     growing after warm-up, i.e. grow by less than --max-growth percent between the --warmup
//     step and the last step.
// Prints the memory curve as a table (step, RSS MB, live storages, live MB, loss) and a verdict;
// exits 1 when either check fails.
//
// Usage: soak_train [--steps 10000] [--sample-every 100] [--warmup 2000] [--max-growth 1.0]
//                   [--batch 16] [--tokens 16] [--seed 0] [--inject-leak KB]
// --inject-leak KB keeps a KB-sized tensor alive from every step: the self-check that both
// detectors fail on a real leak.
// In an AddressSanitizer build (scripts/test_sanitized.sh) the RSS check is reported but not
// judged: ASan keeps every freed block in its quarantine (up to 256 MB by default) and adds shadow
// memory, so RSS grows there whatever the program does. The two counter checks still decide.
// Deliberately no PyTorch twin (bench/CMakeLists.txt builds it with the benchmarks).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

#include "attention/transformer_classifier.h"
#include "bench/bench_cli.h"
#include "nn/adam.h"
#include "nn/clip_grad.h"
#include "nn/losses.h"
#include "posgrad.h"
#include "tensor/cpu/caching_allocator.h"
#include "tensor/storage.h"

using namespace posgrad;

namespace {

// Resident set size in bytes: field 2 of /proc/self/statm, in pages.
double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long long size = 0, resident = 0;
  if (!(statm >> size >> resident)) fail("soak_train: cannot read /proc/self/statm");
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// The peak resident set (VmHWM in /proc/self/status), in bytes.
double peak_resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      double kb = 0;
      status >> kb;
      return kb * 1024.0;
    }
    status.ignore(1 << 20, '\n');
  }
  return 0.0;
}

constexpr double kMB = 1024.0 * 1024.0;

}  // namespace

int main(int argc, char** argv) try {
  std::map<std::string, int64_t> a{{"steps", 10000}, {"sample-every", 100}, {"warmup", 2000},
                                   {"batch", 16},    {"tokens", 16},        {"seed", 0}};
  double max_growth = 1.0, inject_leak_kb = 0;
  bench::CommandLine cli("soak_train", "Trains a small transformer for many steps and checks that memory stops growing",
                         bench::CommandLine::kLaterOptionsWin);
  bench::add_integer_options(cli.options(), a, {"steps", "sample-every", "batch", "tokens"});
  cli.options()
      .number("--max-growth", max_growth, "allowed RSS growth after warm-up, percent", bench::NumberRange::at_least(0))
      .number("--inject-leak", inject_leak_kb, "KB kept alive from every step (the self-check)",
              bench::NumberRange::at_least(0));
  if (const auto exit_code = cli.parse(argc, argv)) return *exit_code;
  const int64_t steps = a["steps"], every = a["sample-every"], batch = a["batch"], tokens = a["tokens"];
  const int64_t warmup = std::min<int64_t>(a["warmup"], steps);

  // The model and a fixed data set: 64 batches whose label is the first token modulo the classes
  // (learnable, so the loss visibly falls while memory should not move).
  Generator gen(static_cast<uint64_t>(a["seed"]));
  TransformerClassifierConfig config;
  config.vocab = 32;
  config.max_tokens = tokens;
  config.classes = 4;
  config.layers = 2;
  config.block.width = 32;
  config.block.heads = 4;
  config.block.ff_width = 64;
  TransformerClassifier model(config, gen);
  AdamWOptions adamw;
  adamw.lr = 1e-3;
  AdamW opt(model.parameters(), adamw);
  const int64_t batches = 64;
  Tensor data = clamp(mul_scalar(uniform({batches, batch, tokens}, 0, 1, gen), 32.0), 0, 31).to(kInt64);
  Tensor labels = data.select(2, 0).clone();  // [batches, batch]
  {
    std::vector<int64_t> l = labels.to_vector<int64_t>();
    for (int64_t& v : l) v %= config.classes;
    labels = Tensor::from_vector(l, {batches, batch});
  }

  std::vector<Tensor> leaked;  // --inject-leak only
  const auto leak_floats = static_cast<int64_t>(inject_leak_kb * 1024 / 4);
  auto step = [&](int64_t s) {
    opt.zero_grad();
    Variable loss = cross_entropy(model.forward(data.select(0, s % batches)), labels.select(0, s % batches));
    if (leak_floats > 0) leaked.push_back(Tensor::ones({leak_floats}));
    loss.backward();
    clip_grad_norm_(model.parameters(), 1.0);
    opt.step();
    return loss.item();
  };

  fmt::print("soak_train: {} steps, batch {} x {} tokens, TransformerClassifier L=2 D=32 H=4 ({} parameters)\n",
             steps, batch, tokens, model.num_parameters());
  fmt::print("{:>7} {:>9} {:>14} {:>9} {:>8}\n", "step", "RSS MB", "live storages", "live MB", "loss");
  const auto t0 = std::chrono::steady_clock::now();
  double loss = step(0);
  const StorageCounters steady = storage_counters();  // after the first step: the state to come back to
  // The caching allocator: after a warm-up step (Adam makes its state in step 1), bytes in use and
  // cached must come back to the same values after every step, with no new system allocation.
  loss = step(1);
  const CpuMemoryStats pool = cpu_memory_stats();
  int64_t pool_mismatches = 0, first_pool_mismatch = -1;
  int64_t counter_mismatches = 0, first_mismatch = -1;
  std::vector<std::pair<int64_t, double>> curve;
  auto sample = [&](int64_t s) {
    const StorageCounters c = storage_counters();
    const double rss = resident_bytes();
    curve.emplace_back(s, rss);
    fmt::print("{:>7} {:>9.2f} {:>14} {:>9.3f} {:>8.4f}\n", s, rss / kMB, c.live, static_cast<double>(c.live_bytes) / kMB,
               loss);
    std::fflush(stdout);
  };
  sample(2);
  for (int64_t s = 2; s < steps; ++s) {
    loss = step(s);
    const StorageCounters c = storage_counters();
    if (c.live != steady.live || c.live_bytes != steady.live_bytes) {
      if (first_mismatch < 0) first_mismatch = s + 1;
      ++counter_mismatches;
    }
    const CpuMemoryStats p = cpu_memory_stats();
    if (p.bytes_in_use != pool.bytes_in_use || p.bytes_cached != pool.bytes_cached ||
        p.system_allocs != pool.system_allocs) {
      if (first_pool_mismatch < 0) first_pool_mismatch = s + 1;
      ++pool_mismatches;
    }
    if ((s + 1) % every == 0) sample(s + 1);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // RSS at the last sample not after the warm-up step, and at the end.
  double rss_warm = curve.front().second;
  int64_t warm_step = curve.front().first;
  for (const auto& [s, rss] : curve)
    if (s <= warmup) rss_warm = rss, warm_step = s;
  const double rss_end = curve.back().second;
  const double growth = 100.0 * (rss_end - rss_warm) / rss_warm;
  const StorageCounters end = storage_counters();
  fmt::print("\n{} steps in {:.1f} s ({:.2f} ms/step); storages made: {}\n", steps, seconds, 1e3 * seconds / steps,
             end.created);
  fmt::print("storage counters after every step vs after step 1 ({} storages, {:.3f} MB): {}\n", steady.live,
             static_cast<double>(steady.live_bytes) / kMB,
             counter_mismatches == 0 ? std::string("identical")
                                     : fmt::format("{} steps differ (first: step {})", counter_mismatches, first_mismatch));
  fmt::print("RSS: {:.2f} MB at step {}, {:.2f} MB at step {}: growth {:+.3f}% (limit {}%); peak {:.2f} MB\n",
             rss_warm / kMB, warm_step, rss_end / kMB, curve.back().first, growth,
             max_growth, peak_resident_bytes() / kMB);
  const CpuMemoryStats pool_end = cpu_memory_stats();
  fmt::print("caching allocator after every step vs after step 2 ({:.3f} MB in use, {:.3f} MB cached, {} system "
             "allocations): {}\n",
             static_cast<double>(pool.bytes_in_use) / kMB, static_cast<double>(pool.bytes_cached) / kMB,
             pool.system_allocs,
             pool_mismatches == 0 ? std::string("identical")
                                  : fmt::format("{} steps differ (first: step {}; {} system allocations at the end)",
                                                pool_mismatches, first_pool_mismatch, pool_end.system_allocs));
  const bool rss_judged = !kAddressSanitizer;
  if (!rss_judged)
    fmt::print("RSS not judged: an AddressSanitizer build (its quarantine of freed blocks grows RSS by itself)\n");
  const bool ok = counter_mismatches == 0 && pool_mismatches == 0 && (!rss_judged || growth < max_growth);
  fmt::print("{}\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "soak_train: %s\n", e.what());
  return 2;
}
