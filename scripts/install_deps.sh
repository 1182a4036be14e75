#!/usr/bin/env bash
# Installs the Debian packages posgrad needs (run as root), or prints the exact apt-get line to
# run. Usage: scripts/install_deps.sh [--demo | --bench]
#   (none)   everything to build and test: the build packages and the test-only Python ones
#   --demo   only what building the library, the apps and the tests' configure needs (what
#            scripts/demo.sh uses: no Python, so a fresh machine reaches the first result sooner)
#   --bench  everything, plus python3-torch for the benchmarks' twins and tools/ golden scripts
# The tensorboard_reader test reads TensorBoard event files with the tensorboard Python package,
# which Debian 12 does not ship: it comes from PyPI into Debian's python3, pinned to a version whose
# dependencies Debian's packages satisfy (protobuf 3.21, grpcio 1.51), so pip adds only tensorboard
# and tensorboard-data-server and replaces none of Debian's Python modules.
set -euo pipefail
group=${1:-test}
case "$group" in
  test|--demo|--bench) ;;
  *) echo "install_deps.sh: unknown option '$group' (expected --demo or --bench, or nothing)" >&2; exit 2 ;;
esac
packages=(cmake ninja-build g++ make pkg-config libfmt-dev libboost-test-dev libboost-dev libboost-math-dev
          libyaml-cpp-dev nlohmann-json3-dev zlib1g-dev libcli11-dev libcairo2-dev fonts-dejavu-core
          libssl-dev libcurl4-openssl-dev libarchive-dev openssl libprotobuf-dev protobuf-compiler)
if [[ $group != --demo ]]; then
  packages+=(python3-pip python3-protobuf python3-numpy python3-grpcio python3-absl python3-markdown
             python3-werkzeug python3-pil python3-packaging python3-setuptools
             libopenmpi-dev openmpi-bin)  # data parallel (optional to build; its tests run under mpirun)
fi
if [[ $group == --bench ]]; then packages+=(python3-torch libopenblas0-pthread); fi
tensorboard_version=2.19.0

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
pip_line=(/usr/bin/python3 -m pip install --break-system-packages "tensorboard==$tensorboard_version")
need_tensorboard=0
if [[ $group != --demo ]]; then
  /usr/bin/python3 -c 'import tensorboard' 2>/dev/null || need_tensorboard=1
fi
if [[ ${#missing[@]} -eq 0 && $need_tensorboard -eq 0 ]]; then exit 0; fi

if [[ $(id -u) -eq 0 ]]; then
  if [[ ${#missing[@]} -gt 0 ]]; then
    echo "posgrad: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  if [[ $need_tensorboard -eq 1 ]]; then
    echo "posgrad: installing tensorboard $tensorboard_version (PyPI) for the tensorboard_reader test"
    "${pip_line[@]}" --root-user-action=ignore --quiet
  fi
else
  echo "posgrad: missing packages. Run:" >&2
  [[ ${#missing[@]} -eq 0 ]] || echo "  sudo apt-get install -y ${missing[*]}" >&2
  [[ $need_tensorboard -eq 0 ]] || echo "  sudo ${pip_line[*]}" >&2
  exit 1
fi
