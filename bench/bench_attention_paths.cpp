// bench_attention_paths: forward + backward of one multi-head attention layer whose keys are
// limited to a window (the local_window span), through the dense reference path and the fused
// path (attention/fused/), at span fractions 1, 1/2, 1/8, 1/32 of the keys, in 1-D (N = 1024, 4096) and
// 2-D (32x32, 64x64). The PyTorch twin (bench/attention_paths_torch.py) runs the same layer
// densely with the same mask on the same threads. Prints medians, speedups and ratios; "span
// gain" is the fused path's CPU time at fraction 1 over its CPU time at this fraction (CPU time of
// the process, steadier than wall time on a shared machine; with more than one thread it includes
// OpenMP's spinning).
// With --device cuda the layer runs on the GPU: the fused path is the GPU kernels
// (attention/fused/gpu/), every time is wall time after a synchronize, the span gain is taken from
// wall times, and the twin runs on the same GPU three ways: dense masked scores, PyTorch's
// scaled_dot_product_attention with the boolean mask, and FlexAttention with a block mask of the
// same box (compiled; "n/a" where that PyTorch has no FlexAttention). There is no floor column.
//
// Usage: bench_attention_paths [--batch 1] [--width 128] [--heads 4] [--reps 3] [--warmup 1]
//                              [--cases 1d1024,1d4096,2d32,2d64] [--fractions 1,1/2,1/8,1/32]
//                              [--device cpu|cuda] [--no-torch] [--no-reference]
// Fraction f means the window holds about f*N keys: 1-D radius (fN - 1)/2, 2-D side sqrt(f)*S.
// At f = 1 there is no window (full attention). "keys" is the key box's size per query.
// The floor (bench_floor.h): "GFLOP" counts the step's matmuls (projections, q . k and p v over the
// box, forward + backward = 3x forward), "fused/floor" is the fused wall time over the time those
// FLOPs take at the SGEMM rate measured at the start of the run (printed with the CPU's vector
// extensions), so that figures from different machines compare.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "apps/common/device_setting.h"
#include "attention/multi_head_attention.h"
#include "attention/registry.h"
#include "bench/bench_cli.h"
#include "bench/bench_floor.h"
#include "bench/torch_twin.h"
#include "posgrad.h"

#ifdef POSGRAD_OPENMP
#include <omp.h>
#endif

using namespace posgrad;

namespace {

struct Case {
  std::string name;
  std::vector<int64_t> structure;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Window radius giving about `fraction` of the keys; -1 = no window.
int64_t radius_for(const std::vector<int64_t>& S, double fraction) {
  if (fraction >= 1.0) return -1;
  if (S.size() == 1) return std::max<int64_t>(0, static_cast<int64_t>(std::lround((fraction * static_cast<double>(S[0]) - 1) / 2)));
  const double side = std::sqrt(fraction) * static_cast<double>(S[0]);
  return std::max<int64_t>(0, static_cast<int64_t>(std::lround((side - 1) / 2)));
}

// The process's CPU time in ms (all threads): steadier than wall time on a shared machine.
double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return 1e3 * static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_nsec);
}

struct Timing {
  double wall_ms, cpu_ms;  // medians
};

Timing time_path(MultiHeadAttention& mha, AttentionPath path, const Tensor& x, const Positions& pos, int reps, int warmup) {
  mha.set_path(path);
  std::vector<double> ms, cpu;
  for (int r = 0; r < warmup + reps; ++r) {
    mha.zero_grad();
    Variable xv(x, true);
    synchronize(x.device());
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_ms();
    Variable out = mha.forward(xv, {}, &pos);
    sum(out).backward();
    synchronize(x.device());  // the GPU's queued work, before the clock is read
    const double c1 = cpu_ms();
    const auto t1 = std::chrono::steady_clock::now();
    if (r >= warmup) {
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      cpu.push_back(c1 - c0);
    }
  }
  return {median(ms), median(cpu)};
}

std::map<std::string, double> run_torch(const std::string& args, int threads) {
  const bench::TwinRun run = bench::run_torch_twin("attention_paths_torch.py", args, threads);
  std::map<std::string, double> result;
  std::istringstream lines(run.output);
  for (std::string text; std::getline(lines, text);) {
    std::istringstream line(text);
    std::string key;
    double value;
    if (line >> key >> value) result[key] = value;
  }
  if (!run.ok) fmt::print("PyTorch twin unavailable: {}\n{}\n", run.command, run.tail());
  return result;
}

}  // namespace

int main(int argc, char** argv) try {
  std::map<std::string, int64_t> a{{"batch", 1}, {"width", 128}, {"heads", 4}, {"reps", 3}, {"warmup", 1}};
  std::string cases_arg = "1d1024,1d4096,2d32,2d64";
  std::string fractions_arg = "1,1/2,1/8,1/32";
  bool no_torch = false, no_reference = false;
  std::string device_name = "cpu";
  bench::CommandLine cli("bench_attention_paths",
                         "Times the attention implementations (reference, fused) forward+backward against PyTorch",
                         bench::CommandLine::kLaterOptionsWin);
  bench::add_integer_options(cli.options(), a);
  cli.options()
      .text("--cases", cases_arg, "comma-separated 1d<N> (a sequence of N) or 2d<S> (an S x S grid)")
      .text("--fractions", fractions_arg, "comma-separated span fractions, each 1 or 1/<n> (the span gain needs 1)")
      .text("--device", device_name, "cpu, cuda or cuda:N")
      .flag("--no-torch", no_torch, "skip the PyTorch twin")
      .flag("--no-reference", no_reference, "skip the dense reference path");
  if (const auto exit_code = cli.parse(argc, argv)) return *exit_code;
  const bool torch = !no_torch;
  const Device device = apps::usable_device(device_name);  // a clear error without a GPU
  const bool gpu = !device.is_cpu();
  std::vector<Case> cases;
  std::stringstream list(cases_arg);
  for (std::string c; std::getline(list, c, ',');) {
    if (c.rfind("1d", 0) == 0) cases.push_back({c, {std::stoll(c.substr(2))}});
    else if (c.rfind("2d", 0) == 0) cases.push_back({c, {std::stoll(c.substr(2)), std::stoll(c.substr(2))}});
    else fail("unknown case '{}' (1d<N> or 2d<S>)", c);
  }
  int threads = 1;
#ifdef POSGRAD_OPENMP
  threads = omp_get_max_threads();
#endif
  const int64_t B = a["batch"], D = a["width"], H = a["heads"];
  const int reps = static_cast<int>(a["reps"]), warmup = static_cast<int>(a["warmup"]);
  fmt::print("attention forward+backward, B={} D={} H={} (Dh={}), {}, median of {} runs\n", B, D, H, D / H,
             gpu ? device.str() : fmt::format("{} threads", threads), reps);
  if (gpu) {
    fmt::print("{:>8} {:>9} {:>7} {:>12} {:>12} {:>9} {:>10} {:>12} {:>12} {:>12} {:>12}\n", "case", "fraction", "keys",
               "reference ms", "fused ms", "speedup", "span gain", "torch dense", "torch sdpa", "torch flex",
               "fused/best");
  }
  const bench::MachineFloor floor = gpu ? bench::MachineFloor{} : bench::measure_sgemm_floor(threads);
  if (!gpu) {
    bench::print_machine(floor);
    fmt::print("{:>8} {:>9} {:>7} {:>12} {:>12} {:>9} {:>10} {:>12} {:>10} {:>12} {:>10} {:>8} {:>11}\n", "case", "fraction",
               "keys", "reference ms", "fused ms", "speedup", "fused ms", "fused cpu ms", "span gain", "torch ms",
               "fused/torch", "GFLOP", "fused/floor");
  }
  std::vector<std::pair<std::string, double>> fractions;
  std::stringstream fraction_list(fractions_arg);
  for (std::string f; std::getline(fraction_list, f, ',');) {
    if (f == "1") fractions.push_back({f, 1.0});
    else if (f.rfind("1/", 0) == 0 && f.size() > 2 && std::stoll(f.substr(2)) >= 1) fractions.push_back({f, 1.0 / double(std::stoll(f.substr(2)))});
    else fail("unknown fraction '{}' (1 or 1/<n>)", f);
  }
  for (const Case& c : cases) {
    double fused_full = -1;
    const Positions pos = c.structure.size() == 1 ? Positions::sequence(c.structure[0]) : Positions::grid(c.structure);
    const int64_t N = pos.tokens();
    Generator gen(1);
    const Tensor x = normal({B, N, D}, 0, 1, gen).to(device);
    for (const auto& [label, f] : fractions) {
      const int64_t radius = radius_for(c.structure, f);
      std::vector<std::shared_ptr<AttentionHook>> hooks;
      HookContext ctx;
      ctx.width = D;
      ctx.heads = H;
      ctx.structure = c.structure;
      if (radius >= 0) hooks.push_back(make_hook(HookSpec{"local_window", HookOptions{{"radius", std::to_string(radius)}}}, ctx, gen));
      MultiHeadAttention mha(D, H, gen, hooks);
      mha.to(device);
      const std::optional<OffsetBox> box = mha.key_box(pos, false);
      const int64_t keys = box ? box->intersect(OffsetBox::full(pos)).volume() : N;
      const double ref = no_reference ? -1 : time_path(mha, AttentionPath::Reference, x, pos, reps, warmup).wall_ms;
      const Timing fused_timing = time_path(mha, AttentionPath::Fused, x, pos, reps, warmup);
      const double fused = fused_timing.wall_ms;
      // The span gain from CPU time on the CPU (steadier there), from wall time on a GPU.
      const double fused_measure = gpu ? fused_timing.wall_ms : fused_timing.cpu_ms;
      if (f >= 1.0) fused_full = fused_measure;
      double theirs = -1;
      std::map<std::string, double> t;
      if (torch) {
        t = run_torch(fmt::format("--batch {} --width {} --heads {} --reps {} --warmup {} --structure {} --radius {} --device {}",
                                  B, D, H, reps, warmup, fmt::join(c.structure, "x"), radius, gpu ? "cuda" : "cpu"),
                      threads);
        if (t.count("median_ms")) theirs = t["median_ms"];
      }
      const auto ms_or_na = [](double ms) { return ms > 0 ? fmt::format("{:.2f}", ms) : std::string("n/a"); };
      if (gpu) {  // the fused kernels against the fastest of PyTorch's three ways
        double best = -1;
        for (const char* key : {"median_ms", "sdpa_ms", "flex_ms"})
          if (t.count(key) && (best < 0 || t[key] < best)) best = t[key];
        fmt::print("{:>8} {:>9} {:>7} {:>12} {:>12.2f} {:>9} {:>9.2f}x {:>12} {:>12} {:>12} {:>12}\n", c.name, label, keys,
                   ref > 0 ? fmt::format("{:.2f}", ref) : "n/a", fused, ref > 0 ? fmt::format("{:.2f}x", ref / fused) : "n/a",
                   fused_full > 0 ? fused_full / fused_measure : 0.0, ms_or_na(theirs),
                   ms_or_na(t.count("sdpa_ms") ? t["sdpa_ms"] : -1), ms_or_na(t.count("flex_ms") ? t["flex_ms"] : -1),
                   best > 0 ? fmt::format("{:.2f}x", fused / best) : "n/a");
        std::fflush(stdout);
        continue;
      }
      // The step's FLOPs (bench_floor.h): the four projections and the attention over the box.
      const double flops = bench::kForwardAndBackward *
                           (4 * bench::linear_flops(B * N, D, D) + bench::attention_flops(B, H, N, double(keys), D / H));
      const double floor_ms = flops / (floor.sgemm_gflops * 1e9) * 1e3;
      fmt::print("{:>8} {:>9} {:>7} {:>12} {:>12.1f} {:>9} {:>10.1f} {:>12.1f} {:>9.2f}x {:>12} {:>10} {:>8.2f} {:>10.1f}x\n",
                 c.name, label, keys, ref > 0 ? fmt::format("{:.1f}", ref) : "n/a", fused,
                 ref > 0 ? fmt::format("{:.2f}x", ref / fused) : "n/a", fused, fused_timing.cpu_ms,
                 fused_full > 0 ? fused_full / fused_measure : 0.0,
                 theirs > 0 ? fmt::format("{:.1f}", theirs) : "n/a",
                 theirs > 0 ? fmt::format("{:.2f}x", fused / theirs) : "n/a", flops / 1e9, fused / floor_ms);
      std::fflush(stdout);
    }
  }
  if (torch)
    fmt::print("torch: {} (bench/attention_paths_torch.py)\n",
               gpu ? "dense masked scores, scaled_dot_product_attention with the mask, FlexAttention with a block mask"
                   : "dense masked attention in PyTorch eager");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_attention_paths: %s\n", e.what());
  return 1;
}
