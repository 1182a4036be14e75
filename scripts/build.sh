#!/usr/bin/env bash
# Configures posgrad (Release) in ./build, or in the folder named with --dir, and builds every
# target, or only the ones named with --target. Other arguments go to CMake's configure step. It
# installs the Debian packages first (scripts/install_deps.sh): all of them, or with --deps demo
# only those the build needs (no test-only Python packages; scripts/demo.sh uses it). A new build
# folder uses Ninja (or $CMAKE_GENERATOR when set); an existing one keeps the generator it was
# made with, whichever script or command made it.
# Compiler launchers come from the environment, as CMake reads them, e.g.
#   CMAKE_CXX_COMPILER_LAUNCHER=ccache scripts/build.sh
# Usage: scripts/build.sh [--deps demo|test] [--dir FOLDER] [--target NAME]... [CMake arguments, e.g. -DPOSGRAD_CUDA=OFF]
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
cmake_args=()
deps_args=()
dir=build
while [[ $# -gt 0 ]]; do
  case "$1" in
    --target) [[ $# -ge 2 ]] || { echo "build.sh: --target needs a name" >&2; exit 2; }
              targets+=(--target "$2"); shift 2 ;;
    --dir) [[ $# -ge 2 && -n $2 ]] || { echo "build.sh: --dir needs a folder" >&2; exit 2; }
           dir=$2; shift 2 ;;
    --deps) case "${2:-}" in
              demo) deps_args=(--demo) ;;
              test) deps_args=() ;;
              *) echo "build.sh: --deps takes demo or test, not '${2:-}'" >&2; exit 2 ;;
            esac
            shift 2 ;;
    *) cmake_args+=("$1"); shift ;;
  esac
done
scripts/install_deps.sh "${deps_args[@]}"
generator=()
if [[ ! -f $dir/CMakeCache.txt && -z ${CMAKE_GENERATOR:-} ]]; then generator=(-G Ninja); fi
cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}"
cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)" "${targets[@]}"
