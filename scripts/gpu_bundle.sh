#!/usr/bin/env bash
# Builds posgrad with the CUDA backend for a lent GPU machine and packs it into .gpu/ (ignored by
# git): that machine has the CUDA toolkit, PyTorch and a driver, but no package registries, so it
# cannot install fmt, Boost.Test or yaml-cpp to build posgrad itself. The device tool carries at
# most 64 MiB (the checkout's tracked files included), so everything but two small text files is
# packed into .gpu/payload.tar.xz (about 32 MiB), which gpu_check.sh unpacks there:
#   bin/        the test suites that matter on a GPU, count24, the apps (posattn, charlm,
#               posgrad-sweep) and the GPU benchmarks with their PyTorch twins' drivers (stripped,
#               built for x86-64-v3, not -march=native: the GPU machine's CPU is another one)
#   lib/        the shared libraries they need from this machine (fmt, Boost.Test, yaml-cpp,
#               OpenMP, cairo...), found through the executables' RUNPATH $ORIGIN/../lib; CUDA's
#               own libraries (cudart, cuBLAS) come from the GPU machine
#   fallback/   this machine's C++ runtime (libstdc++, libgcc_s), used by gpu_check.sh only when
#               the GPU machine's own is too old (this one needs glibc 2.36)
#   fonts/      DejaVu Sans, regular and bold, with a fonts.conf naming only this folder: the GPU
#               machine has no fonts, so figures drawn there had no text (and canvas tests failed)
#   data/       what the apps read there: CIFAR-10's data_batch_1.bin (10,000 of the 50,000
#               training images: all five do not fit; the posattn runs there use
#               data.train_batches=1) and batches.meta.txt, and Tiny Shakespeare
# and beside it
#   .gpu/source_dir   the source path compiled into the tests (golden files, the count24 binary)
#   .gpu/build_info   the CUDA architectures and nvcc version
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
  -DCMAKE_BUILD_RPATH='$ORIGIN/../lib' -DPOSGRAD_NCCL=ON >/dev/null  # NCCL: loaded at run time, not carried
source scripts/gpu_programs.sh
programs=("${gpu_programs[@]}")
data=${POSGRAD_DATA_DIR:-../shared/data}
cmake --build build-gpu -j "$(nproc 2>/dev/null || echo 2)" --target "${programs[@]}"

rm -rf .gpu
stage=build-gpu/bundle
rm -rf "$stage"
mkdir -p .gpu "$stage"/{bin,lib,fallback,fonts,data/cifar10,data/tinyshakespeare}
for p in "${programs[@]}"; do strip -o "$stage/bin/$p" "build-gpu/bin/$p"; done
# Every shared library the programs load, except the C library and CUDA's, which the GPU machine has.
ldd "$stage"/bin/* | awk '/=> \//{print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcuda|libcudart|libcublas|libcublasLt)\.so' |
  while read -r lib; do
    case "$(basename "$lib")" in
      libstdc++.so*|libgcc_s.so*) cp -L "$lib" "$stage/fallback/" ;;
      *) cp -L "$lib" "$stage/lib/" ;;
    esac
  done
for f in cifar10/data_batch_1.bin cifar10/batches.meta.txt tinyshakespeare/input.txt; do
  [[ -f "$data/$f" ]] || { echo "gpu_bundle: $data/$f not found (the data folder: POSGRAD_DATA_DIR or ../shared/data)" >&2; exit 1; }
  cp "$data/$f" "$stage/data/$f"
done
for style in "" ":bold"; do
  font=$(fc-match -f '%{file}' "DejaVu Sans$style")
  [[ -f $font ]] || { echo "gpu_bundle: DejaVu Sans$style not found (Debian: fonts-dejavu-core)" >&2; exit 1; }
  cp "$font" "$stage/fonts/"
done
printf '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig><dir prefix="relative">.</dir><cachedir>/tmp/posgrad-fontconfig</cachedir></fontconfig>\n' \
  > "$stage/fonts/fonts.conf"
tar -C "$stage" -cf - bin lib fallback fonts data | xz -T2 -6 > .gpu/payload.tar.xz
echo "$PWD" > .gpu/source_dir
echo "CUDA architectures: $arch" > .gpu/build_info
nvcc --version 2>/dev/null | tail -1 >> .gpu/build_info || true
tracked=$(git ls-files -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
bundle=$(du -cb .gpu | tail -1 | cut -f1)
echo "gpu_bundle: .gpu holds $((bundle / 1048576)) MiB; with the checkout's tracked files $(((bundle + tracked) / 1048576)) MiB of the 64 MiB the device tool carries"
(( bundle + tracked < 64 * 1048576 )) || { echo "gpu_bundle: too large for the device tool" >&2; exit 1; }
echo "gpu_bundle: .gpu is ready; carry it to the GPU machine and run scripts/gpu_check.sh there"
