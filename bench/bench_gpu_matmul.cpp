// bench_gpu_matmul: square float32 matmul C = A @ B on the GPU through posgrad's Tensor API (the
// CUDA backend's cuBLAS call), against torch.matmul on the same GPU (twin: bench/gpu_matmul_torch.py),
// with TF32 off on both and then on on both. Prints medians (ms, TFLOP/s) and the ratio.
//
// Usage: bench_gpu_matmul [--sizes 1024,2048,4096,8192] [--reps 20] [--no-torch]
// Both sides time each matmul with CUDA events (posgrad: DeviceTimer) and report the median over
// reps. Without a usable GPU it stops with the reason.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "apps/common/device_setting.h"
#include "bench/bench_cli.h"
#include "bench/torch_twin.h"
#include "posgrad.h"
#include "tensor/device.h"

using namespace posgrad;

namespace {

std::map<std::string, double> run_torch(const std::string& sizes, int64_t reps, bool tf32) {
  const bench::TwinRun run = bench::run_torch_twin(
      "gpu_matmul_torch.py", fmt::format("--sizes {} --reps {} --tf32 {}", sizes, reps, tf32 ? 1 : 0), 0);
  std::map<std::string, double> result;  // "n" -> median ms
  std::istringstream lines(run.output);
  for (std::string text; std::getline(lines, text);) {
    std::istringstream line(text);
    std::string tag, n;
    double ms;
    if (line >> tag >> n >> ms && tag == "RESULT") result[n] = ms;
  }
  if (result.empty()) fmt::print("PyTorch twin unavailable: {}\n{}\n", run.command, run.tail());
  return result;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string sizes = "1024,2048,4096,8192";
  int64_t reps = 20;
  bool no_torch = false;
  bench::CommandLine cli("bench_gpu_matmul", "Times float32 matmul on the GPU against torch.matmul, TF32 off and on",
                         bench::CommandLine::kLaterOptionsWin);
  cli.options()
      .size_list("--sizes", sizes, "matrix sizes n, comma-separated")
      .integer("--reps", reps, "timed repetitions per size (the median is reported)", bench::NumberRange::at_least(1))
      .flag("--no-torch", no_torch, "skip the PyTorch twin");
  if (const auto exit_code = cli.parse(argc, argv)) return *exit_code;
  const bool torch = !no_torch;
  const std::vector<int64_t> ns = bench::sizes_of(sizes);
  const Device gpu = apps::usable_device("cuda");  // the reason, when there is no usable GPU

  fmt::print("GPU float32 matmul C = A @ B (n x n), median of {} runs\n", reps);
  fmt::print("{:>6} {:>6} {:>12} {:>10} {:>12} {:>10} {:>8}\n", "tf32", "n", "posgrad ms", "TFLOP/s", "torch ms", "TFLOP/s",
             "ratio");
  for (bool tf32 : {false, true}) {
    set_cuda_allow_tf32(tf32);
    const auto theirs = torch ? run_torch(sizes, reps, tf32) : std::map<std::string, double>{};
    for (int64_t n : ns) {
      Generator gen(static_cast<uint64_t>(n));
      const Tensor a = normal({n, n}, 0, 1, gen).to(gpu), b = normal({n, n}, 0, 1, gen).to(gpu);
      for (int w = 0; w < 3; ++w) matmul(a, b);
      std::vector<double> ms;
      DeviceTimer timer(gpu);
      for (int64_t r = 0; r < reps; ++r) {
        timer.start();
        const Tensor c = matmul(a, b);
        timer.stop();
        ms.push_back(timer.elapsed_ms());
      }
      std::sort(ms.begin(), ms.end());
      const double ours = ms[ms.size() / 2], flops = 2.0 * double(n) * double(n) * double(n);
      const auto it = theirs.find(std::to_string(n));
      const double t = it == theirs.end() ? -1 : it->second;
      fmt::print("{:>6} {:>6} {:>12.3f} {:>10.1f} {:>12} {:>10} {:>8}\n", tf32 ? "on" : "off", n, ours, flops / ours / 1e9,
                 t > 0 ? fmt::format("{:.3f}", t) : "n/a", t > 0 ? fmt::format("{:.1f}", flops / t / 1e9) : "n/a",
                 t > 0 ? fmt::format("{:.2f}x", ours / t) : "n/a");
    }
  }
  set_cuda_allow_tf32(false);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_gpu_matmul: %s\n", e.what());
  return 1;
}
