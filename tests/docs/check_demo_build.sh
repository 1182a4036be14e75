#!/usr/bin/env bash
# The demo_build_size test: what scripts/demo.sh compiles (the count24 target) holds no source of
# attention/: count24 links posgrad_core alone, so a fresh clone's demo compiles 80 of the 115
# objects it compiled when count24 linked the whole library. It reads the build graph of a Ninja
# build folder (ninja -t commands); with another generator it is skipped (exit 77).
# Usage: check_demo_build.sh BUILD_DIR
set -uo pipefail
build=$1
if [[ ! -f $build/build.ninja ]]; then
  echo "skipped: $build is not a Ninja build folder (the check reads ninja's build graph)"
  exit 77
fi
commands=$(ninja -C "$build" -t commands count24) || { echo "FAIL cannot read the build graph of count24"; exit 1; }
compiles=$(grep -c -- ' -c ' <<< "$commands")
attention=$(grep -- ' -c ' <<< "$commands" | grep -c -- '/attention/')
echo "count24 needs $compiles compile commands, $attention of them in attention/"
if ((attention > 0)); then
  echo "FAIL count24 (scripts/demo.sh) compiles attention/ sources:"
  grep -- ' -c ' <<< "$commands" | grep -o -- '[^ ]*/attention/[^ ]*\.cpp' | sort -u | head -n 5 | sed 's/^/    /'
  exit 1
fi
