#!/usr/bin/env bash
# The scripts_order test: the README's two commands, scripts/demo.sh and scripts/test.sh, work in
# either order, each in its own build folder. Runs copies of scripts/{build,demo,test}.sh with
# stand-ins for cmake, ctest, count24 and install_deps.sh that record how they were called, for
# demo-test-demo and test-demo-test, and checks that
#   - both scripts install the Debian packages (call scripts/install_deps.sh): demo.sh only the
#     build packages (--demo), test.sh all of them;
#   - demo.sh configures and builds only build-demo/, from cmake/demo_build.cmake (no CUDA, no
#     suites), builds only count24, then runs that count24 into runs/count24/demo; it never
#     configures or builds build/, so it cannot undo test.sh's configure or rebuild its objects;
#   - test.sh configures build/ with POSGRAD_TESTS=ON and POSGRAD_BENCH=ON last, so they win over
#     its own arguments and over the cache, builds every target, and runs CTest with
#     --no-tests=error, so that "no tests were found" fails, and with one slot per core
#     (--parallel N; the tests' PROCESSORS keep them from oversubscribing the cores);
#   - a script's first run makes its folder with Ninja, a later run keeps the folder's generator.
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
  mkdir -p "$2/bin"
  printf '#!/usr/bin/env bash\necho "count24 $0 $*" >> "$LOG"\n' > "$2/bin/count24"
  chmod +x "$2/bin/count24"
else
  while [[ $1 != -B ]]; do shift; done
  mkdir -p "$2" && touch "$2/CMakeCache.txt"
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

for order in "demo test demo" "test demo test"; do
  repo="$work/${order// /_}"
  mkdir -p "$repo/scripts"
  cp "$src"/scripts/{build,demo,test}.sh "$repo/scripts/"
  # shellcheck disable=SC2016  # the stand-in expands $* and $LOG when it runs
  printf '#!/usr/bin/env bash\necho "install_deps $*" >> "$LOG"\n' > "$repo/scripts/install_deps.sh"
  chmod +x "$repo"/scripts/*.sh
  position=0
  ran=" "
  for script in $order; do
    position=$((position + 1))
    log="$work/${order// /_}.$position.$script.log"
    : > "$log"
    args=()
    [[ $script == test ]] && args=(-DPOSGRAD_TESTS=OFF)  # a user's argument cannot turn the suites off
    if ! (cd "$repo" && env -u CMAKE_GENERATOR LOG="$log" PATH="$work/fake:$PATH" "scripts/$script.sh" "${args[@]}") \
         > "$log.out" 2>&1; then
      echo "FAIL $order: scripts/$script.sh exited with an error:"; cat "$log.out"; failures=$((failures + 1))
    fi
    echo "--- $order, run $position: scripts/$script.sh called:"; sed 's/^/    /' "$log"
    step="$order, run $position: $script.sh"
    check "$step installs the Debian packages" has_line "$log" "^install_deps"
    if [[ $ran == *" $script "* ]]; then
      check "$step keeps the generator of its folder" lacks "$log" "^cmake -S .* -G "
    else
      check "$step makes its folder with Ninja" has_line "$log" "^cmake -S . -B build[-a-z]* -G Ninja"
    fi
    ran+="$script "
    if [[ $script == demo ]]; then
      check "$step configures build-demo/ from cmake/demo_build.cmake" \
        has_line "$log" "^cmake -S . -B build-demo .*-C cmake/demo_build.cmake"
      check "$step never configures or builds build/" lacks "$log" "^cmake .*-B build \|^cmake --build build "
      check "$step sets no POSGRAD_TESTS (demo_build.cmake does)" lacks "$log" "-DPOSGRAD_TESTS"
      check "$step builds only count24" has_line "$log" "^cmake --build build-demo .*--target count24$"
      check "$step installs only the build packages" has_line "$log" "^install_deps --demo$"
      check "$step runs its count24 into runs/count24/demo" \
        has_line "$log" "^count24 ./build-demo/bin/count24 --out runs/count24/demo"
    else
      check "$step installs every package" has_line "$log" "^install_deps *$"
      check "$step configures build/" has_line "$log" "^cmake -S . -B build "
      check "$step configures with POSGRAD_TESTS=ON last" test "$(last_value "$log" POSGRAD_TESTS)" = ON
      check "$step configures with POSGRAD_BENCH=ON last" test "$(last_value "$log" POSGRAD_BENCH)" = ON
      check "$step builds every target" lacks "$log" "^cmake --build .*--target"
      check "$step fails when CTest finds no test" has_line "$log" "^ctest .*--no-tests=error"
      check "$step runs the tests of build/" has_line "$log" "^ctest .*--test-dir build"
      check "$step runs tests side by side, one slot per core" has_line "$log" "^ctest .*--parallel [1-9]"
    fi
  done
done
echo "scripts_order: $failures failure(s)"
[[ $failures -eq 0 ]]
