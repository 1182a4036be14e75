#!/usr/bin/env bash
# Runs on a lent GPU machine, in a checkout that carries the bundle of scripts/gpu_bundle.sh
# (.gpu/): the test suites with their CUDA cases (parity with the CPU, gradcheck on the GPU,
# golden PyTorch files on CUDA, count24 on the GPU), then the GPU benchmarks against their
# PyTorch twins (python3 with torch from PATH). Logs go to $OUT (the device tool's folder) or
# gpu-results/, at most 8 files; the summary is printed last and kept in summary.txt.
# Usage: scripts/gpu_check.sh [tests|bench|all]      (default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
out=${OUT:-$PWD/gpu-results}
mkdir -p "$out"
[[ -d .gpu/bin ]] || { echo "gpu_check: no .gpu/ here: run scripts/gpu_bundle.sh and carry .gpu" >&2; exit 2; }

# The tests find golden files and the count24 binary under the paths they were built with.
src=$(cat .gpu/source_dir)
if [[ "$src" != "$PWD" && ! -e "$src" ]]; then
  mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"
fi
if [[ ! -e "$src/build-gpu/bin" ]]; then
  mkdir -p "$src/build-gpu" && ln -s "$PWD/.gpu/bin" "$src/build-gpu/bin"
fi

# cuBLAS and the CUDA runtime come from this machine: found by the loader, or searched for.
original_ld_path=${LD_LIBRARY_PATH-}
ld_path=$original_ld_path
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
  if ! LD_LIBRARY_PATH=$ld_path ldd .gpu/bin/test_tensor | grep -q "$lib => /"; then
    found=$(find /usr/local /usr/lib /opt -name "$lib" 2>/dev/null | head -1)
    [[ -n "$found" ]] && ld_path="$(dirname "$found")${ld_path:+:$ld_path}"
  fi
done
# The machine's own C++ runtime unless it is older than the one the bundle was built with.
if LD_LIBRARY_PATH=$ld_path ldd .gpu/bin/test_tensor 2>&1 | grep -q "version .* not found"; then
  ld_path="$PWD/.gpu/fallback${ld_path:+:$ld_path}"
fi
missing=$(LD_LIBRARY_PATH=$ld_path ldd .gpu/bin/test_tensor 2>&1 | grep "not found")
[[ -z "$missing" ]] || { echo "gpu_check: libraries not found:"; echo "$missing"; exit 2; }
# PyTorch twins run with this machine's own environment (not the bundle's library path).
python=$(command -v python3)
twin_python="env LD_LIBRARY_PATH=$original_ld_path $python"

summary=()
{
  echo "gpu_check $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || true
  cat .gpu/build_info
} > "$out/summary.txt"

if [[ "$what" == all || "$what" == tests ]]; then
  for suite in tensor autograd nn attention apps; do
    log="$out/test_$suite.log"
    start=$SECONDS
    env LD_LIBRARY_PATH="$ld_path" OMP_NUM_THREADS=4 ".gpu/bin/test_$suite" \
      --log_level=test_suite --report_level=short > "$log" 2>&1
    rc=$?
    counts=$(grep -E "test cases? out of" "$log" | sed 's/^ *//' | paste -sd ';' -)
    summary+=("test_$suite: exit $rc in $((SECONDS - start)) s; $counts")
    if [[ $rc -ne 0 ]]; then
      while read -r line; do summary+=("    $line"); done < <(grep -E "error: |fatal error|exception" "$log" | head -15)
    fi
  done
fi

if [[ "$what" == all || "$what" == bench ]]; then
  env LD_LIBRARY_PATH="$ld_path" POSGRAD_PYTHON="$twin_python" .gpu/bin/bench_gpu_matmul \
    --sizes 1024,2048,4096,8192 --reps 30 > "$out/bench_gpu_matmul.txt" 2>&1
  summary+=("bench_gpu_matmul: exit $?")
  while read -r line; do summary+=("    $line"); done < "$out/bench_gpu_matmul.txt"
  : > "$out/bench_transformer.txt"
  for run in 1 2 3; do
    env LD_LIBRARY_PATH="$ld_path" POSGRAD_PYTHON="$twin_python" OMP_NUM_THREADS=4 \
      .gpu/bin/bench_transformer --device cuda --batch 64 --tokens 512 --width 256 --heads 8 \
      --ff 1024 --layers 6 --reps 10 --warmup 3 >> "$out/bench_transformer.txt" 2>&1
    summary+=("bench_transformer run $run: exit $?")
  done
  while read -r line; do summary+=("    $line"); done < <(grep -E "median|ratio|unavailable|bench_transformer:" "$out/bench_transformer.txt")
fi

printf '%s\n' "${summary[@]}" >> "$out/summary.txt"
cat "$out/summary.txt"
