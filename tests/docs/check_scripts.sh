#!/usr/bin/env bash
# The scripts_order test: the README's two commands, scripts/demo.sh and scripts/test.sh, work in
# either order in one build folder. Runs copies of scripts/{build,demo,test}.sh with stand-ins
# for cmake, ctest, count24 and install_deps.sh that record how they were called, for
# demo-then-test and test-then-demo, and checks that
#   - both scripts install the Debian packages (call scripts/install_deps.sh): demo.sh only the
#     build packages (--demo), test.sh all of them;
#   - demo.sh builds only count24 and passes no option that would turn tests or benchmarks off
#     (so it never undoes test.sh's configure), then runs count24 into runs/count24/demo;
#   - test.sh configures with POSGRAD_TESTS=ON and POSGRAD_BENCH=ON last, so they win over its
#     own arguments and over the cache, builds every target, and runs CTest with
#     --no-tests=error, so that "no tests were found" fails;
#   - the first script makes the build folder with Ninja, the second keeps its generator.
# It does not build anything: the clean-clone runs of both orders are done by hand (or CI).
# Usage: check_scripts.sh SOURCE_DIR
set -uo pipefail
src=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # check DESCRIPTION COMMAND...: the command must succeed
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; failures=$((failures + 1)); fi
}

mkdir -p "$work/fake"
cat > "$work/fake/cmake" <<'EOF'
#!/usr/bin/env bash
echo "cmake $*" >> "$LOG"
if [[ $1 == --build ]]; then
  mkdir -p build/bin
  printf '#!/usr/bin/env bash\necho "count24 $*" >> "$LOG"\n' > build/bin/count24
  chmod +x build/bin/count24
else
  mkdir -p build && touch build/CMakeCache.txt
fi
EOF
cat > "$work/fake/ctest" <<'EOF'
#!/usr/bin/env bash
echo "ctest $*" >> "$LOG"
EOF
chmod +x "$work/fake/cmake" "$work/fake/ctest"

# The last value given to -D$2 on the configure line (first line starting "cmake -S") of log $1.
last_value() { grep -m1 '^cmake -S' "$1" | grep -o -- "-D$2=[A-Za-z]*" | tail -n 1 | cut -d= -f2; }
has_line() { grep -q -- "$2" "$1"; }
lacks() { ! grep -q -- "$2" "$1"; }

for order in "demo test" "test demo"; do
  repo="$work/${order// /_}"
  mkdir -p "$repo/scripts"
  cp "$src"/scripts/{build,demo,test}.sh "$repo/scripts/"
  # shellcheck disable=SC2016  # the stand-in expands $* and $LOG when it runs
  printf '#!/usr/bin/env bash\necho "install_deps $*" >> "$LOG"\n' > "$repo/scripts/install_deps.sh"
  chmod +x "$repo"/scripts/*.sh
  position=0
  for script in $order; do
    position=$((position + 1))
    log="$work/${order// /_}.$script.log"
    : > "$log"
    args=()
    [[ $script == test ]] && args=(-DPOSGRAD_TESTS=OFF)  # a user's argument cannot turn the suites off
    if ! (cd "$repo" && env -u CMAKE_GENERATOR LOG="$log" PATH="$work/fake:$PATH" "scripts/$script.sh" "${args[@]}") \
         > "$log.out" 2>&1; then
      echo "FAIL $order: scripts/$script.sh exited with an error:"; cat "$log.out"; failures=$((failures + 1))
    fi
    echo "--- $order: scripts/$script.sh called:"; sed 's/^/    /' "$log"
    check "$order: $script.sh installs the Debian packages" has_line "$log" "^install_deps"
    if [[ $position -eq 1 ]]; then
      check "$order: $script.sh makes build/ with Ninja" has_line "$log" "^cmake -S . -B build -G Ninja"
    else
      check "$order: $script.sh keeps the generator of build/" lacks "$log" "^cmake -S .* -G "
    fi
    if [[ $script == demo ]]; then
      check "$order: demo.sh sets no POSGRAD_TESTS" lacks "$log" "-DPOSGRAD_TESTS"
      check "$order: demo.sh sets no POSGRAD_BENCH" lacks "$log" "-DPOSGRAD_BENCH"
      check "$order: demo.sh builds only count24" has_line "$log" "^cmake --build build .*--target count24$"
      check "$order: demo.sh installs only the build packages" has_line "$log" "^install_deps --demo$"
      check "$order: demo.sh runs count24 into runs/count24/demo" has_line "$log" "^count24 --out runs/count24/demo"
    else
      check "$order: test.sh installs every package" has_line "$log" "^install_deps *$"
      check "$order: test.sh configures with POSGRAD_TESTS=ON last" test "$(last_value "$log" POSGRAD_TESTS)" = ON
      check "$order: test.sh configures with POSGRAD_BENCH=ON last" test "$(last_value "$log" POSGRAD_BENCH)" = ON
      check "$order: test.sh builds every target" lacks "$log" "^cmake --build .*--target"
      check "$order: test.sh fails when CTest finds no test" has_line "$log" "^ctest .*--no-tests=error"
      check "$order: test.sh runs the tests of build/" has_line "$log" "^ctest .*--test-dir build"
    fi
  done
done
echo "scripts_order: $failures failure(s)"
[[ $failures -eq 0 ]]
