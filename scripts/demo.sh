#!/usr/bin/env bash
# Builds what the main demo needs and runs it: the count24 attention exercise. Its run folder
# (config, metrics, checkpoint, summary, figure) goes to runs/count24/demo. It builds in a folder
# of its own, build-demo/, configured by cmake/demo_build.cmake: only the count24 target and what
# it links (the core library and the app kit), no CUDA object, no MPI, no test or benchmark. It
# never touches build/ (scripts/test.sh's), so either script may run first and neither rebuilds
# the other's objects. It installs only the packages the build needs (no test-only Python
# packages). Extra arguments go to count24 (e.g. -Dtrain.steps=2000).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh --deps demo --dir build-demo --target count24 -C cmake/demo_build.cmake
# Idle OpenMP threads sleep instead of spinning (unless the caller chose): on 2 busy cores the
# spinning made the run 143 s instead of 6 (docs/design.md).
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} ./build-demo/bin/count24 --out runs/count24/demo --overwrite "$@"
