// bench_conv2d: times posgrad's conv2d at the CCT tokenizer's shapes (spec ape.md section 7.4:
// x [B, 3, 32, 32], weight [256, 3, 3, 3], stride 1, no padding, no bias -> [B, 256, 30, 30])
// forward, and backward (the weight's and the input's gradient of sum(y * R)), against PyTorch's
// twin bench/conv2d_torch.py (torch.nn.functional.conv2d, oneDNN on the CPU) on the same threads.
//
// Usage: bench_conv2d [--batch 128] [--channels 256] [--side 32] [--kernel 3] [--reps 5]
//                     [--warmup 1] [--rounds 3] [--no-torch]
// Threads: OMP_NUM_THREADS (the twin gets the same count). The two are interleaved: each round
// times ours (median of --reps), then runs the twin (median of --reps); the report gives the
// median over the rounds of each and the ratio ours / PyTorch.
// Shapes: tensor/conv.h's letters.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_cli.h"
#include "bench/torch_twin.h"
#include "posgrad.h"

#ifdef POSGRAD_OPENMP
#include <omp.h>
#endif

using namespace posgrad;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <typename F>
double median_ms(F&& f, int64_t reps, int64_t warmup) {
  for (int64_t i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int64_t i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, int64_t> sizes{{"batch", 128}, {"channels", 256}, {"side", 32}, {"kernel", 3},
                                       {"reps", 5},    {"warmup", 1},     {"rounds", 3}};
  bench::CommandLine cli("bench_conv2d", "Times conv2d forward and backward at CCT's tokenizer shapes against PyTorch's twin",
                         bench::CommandLine::kLaterOptionsWin);
  bench::add_integer_options(cli.options(), sizes, {"batch", "channels", "side", "kernel", "reps", "rounds"});
  bool no_torch = false;
  cli.options().flag("--no-torch", no_torch, "skip the PyTorch twin");
  if (const auto exit_code = cli.parse(argc, argv)) return *exit_code;
  int threads = 1;
#ifdef POSGRAD_OPENMP
  threads = omp_get_max_threads();
#endif
  const int64_t B = sizes["batch"], Co = sizes["channels"], S = sizes["side"], k = sizes["kernel"];
  std::printf("conv2d x [%lld, 3, %lld, %lld], weight [%lld, 3, %lld, %lld], stride 1, no padding, float32, "
              "%d thread(s); medians of %lld reps, then the median over %lld rounds\n",
              (long long)B, (long long)S, (long long)S, (long long)Co, (long long)k, (long long)k, threads,
              (long long)sizes["reps"], (long long)sizes["rounds"]);
  Generator gen(1);
  Tensor x = normal({B, 3, S, S}, 0, 1, gen), w = normal({Co, 3, k, k}, 0, 0.2, gen);
  Tensor r = uniform({B, Co, S - k + 1, S - k + 1}, 0.5, 1.5, gen);
  std::vector<double> ours_fwd, ours_bwd, torch_fwd, torch_bwd;
  std::string twin_info;
  for (int64_t round = 0; round < sizes["rounds"]; ++round) {
    ours_fwd.push_back(median_ms([&] { conv2d(x, w, Tensor()); }, sizes["reps"], sizes["warmup"]));
    ours_bwd.push_back(median_ms(
        [&] {
          // The backward alone: the output gradient R gives d input and d weight.
          conv2d_input_grad(r, w, x.shape(), {});
          conv2d_weight_grad(r, x, w.shape(), {});
        },
        sizes["reps"], sizes["warmup"]));
    if (no_torch) continue;
    const bench::TwinRun run = bench::run_torch_twin(
        "conv2d_torch.py",
        fmt::format("--batch {} --channels {} --side {} --kernel {} --reps {} --warmup {}", B, Co, S, k, sizes["reps"],
                    sizes["warmup"]),
        threads);
    std::istringstream lines(run.output);
    bool got = false;
    for (std::string line; std::getline(lines, line);) {
      std::istringstream in(line);
      std::string tag, what;
      double ms = 0;
      in >> tag;
      if (tag == "INFO") twin_info = line.substr(5);
      if (tag == "RESULT" && (in >> what >> ms)) {
        (what == "forward" ? torch_fwd : torch_bwd).push_back(ms);
        got = true;
      }
    }
    if (!run.ok || !got) {
      std::printf("PyTorch twin unavailable (%s):\n%s\n", run.command.c_str(), run.tail().c_str());
      no_torch = true;
    }
  }
  auto row = [&](const char* what, const std::vector<double>& ours, const std::vector<double>& theirs) {
    if (theirs.empty()) {
      std::printf("%-10s posgrad %9.2f ms\n", what, median(ours));
      return;
    }
    std::printf("%-10s posgrad %9.2f ms   pytorch %9.2f ms   ratio %.2f\n", what, median(ours), median(theirs),
                median(ours) / median(theirs));
  };
  if (!twin_info.empty()) std::printf("twin: %s\n", twin_info.c_str());
  row("forward", ours_fwd, torch_fwd);
  row("backward", ours_bwd, torch_bwd);
  return 0;
}
