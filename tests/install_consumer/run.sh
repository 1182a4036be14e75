#!/usr/bin/env bash
# install_consumer test: installs the build tree into a temporary prefix, then configures,
# builds and runs tests/install_consumer against it with find_package(posgrad).
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log"
cmake -S "$source_dir" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
cmake --build "$work/build" > "$work/build.log"
"$work/build/consumer"
