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
  bool torch = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--no-torch") torch = false;
    else if (arg == "--sizes" && i + 1 < argc) sizes = argv[++i];
    else if (arg == "--reps" && i + 1 < argc) reps = std::stoll(argv[++i]);
    else fail("bench_gpu_matmul: unknown or incomplete argument '{}'", arg);
  }
  const Device gpu = Device::parse("cuda");
  require_device(gpu);  // the reason, when there is no usable GPU
  std::vector<int64_t> ns;
  std::stringstream list(sizes);
  for (std::string s; std::getline(list, s, ',');) ns.push_back(std::stoll(s));

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
