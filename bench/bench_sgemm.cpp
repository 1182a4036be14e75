// bench_sgemm: times posgrad::cpu::sgemm on square float32 matrices (C = A @ B) and compares it
// with PyTorch on the same number of threads, by running the twin script bench/sgemm_torch.py.
//
// Usage: bench_sgemm [--sizes 256,512,1024,2048] [--reps N] [--no-torch] [--isa native|avx2]
// Threads: OMP_NUM_THREADS (the torch script gets the same count; default 2 there when unset).
// It first prints the CPU's vector extensions and the micro-kernel and blocking compiled into
// posgrad's sgemm (chosen by -march at build time). --isa avx2 compares an AVX2 build of posgrad
// (-march=x86-64-v3, docs/benchmarks.md) with PyTorch restricted to AVX2 (OpenBLAS's Haswell
// kernels, oneDNN's AVX2 code), as on a CPU without AVX-512; it refuses a build whose sgemm uses
// AVX-512. --isa native (the default) leaves PyTorch free to use everything the CPU has.
// The twin runs under /usr/bin/python3, or the interpreter named by POSGRAD_PYTHON.
// Per size: warm-up, then N timed repetitions; the median is reported, in ms and GFLOP/s
// (2 n^3 flops). Each result is spot-checked against a double-precision dot product.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/cpu/gemm.h"

#ifdef POSGRAD_OPENMP
#include <omp.h>
#endif

#ifndef POSGRAD_SOURCE_DIR
#define POSGRAD_SOURCE_DIR "."
#endif

#include "bench/bench_cli.h"
#include "bench/bench_floor.h"
#include "bench/torch_twin.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double gflops(int64_t n, double ms) { return 2.0 * double(n) * double(n) * double(n) / (ms * 1e6); }

struct TorchResults {
  std::string info;                   // the script's INFO line, or why there are no results
  std::map<int64_t, double> matmul;   // n -> median ms
  std::map<int64_t, double> onednn;   // n -> median ms
  bool ok = false;
};

TorchResults run_torch(const std::string& sizes, int reps, int threads, const std::string& isa) {
  TorchResults r;
  const posgrad::bench::TwinRun run = posgrad::bench::run_torch_twin(
      "sgemm_torch.py",
      fmt::format("--sizes {} --reps {} --threads {} --isa {}", sizes, reps, threads, isa), 0);
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    std::string tag;
    in >> tag;
    if (tag == "INFO") {
      r.info = line.size() > 5 ? line.substr(5) : "";
    } else if (tag == "RESULT") {
      std::string path;
      int64_t n = 0;
      double ms = 0;
      if (in >> path >> n >> ms) (path == "onednn" ? r.onednn : r.matmul)[n] = ms;
    }
  }
  r.ok = run.ok && !r.matmul.empty();
  // Most likely python3 or torch is missing; show the tail of what it said.
  if (!r.ok) r.info = "PyTorch unavailable (" + run.command + " failed):\n" + run.tail();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string size_list = "256,512,1024,2048";
  int64_t reps = 10;
  posgrad::bench::CommandLine cli("bench_sgemm", "Times posgrad's sgemm on square float32 matrices against PyTorch's twin",
                                  posgrad::bench::CommandLine::kLaterOptionsWin);
  bool no_torch = false;
  std::string isa = "native";
  cli.options()
      .size_list("--sizes", size_list, "matrix sizes n, comma-separated")
      .integer("--reps", reps, "timed repetitions per size (the median is reported)",
               posgrad::bench::NumberRange::at_least(1))
      .flag("--no-torch", no_torch, "skip the PyTorch twin")
      .choice("--isa", isa, {"native", "avx2"},
              "native: PyTorch uses every vector extension of the CPU; avx2: an AVX2 build of posgrad against "
              "PyTorch restricted to AVX2");
  if (const auto exit_code = cli.parse(argc, argv)) return *exit_code;
  const posgrad::cpu::SgemmKernelInfo info = posgrad::cpu::sgemm_kernel_info();
  const std::string kernel = fmt::format("{} (KC {}, MC {}, NC {})", info.name, info.kc, info.mc, info.nc);
  if (isa == "avx2" && !std::string_view(info.name).starts_with("avx+fma")) {
    std::fprintf(stderr,
                 "bench_sgemm: error: --isa avx2 needs posgrad's AVX2 kernel, this build's sgemm has %s "
                 "(configure a build folder with -DPOSGRAD_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3)\n",
                 kernel.c_str());
    return 2;
  }
  const bool torch = !no_torch;
  const std::vector<int64_t> sizes = posgrad::bench::sizes_of(size_list);
  int threads = 1;
#ifdef POSGRAD_OPENMP
  threads = omp_get_max_threads();
#endif
  std::printf("posgrad sgemm, square C = A @ B, %d thread(s) (OMP_NUM_THREADS), %d reps, median\n",
              threads, reps);
  std::printf("CPU: %s; posgrad sgemm micro-kernel: %s; PyTorch ISA: %s\n",
              posgrad::bench::cpu_vector_extensions().c_str(), kernel.c_str(), isa.c_str());

  std::map<int64_t, double> ours;
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  bool all_correct = true;
  for (int64_t n : sizes) {
    std::vector<float> A(n * n), B(n * n), C(n * n);
    for (auto& x : A) x = dist(rng);
    for (auto& x : B) x = dist(rng);
    auto once = [&] {
      posgrad::cpu::sgemm(false, false, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n);
    };
    for (int w = 0; w < 2; ++w) once();
    std::vector<double> times;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      once();
      const auto t1 = std::chrono::steady_clock::now();
      times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    ours[n] = median(times);
    // Spot check a few entries against a double-precision dot product.
    for (int s = 0; s < 8; ++s) {
      const int64_t i = (s * 7919) % n, j = (s * 104729 + 13) % n;
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < n; ++k) {
        ref += double(A[i * n + k]) * B[k * n + j];
        mag += std::abs(double(A[i * n + k]) * B[k * n + j]);
      }
      if (std::abs(C[i * n + j] - ref) > 1e-5 * mag + 1e-6) all_correct = false;
    }
    std::printf("  n=%5lld  %10.3f ms  %8.2f GFLOP/s\n", static_cast<long long>(n), ours[n],
                gflops(n, ours[n]));
    std::fflush(stdout);
  }
  if (!all_correct) std::printf("WARNING: spot check against a double dot product FAILED\n");

  if (!torch) return all_correct ? 0 : 1;
  const TorchResults tr = run_torch(size_list, reps, threads, isa);
  if (!tr.ok) {
    std::printf("\n%s\nOnly posgrad's numbers are shown above.\n", tr.info.c_str());
    return all_correct ? 0 : 1;
  }
  std::printf("\n%s\n", tr.info.c_str());
  std::printf("ratio = posgrad GFLOP/s / torch GFLOP/s. torch.mm: torch.matmul through the BLAS named\n"
              "above; oneDNN: PyTorch's bundled oneDNN sgemm (mkldnn_linear).\n\n");
  std::printf("%6s | %10s %8s | %12s %8s %8s | %12s %8s %8s\n", "n", "posgrad ms", "GFLOP/s",
              "torch.mm ms", "GFLOP/s", "ratio", "oneDNN ms", "GFLOP/s", "ratio");
  for (int64_t n : sizes) {
    const double ms = ours[n];
    std::printf("%6lld | %10.3f %8.2f |", static_cast<long long>(n), ms, gflops(n, ms));
    for (const auto* m : {&tr.matmul, &tr.onednn}) {
      auto it = m->find(n);
      if (it == m->end()) {
        std::printf(" %12s %8s %8s |", "-", "-", "-");
      } else {
        std::printf(" %12.3f %8.2f %7.0f%% |", it->second, gflops(n, it->second),
                    100.0 * it->second / ms);
      }
    }
    std::printf("\n");
  }
  return all_correct ? 0 : 1;
}
