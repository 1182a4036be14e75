#!/usr/bin/env bash
# The demo_build_size test: what scripts/demo.sh compiles is count24 and only what it links.
# It configures a demo build folder the way demo.sh does (Ninja, cmake/demo_build.cmake) in a
# temporary folder, reads the build graph of the count24 target (ninja -t commands; nothing is
# compiled) and fails on any compile of a source count24 does not need: a CUDA object, the NCCL
# or MPI engine, attention/, the image side (convolution, image data sets, augmentation), the
# sequence side (text corpora, transduction tasks) or the sweeps' kit. A unity batch counts as the
# sources it includes. It prints the number of sources compiled. It does not check the normal
# build (build/), which keeps all of them.
# Usage: check_demo_build.sh SOURCE_DIR
set -uo pipefail
src=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! cmake -S "$src" -B "$work/build-demo" -G Ninja -DCMAKE_BUILD_TYPE=Release -C "$src/cmake/demo_build.cmake" \
     > "$work/configure.log" 2>&1; then
  echo "FAIL the demo's configure (cmake -C cmake/demo_build.cmake) failed:"; tail -n 20 "$work/configure.log"; exit 1
fi
commands=$(ninja -C "$work/build-demo" -t commands count24) || { echo "FAIL cannot read the build graph of count24"; exit 1; }
compiled=$(grep -- ' -c ' <<< "$commands" | grep -o -- ' -c [^ ]*' | sed "s|^ -c ||")
# A unity batch (cmake/build_speed.cmake) is a generated file that #includes its sources: the
# sources it includes are what it compiles.
compiled=$(while read -r file; do
             if [[ $file == */unity_*_cxx.cxx ]]; then sed -n 's|^#include "\(.*\)"$|\1|p' "$file"; else echo "$file"; fi
           done <<< "$compiled" | sed "s|^$src/||")
echo "count24 in the demo's build: $(wc -l <<< "$compiled") sources compiled"
failures=0
refuse() {  # refuse WHAT REGEX: no compiled source may match REGEX
  local hits
  hits=$(grep -E -- "$2" <<< "$compiled")
  if [[ -n $hits ]]; then
    echo "FAIL the demo compiles $1:"; sed 's/^/    /' <<< "$hits" | head -n 5; failures=$((failures + 1))
  else
    echo "ok   no $1"
  fi
}
refuse "CUDA objects" '\.cu$|/tensor/cuda/'
if grep -q nvcc <<< "$commands"; then echo "FAIL the demo runs nvcc"; failures=$((failures + 1)); fi
refuse "NCCL or MPI engine" 'nccl|mpi_process_group'
refuse "attention/ sources" '^attention/'
refuse "image-side sources" 'conv|cifar10|mnist|idx\.cpp|byte_image|augment|image_sequence'
refuse "sequence-side sources" '^datasets/transduction/|char_corpus|char_vocab|text_streams'
refuse "sweep kit sources" '^apps/common/sweep'
exit $((failures > 0))
