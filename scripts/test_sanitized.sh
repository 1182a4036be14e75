#!/usr/bin/env bash
# The sanitizer stage of CI (.ci/run runs it after scripts/test.sh): builds every target with
# AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer into ./build-asan, then
# runs the C++ tests through CTest there. Any sanitizer report fails the test that produced it.
#   - build type Debug with -O1 -g1: -O0 makes the training tests several times slower, -O2
#     compiles slower; -O1 keeps the whole CI run within its time budget. -g1 (line tables, no
#     variable or type information) is all a sanitizer report needs for its file:line stacks, and
#     compiles about a sixth faster than -g (docs/reliability/sanitizers.md).
#   - POSGRAD_CUDA=OFF: nvcc's code is not instrumented, the CUDA runtime clashes with ASan's
#     shadow memory, and no GPU runs in CI anyway.
#   - left out: the tests that only run shell scripts on the source tree and configure scratch
#     folders (scripts_order, plain_configure, plain_configure_cpu_only); nothing of theirs is
#     instrumented and scripts/test.sh ran them already. And docs_without_data: it runs a subset
#     of the docs test's commands (those that need no data set; the others it skips), so under
#     the sanitizers it adds no code that the docs test does not run (349 s of the stage here).
# The sanitizers' run-time options are set below (later settings of the same name win, so
# ASAN_OPTIONS etc. from the environment are appended and override them); leak suppressions, for
# system libraries only, are in tests/sanitizer_suppressions_lsan.txt (docs/reliability/sanitizers.md).
# Extra arguments go to CMake's configure step (e.g. -DPOSGRAD_SANITIZE=undefined).
# Compiler launchers come from the environment, as in scripts/build.sh.
# Usage: scripts/test_sanitized.sh [CMake arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build="build-asan"
scripts/install_deps.sh

generator=()
if [[ ! -f $build/CMakeCache.txt && -z ${CMAKE_GENERATOR:-} ]]; then generator=(-G Ninja); fi
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
      -DPOSGRAD_CUDA=OFF -DPOSGRAD_SANITIZE=address,undefined "$@" -DPOSGRAD_TESTS=ON -DPOSGRAD_BENCH=ON
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)"

# halt_on_error: the first report ends the program (a non-zero exit fails the test);
# detect_leaks: LeakSanitizer at exit (ASan prints stacks always; UBSan with print_stacktrace);
# check_initialization_order/strict_init_order: static initialisation order bugs;
# detect_stack_use_after_return: a pointer to a returned function's local is caught.
asan="halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1"
asan+=":detect_stack_use_after_return=1"
# allocator_may_return_null: an allocation too large to serve returns null, as malloc does, instead
# of ending the program; the caching allocator's test asks for 2^50 bytes on purpose and checks
# that a clear posgrad::Error comes back.
asan+=":allocator_may_return_null=1"
ubsan="halt_on_error=1:print_stacktrace=1"
# suppressions: system-library leaks only, each with its reason (print_suppressions=0: a program's
# output is the same as in an ordinary build).
lsan="suppressions=$root/tests/sanitizer_suppressions_lsan.txt:print_suppressions=0"
export ASAN_OPTIONS="$asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="$ubsan${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="$lsan${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
echo "ASAN_OPTIONS=$ASAN_OPTIONS"
echo "UBSAN_OPTIONS=$UBSAN_OPTIONS"
echo "LSAN_OPTIONS=$LSAN_OPTIONS"

# One slot per core, as in scripts/test.sh (each test's PROCESSORS: tests/CMakeLists.txt).
ctest --test-dir "$build" --output-on-failure --no-tests=error --timeout 1800 --parallel "$(nproc 2>/dev/null || echo 2)" \
      -E '^(scripts_order|plain_configure|plain_configure_cpu_only|docs_without_data)$'
