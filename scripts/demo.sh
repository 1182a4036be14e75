#!/usr/bin/env bash
# Builds posgrad and runs the main demo: the count24 attention exercise. Its run folder (config,
# metrics, checkpoint, summary, figure) goes to runs/count24/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh -DPOSGRAD_TESTS=OFF -DPOSGRAD_BENCH=OFF
./build/bin/count24 --out runs/count24/demo --overwrite "$@"
