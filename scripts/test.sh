#!/usr/bin/env bash
# Builds posgrad and runs every test suite through CTest. This is the README's test command and
# what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh "$@"
cd build
ctest --output-on-failure --timeout 1800
