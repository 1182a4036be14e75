#!/usr/bin/env bash
# Builds posgrad with every test suite and benchmark, then runs all tests through CTest. This is
# the README's test command and what CI runs. Tests and benchmarks are switched on whatever an
# earlier configure of ./build said, and CTest fails when it finds no test, so this command
# cannot pass without running the suites. Extra arguments go to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh "$@" -DPOSGRAD_TESTS=ON -DPOSGRAD_BENCH=ON
ctest --test-dir build --output-on-failure --no-tests=error --timeout 1800
