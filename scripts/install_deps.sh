#!/usr/bin/env bash
# Installs the Debian packages posgrad needs to build and test (run as root), or prints the exact
# apt-get line to run. Usage: scripts/install_deps.sh [--bench]   (--bench adds python3-torch)
set -euo pipefail
packages=(cmake ninja-build g++ make pkg-config libfmt-dev libboost-test-dev libboost-math-dev libyaml-cpp-dev
          nlohmann-json3-dev zlib1g-dev libcli11-dev libcairo2-dev fonts-dejavu-core
          libssl-dev libcurl4-openssl-dev libarchive-dev openssl)
if [[ "${1:-}" == "--bench" ]]; then packages+=(python3-torch python3-numpy libopenblas0-pthread); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then exit 0; fi

if [[ $(id -u) -eq 0 ]]; then
  echo "posgrad: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "posgrad: missing Debian packages. Run:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
