#!/usr/bin/env bash
# Builds what the main demo needs and runs it: the count24 attention exercise. Its run folder
# (config, metrics, checkpoint, summary, figure) goes to runs/count24/demo. It shares ./build with
# scripts/test.sh: it builds only the count24 target and turns no option off, so either script may
# run first. It installs only the packages the build needs (no test-only Python packages). Extra arguments go to count24 (e.g. -Dtrain.steps=2000).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh --deps demo --target count24
./build/bin/count24 --out runs/count24/demo --overwrite "$@"
