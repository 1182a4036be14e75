#!/usr/bin/env bash
# Configures and builds posgrad (Release) into ./build. Extra arguments go to CMake's configure
# step, e.g. scripts/build.sh -DPOSGRAD_CUDA=OFF
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j "$jobs"
