#!/usr/bin/env bash
# Data parallel on one machine: 1 process x T threads against T processes x 1 thread (mpirun),
# the latter with the all-reduce overlapped with the backward (Tx1, the default) and after it
# (Tx1-serial: POSGRAD_GRADIENT_OVERLAP=0), for the posattn quick preset and charlm's CPU preset,
# repeated R times interleaved; prints per run and the medians: optimizer steps per second
# (training time only), the time per step waiting for the averaged gradients after the backward,
# the time per step the overlap's hooks took inside the backward, and the gradient bytes each rank
# all-reduces per step (from the runs' summary.json).
# Usage: bench/data_parallel.sh [R (default 3)] [T (default 2)] [overlap]   (overlap: only the
# two Tx1 layouts, overlapped and serial, which one busy machine can compare; needs a build with MPI, the
# posattn and charlm programs in build/bin and CIFAR-10 plus Tiny Shakespeare in the data folder)
# Prints the load average before and after: on a shared machine the numbers move with it.
#
# Deliberately has no PyTorch twin: the comparison is posgrad with itself across rank counts.
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-3}
threads=${2:-2}
only_overlap=false
[[ ${3:-} == overlap ]] && only_overlap=true
bin=build/bin
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mpirun=(mpirun --allow-run-as-root --oversubscribe -np "$threads")

posattn_args=(--config configs/posattn/quick/2d_span.yaml -Ddata.small_dataset=5000 -Dtrain.max_steps=30)
charlm_args=(train --config configs/charlm/shakespeare_cpu.yaml -Dtrain.steps=20 -Dtrain.warmup=5
             -Dtrain.eval_every=1000 -Dtrain.eval_blocks=1 -Dtrain.checkpoint_every=1000 -Ddata.val_fraction=0.01)

# summary.json -> "steps_per_s wait_ms_per_step in_backward_ms_per_step allreduce_kib_per_step"
# (posattn: steps/s from its time per sample at the global batch 40; charlm: steps / train_seconds)
numbers() {
  /usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[2]))
rate = 1 / (s["time_per_sample_s"] * 40) if sys.argv[1] == "posattn" else s["steps"] / s["train_seconds"]
d = s["data_parallel"]
wait, inside = 1e3 * d["allreduce_seconds_per_step"], 1e3 * d.get("allreduce_seconds_in_backward_per_step", 0)
print("%.3f %.2f %.2f %.0f" % (rate, wait, inside, d["allreduce_bytes_per_step"] / 1024))' "$1" "$2"
}

echo "load before: $(uptime)"
for r in $(seq 1 "$repeats"); do
  for app in posattn charlm; do
    args_name="${app}_args[@]"
    if ! $only_overlap; then
      OMP_NUM_THREADS=$threads "$bin/$app" "${!args_name}" --out "$scratch/$app-1x$threads-$r" > "$scratch/log" 2>&1
      echo "$app 1x$threads $(numbers "$app" "$scratch/$app-1x$threads-$r/summary.json")"
    fi
    OMP_NUM_THREADS=1 "${mpirun[@]}" "$bin/$app" "${!args_name}" --out "$scratch/$app-${threads}x1-$r" > "$scratch/log" 2>&1
    echo "$app ${threads}x1 $(numbers "$app" "$scratch/$app-${threads}x1-$r/summary.json")"
    OMP_NUM_THREADS=1 POSGRAD_GRADIENT_OVERLAP=0 "${mpirun[@]}" -x POSGRAD_GRADIENT_OVERLAP "$bin/$app" "${!args_name}" \
      --out "$scratch/$app-${threads}x1-serial-$r" > "$scratch/log" 2>&1
    echo "$app ${threads}x1-serial $(numbers "$app" "$scratch/$app-${threads}x1-serial-$r/summary.json")"
  done
done | tee "$scratch/runs.txt"
echo "load after: $(uptime)"
echo "medians (app, layout, steps/s; the wait ms/step after the backward, the ms/step inside it and the KiB/step per rank of the run with the median steps/s):"
sort -k1,2 -k3,3g "$scratch/runs.txt" | awk '{k=$1" "$2; n[k]++; s[k,n[k]]=$3; a[k,n[k]]=$4; h[k,n[k]]=$5; b[k]=$6}
  END {for (k in n) {m=int((n[k]+1)/2); print k, s[k,m], a[k,m], h[k,m], b[k]}}' | sort
