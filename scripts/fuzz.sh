#!/usr/bin/env bash
# Fuzzes posgrad's parsers of outside bytes with libFuzzer (docs/reliability/fuzzing.md).
#
#   scripts/fuzz.sh [SECONDS] [-FLAG=VALUE ...] [HARNESS ...]   build, then fuzz each harness in turn
#   scripts/fuzz.sh replay [HARNESS ...]                         build, then run every committed input once
#
# SECONDS (default 60) is each harness's time (-max_total_time); -FLAG=VALUE arguments go to
# libFuzzer as they are, e.g. -runs=10000000 -max_total_time=900 (whichever comes first).
# HARNESS names come from tests/fuzz/harnesses.cmake (default: all of them).
#
# Builds with clang++ -fsanitize=fuzzer,address,undefined into build-fuzz/ (the CMake project
# tests/fuzz/CMakeLists.txt, which builds the library from this checkout with the same flags and
# without OpenMP). Each harness starts from tests/fuzz/corpus/<harness>/ (and its crash inputs);
# new inputs go to build-fuzz/corpus/<harness>/ while it runs and afterwards the ones that add
# coverage are merged into tests/fuzz/corpus/<harness>/ (libFuzzer -merge=1). A crash, leak,
# sanitizer report, timeout or uncaught exception is written to tests/fuzz/crashes/<harness>/
# (crash-*, leak-*, timeout-*, oom-*); replay one with build-fuzz/bin/fuzz_<harness> FILE.
# Logs: build-fuzz/logs/<harness>.log. Exits non-zero when any harness reported a finding.
#
# Deliberately does not: run harnesses in parallel (the machine is shared: one at a time, use
# `nice`), minimise crash inputs (libFuzzer -minimize_crash=1 by hand), or touch the g++ build
# (its CTest cases fuzz_replay_<harness> replay the same folders without clang).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

mode=fuzz
budget=()
if [[ $# -gt 0 && $1 == replay ]]; then mode=replay; shift; fi
while [[ $# -gt 0 ]]; do
  case "$1" in
    -*=*) budget+=("$1"); shift ;;                      # a libFuzzer flag: -runs=N, -max_total_time=S
    ''|*[!0-9]*) break ;;                               # a harness name
    *) budget+=(-max_total_time="$1"); shift ;;         # SECONDS
  esac
done
[[ ${#budget[@]} -eq 0 ]] && budget=(-max_total_time=60)

# The names between "set(POSGRAD_FUZZ_HARNESSES" and ")" in harnesses.cmake, one per line.
all=$(awk '/set\(POSGRAD_FUZZ_HARNESSES/ {on = 1; next}
           on {last = /\)/; gsub(/[()]/, ""); for (i = 1; i <= NF; i++) print $i; if (last) on = 0}' \
      tests/fuzz/harnesses.cmake)
harnesses=("$@")
[[ ${#harnesses[@]} -eq 0 ]] && mapfile -t harnesses <<<"$all"
for h in "${harnesses[@]}"; do
  grep -qx "$h" <<<"$all" || { echo "fuzz.sh: unknown harness '$h' (have: $(echo $all))" >&2; exit 2; }
done

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (Debian: clang-14 libclang-rt-14-dev)" >&2; exit 2; }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S tests/fuzz -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON "${launcher[@]}" >build-fuzz.configure.log 2>&1 ||
  { cat build-fuzz.configure.log >&2; exit 1; }
mv build-fuzz.configure.log build-fuzz/configure.log
cmake --build build-fuzz -j "$(nproc 2>/dev/null || echo 2)" --target "${harnesses[@]/#/fuzz_}"

# Harness-specific input size limits (bytes): CIFAR-10 records are 3073 bytes.
max_len() { case "$1" in cifar10) echo 10000 ;; *) echo 4096 ;; esac; }

mkdir -p build-fuzz/logs
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for h in "${harnesses[@]}"; do
  bin=build-fuzz/bin/fuzz_$h
  seeds=tests/fuzz/corpus/$h
  crashes=tests/fuzz/crashes/$h
  log=build-fuzz/logs/$h.log
  inputs=("$seeds")
  [[ -d $crashes ]] && inputs+=("$crashes")
  if [[ $mode == replay ]]; then
    echo "== $h: replaying ${inputs[*]}"
    if ! "$bin" -runs=0 "${inputs[@]}" >"$log" 2>&1; then failed+=("$h"); tail -40 "$log"; fi
    grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" | tail -1 || true
    continue
  fi
  mkdir -p "build-fuzz/corpus/$h" "$crashes"
  dict=()
  [[ -f tests/fuzz/dict/$h.dict ]] && dict=(-dict="tests/fuzz/dict/$h.dict")
  echo "== $h: fuzzing (${budget[*]}), log $log"
  start=$(date +%s)
  status=0
  "$bin" "${budget[@]}" "${dict[@]}" -max_len="$(max_len "$h")" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$crashes/" -print_final_stats=1 "build-fuzz/corpus/$h" "${inputs[@]}" >"$log" 2>&1 || status=$?
  echo "   $(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1) in $(( $(date +%s) - start )) s"
  if [[ $status -ne 0 ]]; then
    failed+=("$h")
    echo "   FINDING (exit $status): $(ls -t "$crashes" | head -1)"
    grep -m1 -E 'ERROR: |runtime error|fuzz finding|terminate called|uncaught' "$log" || tail -20 "$log"
  else
    "$bin" -merge=1 -max_len="$(max_len "$h")" "$seeds" "build-fuzz/corpus/$h" >"build-fuzz/logs/$h.merge.log" 2>&1
    echo "   corpus: $(ls "$seeds" | wc -l) inputs in $seeds"
  fi
  rmdir "$crashes" 2>/dev/null || true
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: findings in: ${failed[*]} (inputs under tests/fuzz/crashes/)" >&2
  exit 1
fi
echo "fuzz.sh: no findings"
