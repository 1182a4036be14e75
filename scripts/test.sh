#!/usr/bin/env bash
# Builds posgrad with every test suite and benchmark, then runs all tests through CTest. This is
# the README's test command and what CI runs. Tests and benchmarks are switched on whatever an
# earlier configure of ./build said, and CTest fails when it finds no test, so this command
# cannot pass without running the suites. Tests run side by side, one CTest slot per core.
# Extra arguments go to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh "$@" -DPOSGRAD_TESTS=ON -DPOSGRAD_BENCH=ON
# One CTest slot per core: a test takes as many slots as the threads it runs (its PROCESSORS,
# tests/CMakeLists.txt), so tests run side by side without oversubscribing the cores.
ctest --test-dir build --output-on-failure --no-tests=error --timeout 1800 --parallel "$(nproc 2>/dev/null || echo 2)"
