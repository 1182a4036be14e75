#!/usr/bin/env bash
# Data parallel on one machine: 1 process x T threads against T processes x 1 thread (mpirun),
# for the posattn quick preset and charlm's CPU preset, repeated R times interleaved; prints per
# run and the medians: optimizer steps per second (training time only), the all-reduce time per
# step and the gradient bytes each rank all-reduces per step (from the runs' summary.json).
# Usage: bench/data_parallel.sh [R (default 3)] [T (default 2)]   (needs a build with MPI, the
# posattn and charlm programs in build/bin and CIFAR-10 plus Tiny Shakespeare in the data folder)
# Prints the load average before and after: on a shared machine the numbers move with it.
#
# Deliberately has no PyTorch twin: the comparison is posgrad with itself across rank counts.
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-3}
threads=${2:-2}
bin=build/bin
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mpirun=(mpirun --allow-run-as-root --oversubscribe -np "$threads")

posattn_args=(--config configs/posattn/quick/2d_span.yaml -Ddata.small_dataset=5000 -Dtrain.max_steps=30)
charlm_args=(train --config configs/charlm/shakespeare_cpu.yaml -Dtrain.steps=20 -Dtrain.warmup=5
             -Dtrain.eval_every=1000 -Dtrain.eval_blocks=1 -Dtrain.checkpoint_every=1000 -Ddata.val_fraction=0.01)

# summary.json -> "steps_per_s allreduce_ms_per_step allreduce_kib_per_step"
posattn_numbers() {
  /usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1])); b = int(sys.argv[2])
step = s["time_per_sample_s"] * b
d = s["data_parallel"]
ms, kib = 1e3 * d["allreduce_seconds_per_step"], d["allreduce_bytes_per_step"] / 1024
print(f"{1/step:.3f} {ms:.2f} {kib:.0f}")' "$1" 40
}
charlm_numbers() {
  /usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1])); d = s["data_parallel"]
rate, ms, kib = s["steps"] / s["train_seconds"], 1e3 * d["allreduce_seconds_per_step"], d["allreduce_bytes_per_step"] / 1024
print(f"{rate:.3f} {ms:.2f} {kib:.0f}")' "$1"
}

echo "load before: $(uptime)"
for r in $(seq 1 "$repeats"); do
  for app in posattn charlm; do
    args_name="${app}_args[@]"
    OMP_NUM_THREADS=$threads "$bin/$app" "${!args_name}" --out "$scratch/$app-1x$threads-$r" > "$scratch/log" 2>&1
    echo "$app 1x$threads $("${app}_numbers" "$scratch/$app-1x$threads-$r/summary.json")"
    OMP_NUM_THREADS=1 "${mpirun[@]}" "$bin/$app" "${!args_name}" --out "$scratch/$app-${threads}x1-$r" > "$scratch/log" 2>&1
    echo "$app ${threads}x1 $("${app}_numbers" "$scratch/$app-${threads}x1-$r/summary.json")"
  done
done | tee "$scratch/runs.txt"
echo "load after: $(uptime)"
echo "medians (app, layout, steps/s, and the all-reduce ms/step and KiB/step per rank of the run with the median steps/s):"
sort -k1,2 -k3,3g "$scratch/runs.txt" | awk '{k=$1" "$2; n[k]++; s[k,n[k]]=$3; a[k,n[k]]=$4; b[k]=$5}
  END {for (k in n) {m=int((n[k]+1)/2); print k, s[k,m], a[k,m], b[k]}}' | sort
