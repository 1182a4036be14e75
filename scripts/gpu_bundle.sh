#!/usr/bin/env bash
# Builds posgrad with the CUDA backend for a lent GPU machine and packs it into .gpu/ (ignored by
# git): that machine has the CUDA toolkit, PyTorch and a driver, but no package registries, so it
# cannot install fmt, Boost.Test or yaml-cpp to build posgrad itself. The bundle holds
#   .gpu/bin/   the test suites that matter on a GPU, count24 and the GPU benchmarks (stripped,
#               built for x86-64-v3, not -march=native: the GPU machine's CPU is another one)
#   .gpu/lib/   the shared libraries they need from this machine (fmt, Boost.Test, yaml-cpp,
#               OpenMP), found through the executables' RUNPATH $ORIGIN/../lib; CUDA's own
#               libraries (cudart, cuBLAS) come from the GPU machine
#   .gpu/fallback/  this machine's C++ runtime (libstdc++, libgcc_s), used by gpu_check.sh only
#               when the GPU machine's own is too old (this one needs glibc 2.36)
#   .gpu/source_dir   the source path compiled into the tests (golden files, the count24 binary)
# Usage: scripts/gpu_bundle.sh            (POSGRAD_GPU_ARCH=90 by default: H100/H200)
# Then run scripts/gpu_check.sh on the GPU machine with .gpu carried along (docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${POSGRAD_GPU_ARCH:-90}
scripts/install_deps.sh
command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] ||
  { echo "gpu_bundle: the CUDA toolkit (nvcc) is needed to build the CUDA backend" >&2; exit 1; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOSGRAD_CUDA=ON -DPOSGRAD_NATIVE=OFF \
  -DCMAKE_CXX_FLAGS="-march=x86-64-v3" -DCMAKE_CUDA_ARCHITECTURES="$arch" \
  -DCMAKE_BUILD_RPATH='$ORIGIN/../lib' >/dev/null
programs=(test_tensor test_autograd test_nn test_attention test_apps count24 bench_gpu_matmul bench_transformer)
cmake --build build-gpu -j "$(nproc 2>/dev/null || echo 2)" --target "${programs[@]}"

rm -rf .gpu
mkdir -p .gpu/bin .gpu/lib .gpu/fallback
for p in "${programs[@]}"; do strip -o ".gpu/bin/$p" "build-gpu/bin/$p"; done
# Every shared library the programs load, except the C library and CUDA's, which the GPU machine has.
ldd .gpu/bin/* | awk '/=> \//{print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcuda|libcudart|libcublas|libcublasLt)\.so' |
  while read -r lib; do
    case "$(basename "$lib")" in
      libstdc++.so*|libgcc_s.so*) cp -L "$lib" .gpu/fallback/ ;;
      *) cp -L "$lib" .gpu/lib/ ;;
    esac
  done
echo "$PWD" > .gpu/source_dir
echo "CUDA architectures: $arch" > .gpu/build_info
nvcc --version 2>/dev/null | tail -1 >> .gpu/build_info || true
du -sh .gpu
echo "gpu_bundle: .gpu is ready; carry it to the GPU machine and run scripts/gpu_check.sh there"
