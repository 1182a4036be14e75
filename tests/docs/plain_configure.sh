#!/usr/bin/env bash
# The plain_configure tests: `cmake -S . -B build` as a user types it, with CMake's default
# generator (CMAKE_GENERATOR unset: Unix Makefiles on Linux), into a scratch folder. Configure
# and generate only, with tests and benchmarks off to stay quick; fails when CMake fails.
# It does not build (scripts/test.sh builds everything with Ninja).
# Usage: plain_configure.sh SOURCE_DIR [more CMake arguments, e.g. -DPOSGRAD_CUDA=OFF]
set -euo pipefail
source_dir=$1
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if env -u CMAKE_GENERATOR cmake -S "$source_dir" -B "$work/build" -DPOSGRAD_TESTS=OFF -DPOSGRAD_BENCH=OFF "$@" \
     > "$work/log" 2>&1; then
  grep -E "^(CMAKE_GENERATOR:INTERNAL|POSGRAD_CUDA:STRING)=" "$work/build/CMakeCache.txt" || true
  grep -E "CUDA (backend|  )" "$work/log" || true
  echo "plain_configure: configured and generated"
else
  cat "$work/log"
  echo "plain_configure: cmake -S . -B build failed"
  exit 1
fi
